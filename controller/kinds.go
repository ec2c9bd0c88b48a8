package controller

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podreload/podreload/controller/alertmanager"
	"github.com/podreload/podreload/controller/kube"
	promserver "github.com/podreload/podreload/controller/prometheus"
)

// kind is a managed kind: the package that renders and reconciles it, and
// what the manager needs to know of it.
type kind struct {
	// name is the value of kube.LabelName on the objects the kind writes.
	name string
	// addToScheme adds the types the kind reconciles and watches.
	addToScheme func(*runtime.Scheme) error
	// setup sets up the kind's reconciler with the manager.
	setup func(*kube.Manager, *slog.Logger, prometheus.Registerer, Options) error
}

// kinds are the managed kinds: a new kind is a package of its own and a
// line here (docs/adding-a-kind.md).
func kinds() []kind {
	return []kind{
		{name: promserver.App, addToScheme: promserver.AddToScheme, setup: func(m *kube.Manager, logger *slog.Logger, reg prometheus.Registerer, opts Options) error {
			return promserver.Setup(m, logger, reg, opts.Prometheus, opts.TakeOver)
		}},
		{name: alertmanager.App, addToScheme: alertmanager.AddToScheme, setup: func(m *kube.Manager, logger *slog.Logger, reg prometheus.Registerer, opts Options) error {
			if opts.TakeOver == nil {
				return nil
			}
			return alertmanager.Setup(m, logger, reg, alertmanager.Options{ControllerID: opts.TakeOver.ControllerID, ReloaderImage: opts.Prometheus.DefaultReloaderImage})
		}},
	}
}
