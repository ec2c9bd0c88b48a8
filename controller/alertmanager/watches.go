package alertmanager

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/sidecar"
	"github.com/podreload/podreload/controller/store"
	"github.com/podreload/podreload/controller/takeover"
)

// Setup sets up the reconciler of the Alertmanager objects handed to
// opts.ControllerID with m. Without the Alertmanager CRD there is nothing
// to take over: it logs why and sets up nothing. An Alertmanager matters
// when it is created or deleted, and when its spec, labels or annotations
// (the controller id) change; so do the AlertmanagerConfigs it may select
// or names, the Secrets its configuration read, the objects written for
// it, and its pods' reports (which update its status alone).
func Setup(m *kube.Manager, logger *slog.Logger, reg prometheus.Registerer, opts Options) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if served, err := takeover.Served(m.GetRESTMapper(), logger, monitoringv1.SchemeGroupVersion, monitoringv1.AlertmanagersKind); !served {
		return err
	}
	r := &reconciler{
		client: m.GetClient(), reader: m.GetAPIReader(), recorder: m.GetEventRecorder(kube.Name),
		logger: logger.With("component", "alertmanager"), writer: m.Writer(), refs: store.NewTracker(), opts: opts,
		metrics: newMetrics(reg, m.Reconciles(monitoringv1.AlertmanagersKind)), told: map[string]string{}, synced: map[types.NamespacedName]synced{},
		bound: map[bindingKey]monitoringv1.ConfigResourceCondition{}, unbound: map[bindingKey]bool{},
		stored: &takeover.Stored{Reader: m.GetAPIReader(), Client: m.GetClient()},
	}
	r.lifecycle = newLifecycle(r)
	b := builder.ControllerManagedBy(m).
		Named("alertmanager").
		For(&monitoringv1.Alertmanager{}, builder.WithPredicates(takeover.Changed())).
		Owns(&appsv1.StatefulSet{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.secretAlertmanagers)).
		// spec.web's files may be ConfigMaps, the user's: the manager's
		// cache of every ConfigMap's metadata tells when one changes.
		WatchesRawSource(source.Kind(m.ConfigMaps(), &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}},
			handler.TypedEnqueueRequestsFromMapFunc(r.configMapAlertmanagers)))
	gkc := monitoringv1alpha1.SchemeGroupVersion.WithKind(monitoringv1alpha1.AlertmanagerConfigKind).GroupKind()
	if _, err := m.GetRESTMapper().RESTMapping(gkc, monitoringv1alpha1.SchemeGroupVersion.Version); err == nil {
		b = b.Watches(&monitoringv1alpha1.AlertmanagerConfig{}, handler.EnqueueRequestsFromMapFunc(r.configAlertmanagers),
			builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{})))
		if r.bindings, err = hasStatusSubresource(m.GetConfig()); err != nil {
			return fmt.Errorf("take over Alertmanager objects: %w", err)
		}
		if !r.bindings {
			logger.Info("the AlertmanagerConfig CRD has no status subresource: AlertmanagerConfigs get no binding in their status (upgrade the CRD and restart the controller)")
		}
	} else {
		logger.Warn("the AlertmanagerConfig CRD is not installed: Alertmanagers taken over select none", "err", err)
	}
	b = b.Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceAlertmanagers), builder.WithPredicates(predicate.LabelChangedPredicate{}))
	if err := b.Complete(r); err != nil {
		return err
	}
	return builder.ControllerManagedBy(m).
		Named("alertmanager-status").
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.podAlertmanager), builder.WithPredicates(sidecar.PodChanged())).
		Complete(reconcile.Func(r.lifecycle.ReconcileStatus))
}

// handed returns the cached Alertmanagers handed to the controller.
func (r *reconciler) handed(ctx context.Context) []monitoringv1.Alertmanager {
	var list monitoringv1.AlertmanagerList
	if err := r.client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		r.logger.Error("list Alertmanager objects", "err", err)
		return nil
	}
	var out []monitoringv1.Alertmanager
	for _, am := range list.Items {
		if takeover.HandedTo(&am, r.opts.ControllerID) {
			out = append(out, am)
		}
	}
	return out
}

// secretAlertmanagers maps a Secret to the Alertmanagers whose
// configuration reads it, and to those whose configSecret it is.
func (r *reconciler) secretAlertmanagers(ctx context.Context, obj client.Object) []ctrl.Request {
	ref := store.Ref{Kind: store.Secret, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	var out []ctrl.Request
	for _, key := range r.refs.Owners(ref) {
		out = append(out, ctrl.Request{NamespacedName: key})
	}
	for _, am := range r.handed(ctx) {
		// A configSecret created after the render that found none.
		if am.Spec.AlertmanagerConfiguration == nil && am.Namespace == ref.Namespace && configSecretName(&am) == ref.Name {
			out = append(out, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&am)})
		}
	}
	return out
}

// configMapAlertmanagers maps a ConfigMap to the Alertmanagers whose
// spec.web reads it.
func (r *reconciler) configMapAlertmanagers(_ context.Context, obj *metav1.PartialObjectMetadata) []ctrl.Request {
	var out []ctrl.Request
	for _, key := range r.refs.Owners(store.Ref{Kind: store.ConfigMap, Namespace: obj.GetNamespace(), Name: obj.GetName()}) {
		out = append(out, ctrl.Request{NamespacedName: key})
	}
	return out
}

// configAlertmanagers maps an AlertmanagerConfig to the Alertmanagers
// handed to the controller that select, or selected, it: every one with
// a selector (a label change may select or drop it; the namespace
// selectors are read at the render); and to those whose
// spec.alertmanagerConfiguration names it (created, changed or deleted);
// and to the Alertmanagers its status binds it to, so that the binding
// of one deleted while the controller was not running goes.
func (r *reconciler) configAlertmanagers(ctx context.Context, obj client.Object) []ctrl.Request {
	var out []ctrl.Request
	if amc, ok := obj.(*monitoringv1alpha1.AlertmanagerConfig); ok && r.bindings {
		for _, b := range amc.Status.Bindings {
			if b.Group == monitoring.GroupName && b.Resource == monitoringv1.AlertmanagerName {
				out = append(out, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Name}})
			}
		}
	}
	for _, am := range r.handed(ctx) {
		g := am.Spec.AlertmanagerConfiguration
		if am.Spec.AlertmanagerConfigSelector != nil || g != nil && am.Namespace == obj.GetNamespace() && g.Name == obj.GetName() {
			out = append(out, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&am)})
		}
	}
	return out
}

// namespaceAlertmanagers maps a namespace whose labels changed to the
// Alertmanagers handed to the controller that select AlertmanagerConfigs
// by namespace labels.
func (r *reconciler) namespaceAlertmanagers(ctx context.Context, _ client.Object) []ctrl.Request {
	var out []ctrl.Request
	for _, am := range r.handed(ctx) {
		if am.Spec.AlertmanagerConfigSelector != nil && am.Spec.AlertmanagerConfigNamespaceSelector != nil {
			out = append(out, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&am)})
		}
	}
	return out
}

// podAlertmanager maps a pod to the Alertmanager whose StatefulSet runs
// it, by prometheus-operator's alertmanager label.
func (r *reconciler) podAlertmanager(_ context.Context, obj client.Object) []ctrl.Request {
	name := obj.GetLabels()[labelAlertmanager]
	if name == "" {
		return nil
	}
	return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}
