package controller

import (
	"log/slog"

	promkind "github.com/podreload/podreload/controller/prometheus"
	"github.com/podreload/podreload/controller/prometheusagent"
	"github.com/podreload/podreload/controller/prometheusserver"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podreload/podreload/controller/alertmanager"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/takeover"
)

// kind is a managed kind: the package that renders and reconciles it, and
// what the manager and `controller takeover-check` need to know of it.
type kind struct {
	// name is the value of kube.LabelName on the objects the kind writes.
	name string
	// addToScheme adds the types the kind reconciles and watches.
	addToScheme func(*runtime.Scheme) error
	// setup sets up the kind's reconciler with the manager.
	setup func(*kube.Manager, *slog.Logger, prometheus.Registerer, Options) error
	// check, for a kind taken over from prometheus-operator, tells what
	// taking over its objects would do; nil for a kind of ours alone.
	check func() takeover.Checker
}

// kinds are the managed kinds: a new kind is a package of its own and a
// line here (docs/adding-a-kind.md).
func kinds() []kind {
	return []kind{
		{name: promserver.App, addToScheme: promserver.AddToScheme, setup: func(m *kube.Manager, logger *slog.Logger, reg prometheus.Registerer, opts Options) error {
			return prometheusserver.Setup(m, logger, reg, opts.prometheusWorkload())
		}},
		{name: promserver.App, addToScheme: promserver.AddToScheme, check: promkind.Checker, setup: func(m *kube.Manager, logger *slog.Logger, reg prometheus.Registerer, opts Options) error {
			if opts.TakeOver == nil {
				return nil
			}
			return promkind.Setup(m, logger, reg, opts.prometheusWorkload(), *opts.TakeOver)
		}},
		{name: promserver.AgentApp, addToScheme: promserver.AddToScheme, check: prometheusagent.Checker, setup: func(m *kube.Manager, logger *slog.Logger, reg prometheus.Registerer, opts Options) error {
			if opts.TakeOver == nil {
				return nil
			}
			return prometheusagent.Setup(m, logger, reg, opts.prometheusWorkload(), *opts.TakeOver)
		}},
		{name: alertmanager.App, addToScheme: alertmanager.AddToScheme, check: alertmanager.Checker, setup: func(m *kube.Manager, logger *slog.Logger, reg prometheus.Registerer, opts Options) error {
			if opts.TakeOver == nil {
				return nil
			}
			return alertmanager.Setup(m, logger, reg, alertmanager.Options{ControllerID: opts.TakeOver.ControllerID, ReloaderImage: opts.ReloaderImage})
		}},
	}
}

// prometheusWorkload is what the kinds that run Prometheus render their
// workloads with: the controller's options, with its reloader image.
func (o Options) prometheusWorkload() promserver.WorkloadOptions {
	wo := o.Prometheus
	wo.DefaultReloaderImage = o.ReloaderImage
	return wo
}

// TakeoverCheckers are the Checkers of the kinds taken over, in the
// order of the table of kinds.
func TakeoverCheckers() []takeover.Checker {
	var out []takeover.Checker
	for _, k := range kinds() {
		if k.check != nil {
			out = append(out, k.check())
		}
	}
	return out
}

// AddToScheme adds the types of every managed kind to s.
func AddToScheme(s *runtime.Scheme) error {
	for _, k := range kinds() {
		if err := k.addToScheme(s); err != nil {
			return err
		}
	}
	return nil
}
