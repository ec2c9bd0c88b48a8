package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
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
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/podreload/podreload/api/v1alpha1"
)

// Name is the controller's name: the field manager of its writes and the
// reporting controller of its Events.
const Name = "podreload-controller"

// Options configure a Controller.
type Options struct {
	// Config reaches the API server.
	Config *rest.Config
	// Namespaces limits the controller to the PrometheusServers, monitors,
	// probes, scrape configurations, rules and Secrets of these namespaces; empty means every namespace.
	Namespaces []string
	// Workload are the controller-wide inputs of the rendered workloads
	// (default images); RuleShards is ignored.
	Workload WorkloadOptions
	// LeaderElection makes the controller write only while it holds the
	// Lease LeaderElectionID in LeaderElectionNamespace.
	LeaderElection bool
	// LeaderElectionNamespace holds the Lease; empty means the namespace
	// the controller runs in.
	LeaderElectionNamespace string
	// LeaderElectionID names the Lease; empty means Name.
	LeaderElectionID string
	// SyncPeriod is how often every PrometheusServer is reconciled even
	// when nothing changed; 0 means controller-runtime's default (10h).
	SyncPeriod time.Duration
}

// Controller reconciles PrometheusServers: it watches them, the monitors,
// rules, Secrets and Namespaces they select or reference and the objects
// it writes for them, and makes those objects match what render gives.
type Controller struct {
	mgr    manager.Manager
	rec    *reconciler
	synced atomic.Bool
}

// New returns a Controller; nothing runs before Run. A nil logger discards
// the logs.
func New(logger *slog.Logger, reg prometheus.Registerer, opts Options) (*Controller, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.Config == nil {
		return nil, errors.New("new controller: no API server config")
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, monitoringv1.AddToScheme, monitoringv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("new controller: %w", err)
		}
	}
	mgr, err := manager.New(opts.Config, managerOptions(logger, scheme, opts))
	if err != nil {
		return nil, fmt.Errorf("new controller: %w", err)
	}

	// The ConfigMaps a server references (spec.web.tlsConfig) are the
	// user's, which the manager's cache, that holds the controller's own,
	// never sees: a cache of ConfigMaps' metadata, apart, tells when one
	// changes. Their content is read from the API server when a server
	// referencing them is reconciled.
	configMaps, err := cache.New(opts.Config, cache.Options{
		Scheme: scheme, Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient(),
		DefaultNamespaces: cacheNamespaces(opts), DefaultTransform: cache.TransformStripManagedFields(),
	})
	if err != nil {
		return nil, fmt.Errorf("new controller: %w", err)
	}
	if err := mgr.Add(configMaps); err != nil {
		return nil, fmt.Errorf("new controller: %w", err)
	}

	r := &reconciler{
		client:     mgr.GetClient(),
		reader:     mgr.GetAPIReader(),
		metadata:   mgr.GetCache(),
		scheme:     scheme,
		recorder:   mgr.GetEventRecorder(Name),
		logger:     logger,
		metrics:    newMetrics(reg),
		workload:   opts.Workload,
		caches:     map[types.NamespacedName]*ruleCache{},
		secretRefs: map[types.NamespacedName][]string{},
		warned:     map[types.NamespacedName]map[rejection]struct{}{},
		written:    map[types.NamespacedName]written{},
	}
	// Monitors and rules matter when they are created or deleted, or when
	// their spec or labels change.
	changed := builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))
	err = builder.ControllerManagedBy(mgr).
		Named("prometheusserver").
		// Status writes change no generation: they do not come back here.
		For(&v1alpha1.PrometheusServer{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Service{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.secretServers)).
		WatchesRawSource(source.Kind(configMaps, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}},
			handler.TypedEnqueueRequestsFromMapFunc(r.configMapServers))).
		Watches(&monitoringv1.ServiceMonitor{}, handler.EnqueueRequestsFromMapFunc(r.selectingServers(monitoringv1.ServiceMonitorsKind)), changed).
		Watches(&monitoringv1.PodMonitor{}, handler.EnqueueRequestsFromMapFunc(r.selectingServers(monitoringv1.PodMonitorsKind)), changed).
		Watches(&monitoringv1.Probe{}, handler.EnqueueRequestsFromMapFunc(r.selectingServers(monitoringv1.ProbesKind)), changed).
		Watches(&monitoringv1alpha1.ScrapeConfig{}, handler.EnqueueRequestsFromMapFunc(r.selectingServers(monitoringv1alpha1.ScrapeConfigsKind)), changed).
		Watches(&monitoringv1.PrometheusRule{}, handler.EnqueueRequestsFromMapFunc(r.selectingServers(kindPrometheusRule)), changed).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceServers), builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.podServer), builder.WithPredicates(podChanged())).
		Complete(r)
	if err != nil {
		return nil, fmt.Errorf("new controller: %w", err)
	}
	return &Controller{mgr: mgr, rec: r}, nil
}

// managerOptions configures controller-runtime's manager: what it caches,
// how it elects a leader, and no servers of its own.
func managerOptions(logger *slog.Logger, scheme *runtime.Scheme, opts Options) manager.Options {
	namespaces := cacheNamespaces(opts)
	// Only the ConfigMaps, Services, StatefulSets, Roles, RoleBindings and
	// pods of PrometheusServers are cached, not every one of the cluster. Of Secrets, which hold the
	// biggest objects of many clusters, only the metadata is cached (to
	// know when one changes): the ones a server references, and its config
	// Secret, are read from the API server when it is reconciled.
	ours := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{labelName: "prometheus"})}
	var syncPeriod *time.Duration
	if opts.SyncPeriod > 0 {
		syncPeriod = &opts.SyncPeriod
	}
	id := opts.LeaderElectionID
	if id == "" {
		id = Name
	}
	return manager.Options{
		Scheme: scheme,
		Logger: logr.FromSlogHandler(logger.With("component", "controller-runtime").Handler()),
		Cache: cache.Options{
			DefaultNamespaces: namespaces,
			SyncPeriod:        syncPeriod,
			// Managed fields are often the biggest part of an object and
			// the controller never reads them.
			DefaultTransform: cache.TransformStripManagedFields(),
			ByObject: map[client.Object]cache.ByObject{
				&corev1.ConfigMap{}:   ours,
				&corev1.Service{}:     ours,
				&appsv1.StatefulSet{}: ours,
				&rbacv1.Role{}:        ours,
				&rbacv1.RoleBinding{}: ours,
				&corev1.Pod{}:         ours,
			},
		},
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		// Served by the caller, from its registry and ctrlmetrics.Registry.
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              id,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		// Several controllers run in one test binary.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}
}

// cacheNamespaces are the namespaces the caches watch: nil for all.
func cacheNamespaces(opts Options) map[string]cache.Config {
	if len(opts.Namespaces) == 0 {
		return nil
	}
	namespaces := map[string]cache.Config{}
	for _, ns := range opts.Namespaces {
		namespaces[ns] = cache.Config{}
	}
	return namespaces
}

// Run runs the controller until ctx is done. It returns an error when the
// controller cannot start or loses its leader Lease.
func (c *Controller) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		if c.mgr.GetCache().WaitForCacheSync(ctx) {
			c.synced.Store(true)
		}
	})
	if err := c.mgr.Start(ctx); err != nil {
		return fmt.Errorf("run controller: %w", err)
	}
	return nil
}

// Ready returns nil once the controller's caches hold the cluster's state.
func (c *Controller) Ready() error {
	if !c.synced.Load() {
		return errors.New("not ready: caches not synced")
	}
	return nil
}

// servers returns the cached PrometheusServers.
func (r *reconciler) servers(ctx context.Context) []v1alpha1.PrometheusServer {
	var list v1alpha1.PrometheusServerList
	if err := r.client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		r.logger.Error("list PrometheusServers", "err", err)
		return nil
	}
	return list.Items
}

// requests turns servers into reconcile requests, counted as triggered by
// an object of kind.
func (r *reconciler) requests(kind string, servers []types.NamespacedName) []ctrl.Request {
	if len(servers) == 0 {
		return nil
	}
	r.metrics.triggers.WithLabelValues(kind).Add(float64(len(servers)))
	reqs := make([]ctrl.Request, len(servers))
	for i, s := range servers {
		reqs[i] = ctrl.Request{NamespacedName: s}
	}
	return reqs
}

// selectingServers maps a monitor or rule to the PrometheusServers whose
// selectors for kind select it. Updates are mapped for the old and the new
// object, so a server that stops selecting one is told too.
func (r *reconciler) selectingServers(kind string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []ctrl.Request {
		var ns corev1.Namespace
		nsLabels := map[string]labels.Set{}
		if err := r.client.Get(ctx, client.ObjectKey{Name: obj.GetNamespace()}, &ns); err == nil {
			nsLabels[ns.Name] = ns.Labels
		}
		var matched []types.NamespacedName
		for _, s := range r.servers(ctx) {
			sel, nsSel := selectorsFor(&s, kind)
			if ok, err := isSelected(&s, sel, nsSel, obj, nsLabels); err == nil && ok {
				matched = append(matched, types.NamespacedName{Namespace: s.Namespace, Name: s.Name})
			}
		}
		return r.requests(kind, matched)
	}
}

// namespaceServers maps a Namespace to the PrometheusServers with a
// namespace selector that matches its labels.
func (r *reconciler) namespaceServers(ctx context.Context, obj client.Object) []ctrl.Request {
	var matched []types.NamespacedName
	for _, s := range r.servers(ctx) {
		for _, kind := range selectedKinds() {
			_, nsSel := selectorsFor(&s, kind)
			if nsSel == nil {
				continue
			}
			if sel, err := metav1.LabelSelectorAsSelector(nsSel); err == nil && sel.Matches(labels.Set(obj.GetLabels())) {
				matched = append(matched, types.NamespacedName{Namespace: s.Namespace, Name: s.Name})
				break
			}
		}
	}
	return r.requests("Namespace", matched)
}

// podServer maps a pod to the PrometheusServer whose StatefulSet runs it,
// named by its labelInstance label.
func (r *reconciler) podServer(_ context.Context, obj client.Object) []ctrl.Request {
	name := obj.GetLabels()[labelInstance]
	if name == "" {
		return nil
	}
	return r.requests("Pod", []types.NamespacedName{{Namespace: obj.GetNamespace(), Name: name}})
}

// secretServers maps a Secret to the PrometheusServer that owns it, or to
// the PrometheusServers whose last render referenced it.
func (r *reconciler) secretServers(_ context.Context, obj client.Object) []ctrl.Request {
	if owner := ownerServer(obj); owner != nil {
		return []ctrl.Request{{NamespacedName: *owner}}
	}
	id := obj.GetNamespace() + "/" + obj.GetName()
	r.mu.Lock()
	var matched []types.NamespacedName
	for server, refs := range r.secretRefs {
		if containsSorted(refs, id) {
			matched = append(matched, server)
		}
	}
	r.mu.Unlock()
	return r.requests("Secret", matched)
}

// configMapServers maps a ConfigMap to the PrometheusServers whose last
// render referenced it; the controller's own ConfigMaps come through
// Owns.
func (r *reconciler) configMapServers(_ context.Context, obj *metav1.PartialObjectMetadata) []ctrl.Request {
	id := configMapRefPrefix + obj.GetNamespace() + "/" + obj.GetName()
	r.mu.Lock()
	var matched []types.NamespacedName
	for server, refs := range r.secretRefs {
		if containsSorted(refs, id) {
			matched = append(matched, server)
		}
	}
	r.mu.Unlock()
	return r.requests("ConfigMap", matched)
}

func selectorsFor(s *v1alpha1.PrometheusServer, kind string) (selector, nsSelector *metav1.LabelSelector) {
	switch kind {
	case monitoringv1.ServiceMonitorsKind:
		return s.Spec.ServiceMonitorSelector, s.Spec.ServiceMonitorNamespaceSelector
	case monitoringv1.PodMonitorsKind:
		return s.Spec.PodMonitorSelector, s.Spec.PodMonitorNamespaceSelector
	case monitoringv1.ProbesKind:
		return s.Spec.ProbeSelector, s.Spec.ProbeNamespaceSelector
	case monitoringv1alpha1.ScrapeConfigsKind:
		return s.Spec.ScrapeConfigSelector, s.Spec.ScrapeConfigNamespaceSelector
	default:
		return s.Spec.RuleSelector, s.Spec.RuleNamespaceSelector
	}
}
