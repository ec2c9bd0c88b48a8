package alertmanager

import (
	"context"
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/sidecar"
	"github.com/podreload/podreload/controller/takeover"
)

// writeStatus applies the status of am as prometheus-operator writes it
// (replicas, selector, paused, the Available and Reconciled conditions),
// with ConfigApplied besides, from res and the pods' reports; nothing is
// written when it is the same.
func (r *reconciler) writeStatus(ctx context.Context, am *monitoringv1.Alertmanager, res synced) error {
	sts := res.sts
	if sts == nil {
		var live appsv1.StatefulSet
		err := r.client.Get(ctx, types.NamespacedName{Namespace: am.Namespace, Name: stsName(am.Name)}, &live)
		switch {
		case err == nil:
			sts = &live
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("get StatefulSet %s/%s: %w", am.Namespace, stsName(am.Name), err)
		}
	}
	pods, err := r.pods(ctx, am)
	if err != nil {
		return err
	}
	_, applied := sidecar.Applied(res.hash, pods)
	if volumeSource(am) {
		applied = metav1.Condition{
			Type: sidecar.ConditionConfigApplied, Status: metav1.ConditionUnknown, Reason: "NotReported",
			Message: "automountServiceAccountToken is false: the config-reloaders read the generated Secret from its volume and cannot report what Alertmanager runs",
		}
	}
	applied.ObservedGeneration = am.Generation
	r.metrics.configApplied.WithLabelValues(am.Namespace, am.Name).Set(map[bool]float64{true: 1}[applied.Status == metav1.ConditionTrue])

	status := monitoringv1.AlertmanagerStatus{Paused: am.Spec.Paused, Selector: labels.Set(selectorLabels(am.Name)).String()}
	if sts != nil {
		st := sts.Status
		status.Replicas, status.UpdatedReplicas, status.AvailableReplicas = st.Replicas, st.UpdatedReplicas, st.AvailableReplicas
		status.UnavailableReplicas = max(0, st.Replicas-st.AvailableReplicas)
	}
	status.Conditions = append([]monitoringv1.Condition(nil), am.Status.Conditions...)
	takeover.SetCondition(&status.Conditions, availableCondition(am, sts))
	takeover.SetCondition(&status.Conditions, takeover.FromCondition(res.cond, am.Generation))
	takeover.SetCondition(&status.Conditions, takeover.FromCondition(applied, applied.ObservedGeneration))
	keep := status.Conditions[:0]
	for _, c := range status.Conditions {
		if string(c.Type) != takeover.ConditionUnsupportedFields {
			keep = append(keep, c)
		}
	}
	status.Conditions = keep
	if equality.Semantic.DeepEqual(status, am.Status) {
		return nil
	}
	u, err := toMap(status)
	if err != nil {
		return err
	}
	return takeover.ApplyStatus(ctx, r.client, r.writer, gvk(), client.ObjectKeyFromObject(am), u)
}

// availableCondition is prometheus-operator's Available condition: True
// when every replica is available, Degraded when some, False when none or
// no StatefulSet.
func availableCondition(am *monitoringv1.Alertmanager, sts *appsv1.StatefulSet) monitoringv1.Condition {
	want := replicas(am)
	c := monitoringv1.Condition{Type: monitoringv1.Available, Status: monitoringv1.ConditionTrue, ObservedGeneration: am.Generation, LastTransitionTime: metav1.Now()}
	switch {
	case sts == nil:
		c.Status, c.Reason, c.Message = monitoringv1.ConditionFalse, "StatefulSetNotFound", fmt.Sprintf("statefulset %s/%s not found", am.Namespace, stsName(am.Name))
	case sts.Status.AvailableReplicas >= want:
	case sts.Status.AvailableReplicas == 0:
		c.Status, c.Reason, c.Message = monitoringv1.ConditionFalse, "NoPodReady", fmt.Sprintf("0 of %d pods available", want)
	default:
		c.Status, c.Reason, c.Message = monitoringv1.ConditionDegraded, "SomePodsNotReady", fmt.Sprintf("%d of %d pods available", sts.Status.AvailableReplicas, want)
	}
	return c
}

// toMap converts status to the map an apply configuration holds.
func toMap(status monitoringv1.AlertmanagerStatus) (map[string]any, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	return u, nil
}
