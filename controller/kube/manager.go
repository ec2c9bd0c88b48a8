// Package kube is what every managed kind needs from Kubernetes, whatever
// the kind: the manager with its caches (manager.go) and the writes of the
// objects a kind renders (write.go, statefulset.go, daemonset.go; several
// at once, parallel.go), and the Warning Events of their reconciles, each
// told once (event.go). It knows no kind: the kinds import it, never the
// other way round.
package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Name is the controller's name: the field manager of its writes and the
// reporting controller of its Events.
const Name = "podreload-controller"

// LabelName is the label whose value, one per managed kind, marks the
// objects the controller writes for that kind ("prometheus", say).
const LabelName = "app.kubernetes.io/name"

// Options configure a Manager.
type Options struct {
	// Config reaches the API server.
	Config *rest.Config
	// Namespaces limits the caches to these namespaces; empty means every
	// namespace.
	Namespaces []string
	// Names are the values of LabelName on the objects the managed kinds
	// write: only those objects are cached.
	Names []string
	// AddToScheme adds the types of the managed kinds and of what they
	// watch; the built-in types are always there.
	AddToScheme []func(*runtime.Scheme) error
	// LeaderElection makes the controller write only while it holds the
	// Lease LeaderElectionID in LeaderElectionNamespace.
	LeaderElection bool
	// LeaderElectionNamespace holds the Lease; empty means the namespace
	// the controller runs in.
	LeaderElectionNamespace string
	// LeaderElectionID names the Lease; empty means Name.
	LeaderElectionID string
	// LeaderElectionTiming are the Lease's durations; a zero field means
	// controller-runtime's default.
	LeaderElectionTiming LeaderElectionTiming
	// SyncPeriod is how often every object is reconciled even when
	// nothing changed; 0 means controller-runtime's default (10h).
	SyncPeriod time.Duration
}

// LeaderElectionTiming are the durations of leader election, as
// client-go's leaderelection has them: a leader that could not renew its
// Lease for RenewDeadline stops (the controller exits), RetryPeriod plus
// RenewDeadline after its last renewal, before another replica, which
// waits LeaseDuration after the last renewal it saw, takes it: their sum
// must stay below LeaseDuration.
type LeaderElectionTiming struct {
	// LeaseDuration is how long a replica waits, after the last renewal
	// it saw, before it takes the Lease (controller-runtime's default:
	// 15s).
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader tries to renew the Lease
	// before it gives up leading (default 10s).
	RenewDeadline time.Duration
	// RetryPeriod is the time between two attempts at the Lease (default
	// 2s).
	RetryPeriod time.Duration
}

// Manager is controller-runtime's manager, with the cache of the
// metadata of ConfigMaps the kinds reference, and readiness.
type Manager struct {
	manager.Manager
	configMaps cache.Cache
	writer     *Writer
	reconciles reconcileMetrics
	synced     atomic.Bool
}

// NewManager returns a Manager; nothing runs before Run.
func NewManager(logger *slog.Logger, reg prometheus.Registerer, opts Options) (*Manager, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.Config == nil {
		return nil, errors.New("new controller: no API server config")
	}
	scheme := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme}, opts.AddToScheme...) {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("new controller: %w", err)
		}
	}
	mo, err := managerOptions(logger, scheme, opts)
	if err != nil {
		return nil, fmt.Errorf("new controller: %w", err)
	}
	mgr, err := manager.New(opts.Config, mo)
	if err != nil {
		return nil, fmt.Errorf("new controller: %w", err)
	}

	// The ConfigMaps a kind references (spec.web.tlsConfig) are the
	// user's, which the manager's cache, that holds the controller's own,
	// never sees: a cache of ConfigMaps' metadata, apart, tells when one
	// changes. Their content is read from the API server when an object
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
	w := newWriter(logger, reg, mgr.GetClient(), mgr.GetAPIReader(), scheme)
	return &Manager{Manager: mgr, configMaps: configMaps, writer: w, reconciles: newReconcileMetrics(reg)}, nil
}

// Writer is the Writer of every kind.
func (m *Manager) Writer() *Writer { return m.writer }

// ConfigMaps is the cache of the metadata of every ConfigMap (of the
// namespaces watched), for the watches of the ConfigMaps a kind
// references.
func (m *Manager) ConfigMaps() cache.Cache { return m.configMaps }

// managerOptions configures controller-runtime's manager: what it caches,
// how it elects a leader, and no servers of its own.
func managerOptions(logger *slog.Logger, scheme *runtime.Scheme, opts Options) (manager.Options, error) {
	namespaces := cacheNamespaces(opts)
	// Only the ConfigMaps, Services, StatefulSets, DaemonSets, Roles,
	// RoleBindings and pods of the managed kinds are cached, not every one of the cluster.
	// Of Secrets, which hold the biggest objects of many clusters, only the
	// metadata is cached (to know when one changes): the ones an object
	// references, and its config Secret, are read from the API server when
	// it is reconciled.
	names, err := labels.NewRequirement(LabelName, selection.In, opts.Names)
	if err != nil {
		return manager.Options{}, err
	}
	ours := cache.ByObject{Label: labels.NewSelector().Add(*names)}
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
				&appsv1.DaemonSet{}:   ours,
				&rbacv1.Role{}:        ours,
				&rbacv1.RoleBinding{}: ours,
				&corev1.Pod{}:         ours,
			},
		},
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		// Served by the caller, from its registry and ctrlmetrics.Registry.
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        id,
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		// Not released on the way out: client-go releases the Lease when
		// its leader stops for any reason, also when it failed to renew
		// it, and only then tells the manager, which stops the
		// controllers. Cut off from the API server, the release's
		// request waits for its timeout (half the renew deadline): the
		// controllers of a partitioned leader ran on past the end of the
		// Lease (17 s after the last renewal with the default 15 s
		// Lease), while another replica led (TestHandoff, e2e/handoff).
		// Without it they stop at the renew deadline; a replica stopped
		// on purpose leaves the Lease to expire.
		LeaderElectionReleaseOnCancel: false,
		LeaseDuration:                 nonZero(opts.LeaderElectionTiming.LeaseDuration),
		RenewDeadline:                 nonZero(opts.LeaderElectionTiming.RenewDeadline),
		RetryPeriod:                   nonZero(opts.LeaderElectionTiming.RetryPeriod),
		// Several controllers run in one test binary.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}, nil
}

// nonZero returns a pointer to d, nil when d is 0: controller-runtime's
// default then.
func nonZero(d time.Duration) *time.Duration {
	if d == 0 {
		return nil
	}
	return &d
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

// Run runs the manager until ctx is done. It returns an error when the
// controller cannot start or loses its leader Lease.
func (m *Manager) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		if m.GetCache().WaitForCacheSync(ctx) {
			m.synced.Store(true)
		}
	})
	if err := m.Start(ctx); err != nil {
		return fmt.Errorf("run controller: %w", err)
	}
	return nil
}

// Ready returns nil once the manager's caches hold the cluster's state.
func (m *Manager) Ready() error {
	if !m.synced.Load() {
		return errors.New("not ready: caches not synced")
	}
	return nil
}
