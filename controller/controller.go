package controller

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/takeover"
)

// Name is the controller's name: the field manager of its writes and the
// reporting controller of its Events.
const Name = kube.Name

// Options configure a Controller.
type Options struct {
	// Config reaches the API server.
	Config *rest.Config
	// Namespaces limits the controller to the PrometheusServers, monitors,
	// probes, scrape configurations, rules and Secrets of these namespaces; empty means every namespace.
	Namespaces []string
	// Prometheus are the controller-wide inputs of the workloads of
	// PrometheusServers (the default Prometheus image); RuleShards is
	// ignored, and DefaultReloaderImage is ReloaderImage.
	Prometheus promserver.WorkloadOptions
	// ReloaderImage is the config-reloader's image in the pods of every
	// kind.
	ReloaderImage string
	// TakeOver, when not nil, reconciles prometheus-operator's Prometheus
	// and Alertmanager objects handed to TakeOver.ControllerID besides
	// PrometheusServers (docs/takeover.md, docs/takeover-alertmanager.md).
	TakeOver *takeover.Options
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
	LeaderElectionTiming kube.LeaderElectionTiming
	// SyncPeriod is how often every managed object is reconciled even
	// when nothing changed; 0 means controller-runtime's default (10h).
	SyncPeriod time.Duration
}

// Controller reconciles the managed kinds (kinds): for each, it watches
// its objects, what they select or reference and the objects it writes
// for them, and makes those objects match what the kind renders.
type Controller struct {
	mgr *kube.Manager
}

// New returns a Controller; nothing runs before Run. A nil logger discards
// the logs.
func New(logger *slog.Logger, reg prometheus.Registerer, opts Options) (*Controller, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	mo := kube.Options{
		Config:                  opts.Config,
		Namespaces:              opts.Namespaces,
		LeaderElection:          opts.LeaderElection,
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		LeaderElectionID:        opts.LeaderElectionID,
		LeaderElectionTiming:    opts.LeaderElectionTiming,
		SyncPeriod:              opts.SyncPeriod,
	}
	for _, k := range kinds() {
		if !slices.Contains(mo.Names, k.name) {
			mo.Names = append(mo.Names, k.name)
		}
		mo.AddToScheme = append(mo.AddToScheme, k.addToScheme)
	}
	mgr, err := kube.NewManager(logger, reg, mo)
	if err != nil {
		return nil, err
	}
	for _, k := range kinds() {
		if err := k.setup(mgr, logger, reg, opts); err != nil {
			return nil, fmt.Errorf("new controller: %w", err)
		}
	}
	return &Controller{mgr: mgr}, nil
}

// Run runs the controller until ctx is done. It returns an error when the
// controller cannot start or loses its leader Lease.
func (c *Controller) Run(ctx context.Context) error { return c.mgr.Run(ctx) }

// Ready returns nil once the controller's caches hold the cluster's state.
func (c *Controller) Ready() error { return c.mgr.Ready() }
