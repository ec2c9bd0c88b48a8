package promserver

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promcfg"
)

// What prometheus-operator's layout of a PrometheusAgent in DaemonSet
// mode (OperatorsAgentDaemonSetLayout) renders differently from the
// StatefulSet mode's (pkg/prometheus/agent/daemonset.go, operator.go at
// v0.93.1): one DaemonSet, prom-agent-<name>, instead of the StatefulSets
// of the shards, with the StatefulSet's metadata and the agent's selector
// labels without the shard's; no governing Service, no claim template; the
// config-reloaders get NODE_NAME from the downward API (spec.nodeName),
// which they expand in the configuration, whose PodMonitor jobs discover
// their node's pods only (promcfg.Input.DaemonSet). The data volume is an
// emptyDir, where the reloaders keep their state (a pod's name is not
// known before it is created: no state Secret); their Role patches every
// pod of the namespace, for the same reason. Switching modes deletes the
// other mode's workload.

// RenderDaemonSet renders the DaemonSet of server, an agent in DaemonSet
// mode. Its pod template carries AnnotationInputHash. Owner references are
// not set.
func RenderDaemonSet(server Target, opts PodOptions) *appsv1.DaemonSet {
	template, _ := podTemplate(server, opts, 0)
	ds := &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: ShardName(server, 0), Namespace: server.Namespace},
		Spec: appsv1.DaemonSetSpec{
			Selector:        &metav1.LabelSelector{MatchLabels: SelectorLabels(server)},
			MinReadySeconds: ptr.Deref(server.Spec.MinReadySeconds, 0),
			Template:        template,
		},
	}
	ds.Labels, ds.Annotations = operatorWorkloadMetadata(server, ds.Spec.Selector.MatchLabels)
	return ds
}

// reloaderEnv is the environment of the reloaders of a shard's pods:
// SHARD, which they expand in the configuration, and in DaemonSet mode
// NODE_NAME before it, as prometheus-operator sets them.
func reloaderEnv(server Target, shard int) []corev1.EnvVar {
	env := []corev1.EnvVar{{Name: "SHARD", Value: strconv.Itoa(shard)}}
	if server.Layout.DaemonSet() {
		env = append([]corev1.EnvVar{nodeNameEnv()}, env...)
	}
	return env
}

// nodeNameEnv is the config-reloaders' NODE_NAME in DaemonSet mode.
func nodeNameEnv() corev1.EnvVar {
	return corev1.EnvVar{Name: promcfg.NodeNameEnv, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}}}
}

// writeDaemonSet writes the DaemonSet of objs, server's in DaemonSet
// mode, with the selector of the live one (which cannot change), then
// deletes server's StatefulSets (those of the StatefulSet mode) and its
// state Secrets, which no pod of a DaemonSet reads.
func (r *Reconciler) writeDaemonSet(ctx context.Context, server Target, own kube.Owner, desired *appsv1.DaemonSet) error {
	live, err := r.liveDaemonSet(ctx, client.ObjectKeyFromObject(desired), true)
	if err != nil {
		return err
	}
	if live != nil && live.Spec.Selector != nil {
		desired.Spec.Selector = live.Spec.Selector.DeepCopy()
		maps.Copy(desired.Spec.Template.Labels, live.Spec.Selector.MatchLabels)
	}
	if _, err := r.Writer.ApplyDaemonSet(ctx, own, desired); err != nil {
		return err
	}
	if err := r.deleteExtraShards(ctx, server, nil); err != nil {
		return err
	}
	return r.RetireStateSecrets(ctx, server, nil)
}

// deleteDaemonSet deletes the DaemonSet of server, an agent in StatefulSet
// mode, when server controls it: the DaemonSet mode's. A server that is no
// agent has none.
func (r *Reconciler) deleteDaemonSet(ctx context.Context, server Target) error {
	if !server.Layout.Agent() {
		return nil
	}
	ds, err := r.liveDaemonSet(ctx, types.NamespacedName{Namespace: server.Namespace, Name: ShardName(server, 0)}, false)
	if err != nil || ds == nil || !metav1.IsControlledBy(ds, server) || ds.DeletionTimestamp != nil {
		return err
	}
	if err := r.Writer.Delete(ctx, "DaemonSet", ds); err != nil {
		return err
	}
	r.Logger.Info("deleted the DaemonSet of an agent now in StatefulSet mode", "server", client.ObjectKeyFromObject(server), "daemonset", ds.Name)
	return nil
}

// liveDaemonSet reads the DaemonSet key names from the cache, or, with
// fromAPI, from the API server when the cache does not hold it (one
// prometheus-operator wrote, not labelled by the controller yet); nil when
// there is none.
func (r *Reconciler) liveDaemonSet(ctx context.Context, key types.NamespacedName, fromAPI bool) (*appsv1.DaemonSet, error) {
	var ds appsv1.DaemonSet
	err := r.Client.Get(ctx, key, &ds)
	if apierrors.IsNotFound(err) && fromAPI {
		err = r.reader.Get(ctx, key, &ds)
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get DaemonSet %s: %w", key, err)
	}
	return &ds, nil
}

// LiveDaemonSet returns the live DaemonSet of server, an agent in
// DaemonSet mode, from the cache; nil when there is none.
func (r *Reconciler) LiveDaemonSet(ctx context.Context, server Target) (*appsv1.DaemonSet, error) {
	return r.liveDaemonSet(ctx, types.NamespacedName{Namespace: server.Namespace, Name: ShardName(server, 0)}, false)
}
