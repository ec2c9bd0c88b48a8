package kube

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// reconcileMetrics are the families of every kind's reconciles, by the
// kind label: one family each, whatever the kind.
type reconcileMetrics struct {
	total, errors *prometheus.CounterVec
	duration      *prometheus.HistogramVec
}

func newReconcileMetrics(reg prometheus.Registerer) reconcileMetrics {
	f := promauto.With(reg)
	return reconcileMetrics{
		total: f.NewCounterVec(prometheus.CounterOpts{
			Name: "podreload_controller_reconciles_total",
			Help: "Reconciliations, by the kind reconciled: renders, a burst of events coalesced into one; a status update from the pods' reports alone is not one.",
		}, []string{"kind"}),
		errors: f.NewCounterVec(prometheus.CounterOpts{
			Name: "podreload_controller_reconcile_errors_total",
			Help: "Reconciliations that failed and are retried, and objects not rendered as their spec says (invalid, refused, a configuration that does not load or does not fit), by kind.",
		}, []string{"kind"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:                            "podreload_controller_reconcile_duration_seconds",
			Help:                            "Duration of reconciliations, by kind.",
			Buckets:                         prometheus.ExponentialBuckets(0.001, 4, 8),
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  100,
			NativeHistogramMinResetDuration: time.Hour,
		}, []string{"kind"}),
	}
}

// Reconciles are the metrics of the reconciles of one kind.
type Reconciles struct {
	// Total counts the reconciles.
	Total prometheus.Counter
	// Errors counts those that failed, and the objects not rendered as
	// their spec says.
	Errors prometheus.Counter
	// Duration observes how long each took, in seconds.
	Duration prometheus.Observer
}

// Reconciles returns the metrics of the reconciles of kind, the kind
// reconciled ("Alertmanager", say); they are exported from then on, at 0.
func (m *Manager) Reconciles(kind string) Reconciles {
	return Reconciles{
		Total:    m.reconciles.total.WithLabelValues(kind),
		Errors:   m.reconciles.errors.WithLabelValues(kind),
		Duration: m.reconciles.duration.WithLabelValues(kind),
	}
}

// Registered registers c with reg, or returns the collector of the same
// description registered before it: the metrics several kinds'
// reconcilers share (those of the kinds that run Prometheus), which the
// second to ask gets from the first. A nil reg registers nothing.
func Registered[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if reg == nil {
		return c, nil
	}
	err := reg.Register(c)
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	if err != nil {
		var zero C
		return zero, fmt.Errorf("register the metrics the kinds share: %w", err)
	}
	return c, nil
}
