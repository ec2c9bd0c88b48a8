package promoperator

import (
	"context"
	"fmt"
	"strconv"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/sidecar"
	"github.com/podreload/podreload/controller/takeover"
)

// writeStatus applies the status of an object taken over, as
// prometheus-operator writes it (replicas, shards, selector, the Available
// and Reconciled conditions) and with ConfigApplied besides, from res and
// the pods; nothing is written when it is the same. (An object refused
// gets its Reconciled and UnsupportedFields conditions only, from the
// takeover's lifecycle: the rest stays prometheus-operator's.)
func (t *takingOver[T]) writeStatus(ctx context.Context, p T, server promserver.Target, res promserver.Synced) error {
	r := t.r
	key := client.ObjectKeyFromObject(p)
	sets := res.Sets
	var ds *appsv1.DaemonSet
	switch {
	case server.Layout.DaemonSet():
		var err error
		if ds, err = t.r.LiveDaemonSet(ctx, server); err != nil {
			return err
		}
	case res.Objs == nil:
		var err error
		if sets, err = t.sets(ctx, server); err != nil {
			return err
		}
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(p.GetNamespace()), t.podLabels(p)); err != nil {
		return fmt.Errorf("list pods of %s %s: %w", t.k.Kind, key, err)
	}
	// What the pods should run: what this render wrote, or the user's
	// configuration it read (promserver.UserConfigured), else what the
	// status showed last.
	want := r.Applied.Written(key)
	if res.Objs != nil && (res.Objs.ConfigSecret != nil || promserver.UserConfigured(server)) {
		want = res.Objs.ContentHash
	}
	_, applied := sidecar.Applied(want, pods.Items)
	if server.Spec.NoServiceAccountToken {
		applied = metav1.Condition{
			Type: sidecar.ConditionConfigApplied, Status: metav1.ConditionUnknown, Reason: "NotReported",
			Message: "automountServiceAccountToken is false: the config-reloaders read the configuration from its volume and cannot report what Prometheus runs",
		}
	}
	applied.ObservedGeneration = p.GetGeneration()
	if res.Cond.Type != "" && res.Cond.Status != metav1.ConditionTrue {
		applied.ObservedGeneration = 0 // As for a PrometheusServer (writeStatus).
		if was := takeover.FindCondition(t.k.Status(p).Conditions, promserver.ConditionConfigApplied); was != nil {
			applied.ObservedGeneration = was.ObservedGeneration
		}
	}
	r.Metrics.ConfigApplied.WithLabelValues(p.GetNamespace(), p.GetName()).Set(promserver.BoolGauge(applied.Status == metav1.ConditionTrue))

	status := operatorStatus(t.k.Common(p), server, sets)
	available := availableCondition(p, server, sets)
	if server.Layout.DaemonSet() {
		status, available = daemonSetStatus(t.k.Common(p), server, ds), daemonSetAvailable(p, server, ds)
	}
	status.Conditions = t.conditionsOf(p, res, applied)
	status.Conditions = append(status.Conditions[:0:0], status.Conditions...)
	takeover.SetCondition(&status.Conditions, available)
	before := r.Applied.Written(key)
	if !equality.Semantic.DeepEqual(status, *t.k.Status(p)) {
		u, err := toMap(status)
		if err != nil {
			return err
		}
		if err := t.applyStatus(ctx, p, u); err != nil {
			return err
		}
	}
	r.Applied.Observe(key, before, want, applied.Status == metav1.ConditionTrue)
	return nil
}

// toMap converts status to the map an apply configuration holds.
func toMap(status monitoringv1.PrometheusStatus) (map[string]any, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	return u, nil
}

// operatorStatus is the status of an object whose common fields are cpf
// as prometheus-operator counts it, from the StatefulSets of its shards
// (nil for a missing one), without conditions. Its selector is the labels
// of every pod of the object, sorted (the scale subresource's).
func operatorStatus(cpf *monitoringv1.CommonPrometheusFields, server promserver.Target, sets []*appsv1.StatefulSet) monitoringv1.PrometheusStatus {
	status := monitoringv1.PrometheusStatus{
		Paused:   cpf.Paused,
		Shards:   ptr.Deref(cpf.Shards, 1),
		Selector: labels.Set(promserver.SelectorLabels(server)).String(),
	}
	for shard := range promserver.ShardCount(server) {
		ss := monitoringv1.ShardStatus{ShardID: strconv.Itoa(shard)}
		if shard < len(sets) && sets[shard] != nil {
			st := sets[shard].Status
			ss.Replicas, ss.UpdatedReplicas, ss.AvailableReplicas = st.Replicas, st.UpdatedReplicas, st.AvailableReplicas
			ss.UnavailableReplicas = max(0, st.Replicas-st.AvailableReplicas)
		}
		status.Replicas += ss.Replicas
		status.UpdatedReplicas += ss.UpdatedReplicas
		status.AvailableReplicas += ss.AvailableReplicas
		status.UnavailableReplicas += ss.UnavailableReplicas
		status.ShardStatuses = append(status.ShardStatuses, ss)
	}
	return status
}

// availableCondition is prometheus-operator's Available condition: True
// when every shard has all its replicas available, Degraded when some,
// False when a shard has none or no StatefulSet.
func availableCondition(p client.Object, server promserver.Target, sets []*appsv1.StatefulSet) monitoringv1.Condition {
	want := ptr.Deref(server.Spec.Replicas, 1)
	c := monitoringv1.Condition{Type: monitoringv1.Available, Status: monitoringv1.ConditionTrue, ObservedGeneration: p.GetGeneration(), LastTransitionTime: metav1.Now()}
	var reasons []string
	msg := ""
	for shard := range promserver.ShardCount(server) {
		var status monitoringv1.ConditionStatus
		reason, detail := "", ""
		switch {
		case shard >= len(sets) || sets[shard] == nil:
			status, reason = monitoringv1.ConditionFalse, "StatefulSetNotFound"
			detail = fmt.Sprintf("statefulset %s/%s not found", p.GetNamespace(), promserver.ShardName(server, shard))
		case sets[shard].Status.AvailableReplicas >= want:
			continue
		case sets[shard].Status.AvailableReplicas == 0:
			status, reason = monitoringv1.ConditionFalse, "NoPodReady"
			detail = fmt.Sprintf("0 of %d pods available", want)
		default:
			status, reason = monitoringv1.ConditionDegraded, "SomePodsNotReady"
			detail = fmt.Sprintf("%d of %d pods available", sets[shard].Status.AvailableReplicas, want)
		}
		if c.Status != monitoringv1.ConditionFalse {
			c.Status = status
		}
		if len(reasons) == 0 || reasons[len(reasons)-1] != reason {
			reasons = append(reasons, reason)
		}
		if msg != "" {
			msg += "\n"
		}
		msg += fmt.Sprintf("shard %d: %s", shard, detail)
	}
	for i, reason := range reasons {
		if i > 0 {
			c.Reason += "And"
		}
		c.Reason += reason
	}
	c.Message = msg
	return c
}

// daemonSetStatus is the status of an agent in DaemonSet mode, whose
// common fields are cpf, from its DaemonSet ds (nil when there is none),
// without conditions: one shard, whose replicas are the DaemonSet's pods
// (prometheus-operator writes none in that mode yet: its
// resource_reconciler.go leaves DaemonSets out).
func daemonSetStatus(cpf *monitoringv1.CommonPrometheusFields, server promserver.Target, ds *appsv1.DaemonSet) monitoringv1.PrometheusStatus {
	ss := monitoringv1.ShardStatus{ShardID: "0"}
	if ds != nil {
		st := ds.Status
		ss.Replicas, ss.UpdatedReplicas, ss.AvailableReplicas = st.CurrentNumberScheduled, st.UpdatedNumberScheduled, st.NumberAvailable
		ss.UnavailableReplicas = max(0, st.CurrentNumberScheduled-st.NumberAvailable)
	}
	return monitoringv1.PrometheusStatus{
		Paused: cpf.Paused, Shards: 1,
		Selector: labels.Set(promserver.SelectorLabels(server)).String(),
		Replicas: ss.Replicas, UpdatedReplicas: ss.UpdatedReplicas, AvailableReplicas: ss.AvailableReplicas,
		UnavailableReplicas: ss.UnavailableReplicas,
		ShardStatuses:       []monitoringv1.ShardStatus{ss},
	}
}

// daemonSetAvailable is the Available condition of an agent in DaemonSet
// mode, as availableCondition's for its DaemonSet ds: True when every pod
// the DaemonSet wants, at least one, is available, Degraded when some
// are, False when none is or there is no DaemonSet.
func daemonSetAvailable(p client.Object, server promserver.Target, ds *appsv1.DaemonSet) monitoringv1.Condition {
	c := monitoringv1.Condition{Type: monitoringv1.Available, Status: monitoringv1.ConditionTrue, ObservedGeneration: p.GetGeneration(), LastTransitionTime: metav1.Now()}
	name := promserver.ShardName(server, 0)
	switch {
	case ds == nil:
		c.Status, c.Reason = monitoringv1.ConditionFalse, "DaemonSetNotFound"
		c.Message = fmt.Sprintf("daemonset %s/%s not found", p.GetNamespace(), name)
	case ds.Status.NumberAvailable == 0:
		c.Status, c.Reason = monitoringv1.ConditionFalse, "NoPodReady"
		c.Message = fmt.Sprintf("daemonset %s: 0 of %d pods available", name, ds.Status.DesiredNumberScheduled)
	case ds.Status.NumberAvailable < ds.Status.DesiredNumberScheduled:
		c.Status, c.Reason = monitoringv1.ConditionDegraded, "SomePodsNotReady"
		c.Message = fmt.Sprintf("daemonset %s: %d of %d pods available", name, ds.Status.NumberAvailable, ds.Status.DesiredNumberScheduled)
	}
	return c
}
