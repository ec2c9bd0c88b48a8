package prometheus

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// metrics are the metrics of the reconciler of PrometheusServers.
type metrics struct {
	reconciles, errors prometheus.Counter
	duration           prometheus.Histogram
	triggers           *prometheus.CounterVec
	selected, rejected *prometheus.GaugeVec
	configApplied      *prometheus.GaugeVec
	applySeconds       prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg)
	return &metrics{
		reconciles: f.NewCounter(prometheus.CounterOpts{
			Name: "podreload_controller_reconciles_total",
			Help: "PrometheusServer reconciliations: renders, a burst of events coalesced into one; a status update from the pods' reports alone is not one.",
		}),
		errors: f.NewCounter(prometheus.CounterOpts{
			Name: "podreload_controller_reconcile_errors_total",
			Help: "PrometheusServer reconciliations that failed: retried, or, for an invalid PrometheusServer, done again when it changes.",
		}),
		duration: f.NewHistogram(prometheus.HistogramOpts{
			Name:                            "podreload_controller_reconcile_duration_seconds",
			Help:                            "Duration of PrometheusServer reconciliations.",
			Buckets:                         prometheus.ExponentialBuckets(0.001, 4, 8),
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  100,
			NativeHistogramMinResetDuration: time.Hour,
		}),
		triggers: f.NewCounterVec(prometheus.CounterOpts{
			Name: "podreload_controller_triggers_total",
			Help: "Reconciliations asked for by a change to an object of this kind, one per PrometheusServer concerned.",
		}, []string{"kind"}),
		selected: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "podreload_controller_selected_resources",
			Help: "Objects a PrometheusServer selects, rejected ones included.",
		}, []string{"namespace", "name", "kind"}),
		configApplied: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "podreload_controller_config_applied",
			Help: "Whether every ready replica of a PrometheusServer runs the configuration and rules last written (its ConfigApplied condition).",
		}, []string{"namespace", "name"}),
		applySeconds: f.NewHistogram(prometheus.HistogramOpts{
			Name:                            "podreload_controller_config_apply_seconds",
			Help:                            "Seconds from the controller writing new configuration or rules to every ready replica of the PrometheusServer reporting it runs them.",
			Buckets:                         []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300},
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  100,
			NativeHistogramMinResetDuration: time.Hour,
		}),
		rejected: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "podreload_controller_rejected_resources",
			Help: "Selected objects left out of a PrometheusServer's configuration because they are invalid.",
		}, []string{"namespace", "name", "kind"}),
	}
}
