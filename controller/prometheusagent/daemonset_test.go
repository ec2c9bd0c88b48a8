package prometheusagent

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/operator"
)

// condition returns the condition typ of the agent key names, nil while
// it has none.
func condition(c *assert.CollectT, cl client.Client, key client.ObjectKey, typ monitoringv1.ConditionType) (*monitoringv1.Condition, *monitoringv1alpha1.PrometheusAgent) {
	var a monitoringv1alpha1.PrometheusAgent
	if !assert.NoError(c, cl.Get(context.Background(), key, &a)) {
		return nil, nil
	}
	i := slices.IndexFunc(a.Status.Conditions, func(x monitoringv1.Condition) bool { return x.Type == typ })
	if !assert.GreaterOrEqual(c, i, 0, "a %s condition", typ) {
		return nil, &a
	}
	return &a.Status.Conditions[i], &a
}

// waitReconciled waits for the agent key names to be Reconciled with
// status and reason at its generation.
func waitReconciled(t *testing.T, cl client.Client, key client.ObjectKey, status monitoringv1.ConditionStatus, reason string) monitoringv1.Condition {
	t.Helper()
	var got monitoringv1.Condition
	eventually(t, func(c *assert.CollectT) {
		cond, a := condition(c, cl, key, monitoringv1.Reconciled)
		if cond == nil {
			return
		}
		assert.Equal(c, status, cond.Status, cond.Message)
		assert.Equal(c, reason, cond.Reason, cond.Message)
		assert.Equal(c, a.Generation, cond.ObservedGeneration)
		got = *cond
	}, "Reconciled %s %s", status, reason)
	return got
}

// reconcileErrors is the PrometheusAgent kind's
// podreload_controller_reconcile_errors_total in reg.
func reconcileErrors(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "podreload_controller_reconcile_errors_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == monitoringv1alpha1.PrometheusAgentsKind {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatal("no podreload_controller_reconcile_errors_total of PrometheusAgent")
	return 0
}

// withoutDaemonSetRules removes from the live PrometheusAgent CRD the
// rules prometheus-operator added in v0.88.0 that refuse fields in
// DaemonSet mode: the CRD of an older prometheus-operator, which lets such
// an agent through.
func withoutDaemonSetRules(t *testing.T, c client.Client) {
	t.Helper()
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	crd.SetName("prometheusagents.monitoring.coreos.com")
	controlplane.Edit(t, c, crd, func(crd *unstructured.Unstructured) {
		versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
		require.NoError(t, err)
		for i, v := range versions {
			path := []string{"schema", "openAPIV3Schema", "properties", "spec", "x-kubernetes-validations"}
			rules, found, err := unstructured.NestedSlice(v.(map[string]any), path...)
			require.NoError(t, err)
			if !found {
				continue
			}
			kept := slices.DeleteFunc(rules, func(r any) bool {
				return strings.Contains(r.(map[string]any)["message"].(string), "when mode is DaemonSet")
			})
			require.Less(t, len(kept), len(rules), "the CRD's DaemonSet rules")
			require.NoError(t, unstructured.SetNestedSlice(v.(map[string]any), kept, path...))
			versions[i] = v
		}
		require.NoError(t, unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"))
	})
}

// deployRBAC creates the ClusterRole and ClusterRoleBinding of
// deploy/controller-rbac.yaml, as they are there, and returns cfg
// impersonating the service account the binding grants them to: the
// controller's, with exactly the permissions deploy/ gives it.
func deployRBAC(t *testing.T, c client.Client, cfg *rest.Config) *rest.Config {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "deploy", "controller-rbac.yaml"))
	require.NoError(t, err)
	defer f.Close()
	dec := k8syaml.NewYAMLOrJSONDecoder(f, 4096)
	var role *rbacv1.ClusterRole
	var binding *rbacv1.ClusterRoleBinding
	for {
		var u unstructured.Unstructured
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		switch u.GetKind() {
		case "ClusterRole":
			role = new(rbacv1.ClusterRole)
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, role))
		case "ClusterRoleBinding":
			binding = new(rbacv1.ClusterRoleBinding)
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, binding))
		}
	}
	require.NotNil(t, role, "no ClusterRole in deploy/controller-rbac.yaml")
	require.NotNil(t, binding, "no ClusterRoleBinding in deploy/controller-rbac.yaml")
	require.Len(t, binding.Subjects, 1)
	sa := binding.Subjects[0]
	require.NoError(t, c.Create(t.Context(), role))
	require.NoError(t, c.Create(t.Context(), binding))
	as := rest.CopyConfig(cfg)
	as.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + sa.Namespace + ":" + sa.Name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + sa.Namespace, "system:authenticated"},
	}
	return as
}

// TestDaemonSetInvalidSpec runs the controller with exactly the
// ClusterRole of deploy/ on an agent in DaemonSet mode taken over, under
// the PrometheusAgent CRD of a prometheus-operator before v0.88.0, which
// lets the fields prometheus-operator refuses in that mode through: given
// one (with a pod label besides), the agent is Reconciled False,
// InvalidSpec, with prometheus-operator's message, a Warning Event and a
// reconcile error counted, and its DaemonSet stays as it was; the field
// removed, the DaemonSet gets the label.
func TestDaemonSetInvalidSpec(t *testing.T) {
	env := controlplane.Start(t, filepath.Join("..", "..", "deploy", "crds"))
	c := controlplane.NewClient(t, env.Config, promserver.AddToScheme)
	ctx := t.Context()
	withoutDaemonSetRules(t, c)
	ns := "agent-invalid"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	reg := start(t, deployRBAC(t, c, env.Config))

	a := daemonSetAgent(ns, "edge")
	a.Annotations = map[string]string{takeover.AnnotationControllerID: "podreload"}
	require.NoError(t, c.Create(ctx, a))
	key := client.ObjectKeyFromObject(a)
	waitReconciled(t, c, key, monitoringv1.ConditionTrue, "Reconciled")
	dsKey := client.ObjectKey{Namespace: ns, Name: "prom-agent-edge"}
	var before appsv1.DaemonSet
	require.NoError(t, c.Get(ctx, dsKey, &before))
	require.Equal(t, "podreload:test", container(t, &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Template: before.Spec.Template}}, "config-reloader").Image)
	errorsBefore := reconcileErrors(t, reg)

	// Through the API server: the CRD no longer refuses it.
	eventually(t, func(ct *assert.CollectT) {
		var live monitoringv1alpha1.PrometheusAgent
		if !assert.NoError(ct, c.Get(ctx, key, &live)) {
			return
		}
		live.Spec.Replicas = ptr.To[int32](2)
		live.Spec.ServiceMonitorSelector = &metav1.LabelSelector{}
		live.Spec.PodMetadata = &monitoringv1.EmbeddedObjectMetadata{Labels: map[string]string{"tier": "edge"}}
		assert.NoError(ct, c.Update(ctx, &live))
	}, "the agent updated with fields the older CRD lets through")
	cond := waitReconciled(t, c, key, monitoringv1.ConditionFalse, "InvalidSpec")
	require.Equal(t, "refused by prometheus-operator's validation (its CRD's rules): "+
		"spec.replicas: replicas cannot be set when mode is DaemonSet; "+
		"spec.serviceMonitorSelector: serviceMonitorSelector cannot be set when mode is DaemonSet", cond.Message)
	eventually(t, func(ct *assert.CollectT) {
		var events corev1.EventList
		if assert.NoError(ct, c.List(ctx, &events, client.InNamespace(ns))) {
			assert.True(ct, slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
				return e.Reason == "InvalidSpec" && e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == "edge" && e.InvolvedObject.Kind == "PrometheusAgent"
			}), "an InvalidSpec Event")
		}
	})
	require.Greater(t, reconcileErrors(t, reg), errorsBefore, "a reconcile error counted")
	var after appsv1.DaemonSet
	require.NoError(t, c.Get(ctx, dsKey, &after))
	require.Equal(t, before.ResourceVersion, after.ResourceVersion, "the DaemonSet as it was")
	require.NotContains(t, after.Spec.Template.Labels, "tier")

	// Fixed: rendered again.
	controlplane.Edit(t, c, a, func(a *monitoringv1alpha1.PrometheusAgent) {
		a.Spec.Replicas, a.Spec.ServiceMonitorSelector = nil, nil
	})
	waitReconciled(t, c, key, monitoringv1.ConditionTrue, "Reconciled")
	eventually(t, func(ct *assert.CollectT) {
		var ds appsv1.DaemonSet
		if assert.NoError(ct, c.Get(ctx, dsKey, &ds)) {
			assert.Equal(ct, "edge", ds.Spec.Template.Labels["tier"])
		}
	}, "the DaemonSet rendered from the fixed spec")
}

// TestDaemonSetModeSwitch: an agent taken over switched from StatefulSet
// to DaemonSet mode gets its DaemonSet, and its StatefulSet and the
// reloaders' state Secret are deleted; switched back, its StatefulSet, and
// the DaemonSet is deleted. In DaemonSet mode, its status has one shard,
// Available False without a pod (no kubelet), and ConfigApplied counts the
// reports of the DaemonSet's pods, named as a DaemonSet names them.
func TestDaemonSetModeSwitch(t *testing.T) {
	env := controlplane.Start(t, filepath.Join("..", "..", "deploy", "crds"))
	c := controlplane.NewClient(t, env.Config, promserver.AddToScheme)
	ctx := t.Context()
	ns := "agent-switch"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	start(t, env.Config)

	a := daemonSetAgent(ns, "edge")
	a.Spec.Mode = nil
	a.Annotations = map[string]string{takeover.AnnotationControllerID: "podreload"}
	require.NoError(t, c.Create(ctx, a))
	key := client.ObjectKeyFromObject(a)
	name := client.ObjectKey{Namespace: ns, Name: "prom-agent-edge"}
	state := client.ObjectKey{Namespace: ns, Name: "prom-agent-edge-0-reloader-state"}
	gone := func(ct *assert.CollectT, obj client.Object, key client.ObjectKey) {
		err := c.Get(ctx, key, obj)
		assert.True(ct, apierrors.IsNotFound(err), "%T %s: %v", obj, key, err)
	}
	eventually(t, func(ct *assert.CollectT) {
		assert.NoError(ct, c.Get(ctx, name, &appsv1.StatefulSet{}))
		assert.NoError(ct, c.Get(ctx, state, &corev1.Secret{}))
	}, "StatefulSet mode")

	controlplane.Edit(t, c, a, func(a *monitoringv1alpha1.PrometheusAgent) {
		a.Spec.Mode = ptr.To(monitoringv1alpha1.DaemonSetPrometheusAgentMode)
	})
	eventually(t, func(ct *assert.CollectT) {
		assert.NoError(ct, c.Get(ctx, name, &appsv1.DaemonSet{}))
		gone(ct, &appsv1.StatefulSet{}, name)
		gone(ct, &corev1.Secret{}, state)
	}, "DaemonSet mode: the StatefulSet and the state Secret deleted")
	waitReconciled(t, c, key, monitoringv1.ConditionTrue, "Reconciled")
	eventually(t, func(ct *assert.CollectT) {
		avail, got := condition(ct, c, key, monitoringv1.Available)
		if avail == nil {
			return
		}
		assert.Equal(ct, monitoringv1.ConditionFalse, avail.Status)
		assert.Equal(ct, "NoPodReady", avail.Reason, avail.Message)
		assert.Equal(ct, int32(1), got.Status.Shards)
		assert.Equal(ct, []monitoringv1.ShardStatus{{ShardID: "0"}}, got.Status.ShardStatuses)
	}, "the status of the DaemonSet mode")

	// ConfigApplied counts the DaemonSet's pods: two, with generated
	// names, one running the configuration, then both.
	var secret corev1.Secret
	require.NoError(t, c.Get(ctx, name, &secret))
	want := promserver.ContentHash(secret.Data[promserver.ConfigSecretKey], nil)
	var ds appsv1.DaemonSet
	require.NoError(t, c.Get(ctx, name, &ds))
	report := func(hash string) string {
		b, err := json.Marshal(contract.Applied{Hash: hash, Time: "2026-01-01T00:00:00Z"})
		require.NoError(t, err)
		return string(b)
	}
	pods := map[string]string{"prom-agent-edge-x7k2p": want, "prom-agent-edge-m9q4d": "0000"}
	for podName, hash := range pods {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName, Labels: ds.Spec.Template.Labels,
				Annotations: map[string]string{contract.AppliedAnnotation: report(hash)}},
			Spec: corev1.PodSpec{NodeName: "node-" + podName[len(podName)-5:], Containers: []corev1.Container{{Name: "prometheus", Image: "prometheus"}}},
		}
		require.NoError(t, c.Create(ctx, pod))
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		require.NoError(t, c.Status().Update(ctx, pod))
	}
	waitApplied := func(status monitoringv1.ConditionStatus, msg string) {
		t.Helper()
		eventually(t, func(ct *assert.CollectT) {
			applied, _ := condition(ct, c, key, promserver.ConditionConfigApplied)
			if applied != nil {
				assert.Equal(ct, status, applied.Status, applied.Message)
				assert.Contains(ct, applied.Message, msg)
			}
		}, "ConfigApplied %s", status)
	}
	waitApplied(monitoringv1.ConditionFalse, "prom-agent-edge-m9q4d")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prom-agent-edge-m9q4d"}}
	require.NoError(t, c.Patch(ctx, pod, client.RawPatch(types.MergePatchType,
		fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, contract.AppliedAnnotation, report(want)))))
	waitApplied(monitoringv1.ConditionTrue, "every ready replica")

	controlplane.Edit(t, c, a, func(a *monitoringv1alpha1.PrometheusAgent) {
		a.Spec.Mode = ptr.To(monitoringv1alpha1.StatefulSetPrometheusAgentMode)
	})
	eventually(t, func(ct *assert.CollectT) {
		assert.NoError(ct, c.Get(ctx, name, &appsv1.StatefulSet{}))
		gone(ct, &appsv1.DaemonSet{}, name)
	}, "StatefulSet mode again: the DaemonSet deleted")
}

// TestOperatorDaemonSet runs prometheus-operator's own operator (v0.93.1,
// default controller id) with its PrometheusAgentDaemonSet feature gate,
// and the daemonsets permissions its example RBAC leaves to the user: it
// writes the DaemonSet of an agent in DaemonSet mode; annotated, the agent
// is taken over in place, the DaemonSet adopted with its selector, pod
// labels, Prometheus' image and flags, our reloader with NODE_NAME, and
// the operator stops writing it (a PodMonitor created then reaches the
// configuration, restricted to the node, and the reloader stays ours);
// the annotation removed, the operator takes it back in place: its update
// of the DaemonSet, whose selector cannot change, succeeds (the same
// DaemonSet, not one created again). No kubelet runs: the DaemonSets are
// what is compared.
func TestOperatorDaemonSet(t *testing.T) {
	env := controlplane.Start(t, filepath.Join("..", "..", "deploy", "crds"))
	c := controlplane.NewClient(t, env.Config, promserver.AddToScheme)
	ctx := t.Context()
	ns := "agent-daemonset"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	operator.Install(t, env.Kubeconfig)
	daemonSets := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-operator-daemonsets"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"*"}}},
	}
	require.NoError(t, c.Create(ctx, daemonSets))
	require.NoError(t, c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: daemonSets.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: daemonSets.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "prometheus-operator"}},
	}))
	operator.Start(t, env.Kubeconfig, "", "--feature-gates=PrometheusAgentDaemonSet=true")

	a := daemonSetAgent(ns, "edge")
	a.Spec.Containers = []corev1.Container{{Name: "prometheus", Env: []corev1.EnvVar{{Name: "GOMEMLIMIT", Value: "1GiB"}}}}
	a.Spec.MinReadySeconds = ptr.To[int32](5)
	require.NoError(t, c.Create(ctx, a))
	dsKey := client.ObjectKey{Namespace: ns, Name: "prom-agent-edge"}
	reloader := func(ds *appsv1.DaemonSet) corev1.Container {
		return container(t, &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Template: ds.Spec.Template}}, "config-reloader")
	}
	var op appsv1.DaemonSet
	eventually(t, func(ct *assert.CollectT) {
		if assert.NoError(ct, c.Get(ctx, dsKey, &op)) {
			assert.Contains(ct, reloader(&op).Image, "prometheus-config-reloader", "the operator's reloader")
		}
	}, "the operator's DaemonSet")

	start(t, env.Config)
	controlplane.Edit(t, c, a, func(a *monitoringv1alpha1.PrometheusAgent) {
		a.Annotations = map[string]string{takeover.AnnotationControllerID: "podreload"}
	})
	var ds appsv1.DaemonSet
	eventually(t, func(ct *assert.CollectT) {
		if assert.NoError(ct, c.Get(ctx, dsKey, &ds)) {
			assert.Equal(ct, "podreload:test", reloader(&ds).Image, "our reloader")
		}
	}, "the DaemonSet taken over")
	require.Equal(t, op.UID, ds.UID, "adopted in place")
	require.Equal(t, op.Spec.Selector, ds.Spec.Selector)
	require.Equal(t, op.Spec.Template.Labels, ds.Spec.Template.Labels)
	require.Equal(t, op.Labels["operator.prometheus.io/mode"], ds.Labels["operator.prometheus.io/mode"])
	require.Equal(t, op.Spec.MinReadySeconds, ds.Spec.MinReadySeconds)
	require.Equal(t, int32(5), ds.Spec.MinReadySeconds, "the agent's")
	opProm := container(t, &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Template: op.Spec.Template}}, "prometheus")
	prom := container(t, &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Template: ds.Spec.Template}}, "prometheus")
	require.Equal(t, opProm.Image, prom.Image)
	require.Equal(t, opProm.Args, prom.Args, "the agent's flags as the operator's")
	require.Equal(t, opProm.Env, prom.Env, "the patch merged as the operator merges it")
	nodeName := func(c corev1.Container) *corev1.EnvVarSource {
		i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "NODE_NAME" })
		require.GreaterOrEqual(t, i, 0, "%s: NODE_NAME", c.Name)
		return c.Env[i].ValueFrom
	}
	require.Equal(t, nodeName(reloader(&op)).FieldRef.FieldPath, nodeName(reloader(&ds)).FieldRef.FieldPath, "NODE_NAME from spec.nodeName, as the operator's")
	var sts appsv1.StatefulSetList
	require.NoError(t, c.List(ctx, &sts, client.InNamespace(ns)))
	require.Empty(t, sts.Items, "no StatefulSet")
	waitReconciled(t, c, client.ObjectKeyFromObject(a), monitoringv1.ConditionTrue, "Reconciled")

	// A PodMonitor created now reaches the configuration, for the node's
	// pods; the operator, which no longer reconciles the agent, leaves our
	// DaemonSet as it is.
	require.NoError(t, c.Create(ctx, &monitoringv1.PodMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       monitoringv1.PodMonitorSpec{PodMetricsEndpoints: []monitoringv1.PodMetricsEndpoint{{Port: ptr.To("metrics")}}},
	}))
	eventually(t, func(ct *assert.CollectT) {
		var secret corev1.Secret
		if !assert.NoError(ct, c.Get(ctx, dsKey, &secret)) {
			return
		}
		zr, err := gzip.NewReader(bytes.NewReader(secret.Data[promserver.ConfigSecretKey]))
		if !assert.NoError(ct, err) {
			return
		}
		cfg, err := io.ReadAll(zr)
		assert.NoError(ct, err)
		assert.Contains(ct, string(cfg), "job_name: podMonitor/"+ns+"/web/0")
		assert.Contains(ct, string(cfg), "field: spec.nodeName=$(NODE_NAME)")
	}, "the PodMonitor's job in the agent's configuration")
	require.NoError(t, c.Get(ctx, dsKey, &ds))
	require.Equal(t, "podreload:test", reloader(&ds).Image, "the DaemonSet still ours")

	// Handed back: the operator updates the DaemonSet, in place.
	controlplane.Edit(t, c, a, func(a *monitoringv1alpha1.PrometheusAgent) { a.Annotations = nil })
	eventually(t, func(ct *assert.CollectT) {
		if assert.NoError(ct, c.Get(ctx, dsKey, &ds)) {
			assert.Contains(ct, reloader(&ds).Image, "prometheus-config-reloader", "the operator's reloader again")
		}
	}, "the DaemonSet handed back")
	require.Equal(t, op.UID, ds.UID, "taken back in place: the operator's update succeeded")
	require.Equal(t, op.Spec.Selector, ds.Spec.Selector)
}
