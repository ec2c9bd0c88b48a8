package alertmanager

import (
	"context"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/takeover"
)

// variant is the Alertmanager kind as a variant of the takeover's
// lifecycle (takeover.Variant): what it refuses (fields.go), its sync
// (reconcile.go), its status (status.go), its pods.
type variant struct{ r *reconciler }

func (variant) New() *monitoringv1.Alertmanager { return &monitoringv1.Alertmanager{} }

func (variant) Unsupported(am *monitoringv1.Alertmanager) []string { return fromAlertmanager(am) }

func (variant) Paused(am *monitoringv1.Alertmanager) bool { return am.Spec.Paused }

func (v variant) Sync(ctx context.Context, am *monitoringv1.Alertmanager, _ bool) (metav1.Condition, synced, error) {
	res, err := v.r.sync(ctx, am)
	v.r.mu.Lock()
	v.r.synced[client.ObjectKeyFromObject(am)] = res
	v.r.mu.Unlock()
	return res.cond, res, err
}

func (v variant) WriteStatus(ctx context.Context, am *monitoringv1.Alertmanager, cond metav1.Condition, state *synced) error {
	var res synced
	if state != nil {
		res = *state
	} else {
		v.r.mu.Lock()
		res = v.r.synced[client.ObjectKeyFromObject(am)]
		v.r.mu.Unlock()
		res.sts = nil // Read again: its status changed.
	}
	res.cond = cond
	return v.r.writeStatus(ctx, am, res)
}

func (v variant) Forget(ctx context.Context, key types.NamespacedName) error {
	v.r.forget(key)
	return v.r.unbind(ctx, key, nil)
}

func (variant) Conditions(am *monitoringv1.Alertmanager) []monitoringv1.Condition {
	return am.Status.Conditions
}

func (variant) AccessName(am *monitoringv1.Alertmanager) string { return accessName(am.Name) }

func (v variant) Pods(ctx context.Context, am *monitoringv1.Alertmanager) ([]corev1.Pod, error) {
	return v.r.pods(ctx, am)
}

// newLifecycle returns r's lifecycle.
func newLifecycle(r *reconciler) *takeover.Lifecycle[*monitoringv1.Alertmanager, synced, variant] {
	return takeover.NewLifecycle[*monitoringv1.Alertmanager, synced](takeover.Config{
		Kind: monitoringv1.AlertmanagersKind, ControllerID: r.opts.ControllerID, Doc: docLink,
		Client: r.client, APIReader: r.reader, Writer: r.writer, Recorder: r.recorder, Logger: r.logger,
		Errors: r.metrics.runs.Errors, Work: &r.work,
	}, variant{r: r})
}
