package promserver

import (
	"context"
	"log/slog"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/selector"
	"github.com/podreload/podreload/controller/sidecar"
	"github.com/podreload/podreload/controller/store"
	"github.com/podreload/podreload/controller/takeover"
)

// AddToScheme adds the types PrometheusServers are rendered from: the
// kind itself and prometheus-operator's monitors and rules.
func AddToScheme(s *runtime.Scheme) error {
	for _, add := range []func(*runtime.Scheme) error{v1alpha1.AddToScheme, monitoringv1.AddToScheme, monitoringv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			return err
		}
	}
	return nil
}

// NewReconciler returns the reconciler of m for front, a kind whose
// objects are of own; a nil logger discards its logs.
func NewReconciler(m *kube.Manager, logger *slog.Logger, reg prometheus.Registerer, own metav1.TypeMeta, opts WorkloadOptions, front Front) (*Reconciler, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	metrics, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Reconciler{
		Client:    m.GetClient(),
		reader:    m.GetAPIReader(),
		metadata:  m.GetCache(),
		Recorder:  m.GetEventRecorder(kube.Name),
		Logger:    logger,
		Metrics:   metrics.forKind(m, own.Kind),
		workload:  opts,
		Writer:    m.Writer(),
		caches:    map[types.NamespacedName]*RuleCache{},
		refs:      store.NewTracker(),
		Applied:   sidecar.NewApplyTimes(metrics.applySeconds, time.Now),
		Coalescer: kube.NewCoalescer(time.Now),
		now:       time.Now,
		retained:  takeover.NewDeadlines(),
		front:     front,
		own:       own,
	}, nil
}

// Setup completes b, the builder of r's controller given the kind it is
// for, with the watches of what the servers select or reference, the
// objects written for them, and their pods, mapped by pods unless it is
// nil.
func (r *Reconciler) Setup(m *kube.Manager, b *builder.TypedBuilder[reconcile.Request], pods handler.MapFunc) error {
	// Monitors and rules matter when they are created or deleted, or when
	// their spec or labels change.
	changed := builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))
	b = b.Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Service{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.secretServers), builder.WithPredicates(sidecar.NotStateWrites())).
		WatchesRawSource(source.Kind(m.ConfigMaps(), &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}},
			handler.TypedEnqueueRequestsFromMapFunc(r.configMapServers)))
	for _, k := range SelectedKinds() {
		b = b.Watches(k.Object, handler.EnqueueRequestsFromMapFunc(r.selectingServers(k)), changed)
	}
	b = b.Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceServers), builder.WithPredicates(predicate.LabelChangedPredicate{}))
	if pods != nil {
		b = b.Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(pods), builder.WithPredicates(sidecar.PodChanged()))
	}
	return b.Complete(r)
}

// Requests turns servers into reconcile requests, counted as triggered by
// an object of kind.
func (r *Reconciler) Requests(kind string, servers []types.NamespacedName) []ctrl.Request {
	if len(servers) == 0 {
		return nil
	}
	r.Metrics.triggers.WithLabelValues(kind).Add(float64(len(servers)))
	reqs := make([]ctrl.Request, len(servers))
	for i, s := range servers {
		reqs[i] = ctrl.Request{NamespacedName: s}
	}
	return reqs
}

// selectingServers maps a monitor or rule to the PrometheusServers whose
// selectors for k select it. Updates are mapped for the old and the new
// object, so a server that stops selecting one is told too.
func (r *Reconciler) selectingServers(k selectedKind) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []ctrl.Request {
		var ns corev1.Namespace
		nsLabels := map[string]labels.Set{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: obj.GetNamespace()}, &ns); err == nil {
			nsLabels[ns.Name] = ns.Labels
		}
		var matched []types.NamespacedName
		for _, s := range r.front.Servers(ctx) {
			sel, nsSel := k.selectors(&s.Spec)
			if ok, err := selector.Selects(s.Namespace, sel, nsSel, obj, nsLabels); err == nil && ok {
				matched = append(matched, types.NamespacedName{Namespace: s.Namespace, Name: s.Name})
			}
		}
		return r.Requests(k.Kind, matched)
	}
}

// namespaceServers maps a Namespace to the PrometheusServers with a
// namespace selector that matches its labels.
func (r *Reconciler) namespaceServers(ctx context.Context, obj client.Object) []ctrl.Request {
	var matched []types.NamespacedName
	for _, s := range r.front.Servers(ctx) {
		for _, k := range SelectedKinds() {
			_, nsSel := k.selectors(&s.Spec)
			if nsSel == nil {
				continue
			}
			if sel, err := metav1.LabelSelectorAsSelector(nsSel); err == nil && sel.Matches(labels.Set(obj.GetLabels())) {
				matched = append(matched, types.NamespacedName{Namespace: s.Namespace, Name: s.Name})
				break
			}
		}
	}
	return r.Requests("Namespace", matched)
}

// PodServer maps a pod to the PrometheusServer whose StatefulSet runs it,
// named by its labelInstance label.
func (r *Reconciler) PodServer(_ context.Context, obj client.Object) []ctrl.Request {
	name := obj.GetLabels()[LabelInstance]
	if name == "" {
		return nil
	}
	return r.Requests("Pod", []types.NamespacedName{{Namespace: obj.GetNamespace(), Name: name}})
}

// secretServers maps a Secret to the PrometheusServer that owns it, or to
// the PrometheusServers whose last render referenced it.
func (r *Reconciler) secretServers(_ context.Context, obj client.Object) []ctrl.Request {
	if owner := r.ownerServer(obj); owner != nil {
		return []ctrl.Request{{NamespacedName: *owner}}
	}
	return r.Requests("Secret", r.refs.Owners(store.Ref{Kind: store.Secret, Namespace: obj.GetNamespace(), Name: obj.GetName()}))
}

// configMapServers maps a ConfigMap to the PrometheusServers whose last
// render referenced it; the controller's own ConfigMaps come through
// Owns.
func (r *Reconciler) configMapServers(_ context.Context, obj *metav1.PartialObjectMetadata) []ctrl.Request {
	return r.Requests("ConfigMap", r.refs.Owners(store.Ref{Kind: store.ConfigMap, Namespace: obj.GetNamespace(), Name: obj.GetName()}))
}
