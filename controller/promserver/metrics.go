package promserver

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podreload/podreload/controller/kube"
)

// metrics are the metrics of the reconcilers of PrometheusServers and of
// Prometheus objects taken over: the reconciles' are each kind's
// (forKind), the rest theirs alike.
type metrics struct {
	reconciles, Errors prometheus.Counter
	duration           prometheus.Observer
	triggers           *prometheus.CounterVec
	Selected, Rejected *prometheus.GaugeVec
	ConfigApplied      *prometheus.GaugeVec
	applySeconds       prometheus.Histogram
}

// forKind returns m with the reconciles of kind (kube.Reconciles).
func (m *metrics) forKind(mgr *kube.Manager, kind string) *metrics {
	c := *m
	runs := mgr.Reconciles(kind)
	c.reconciles, c.Errors, c.duration = runs.Total, runs.Errors, runs.Duration
	return &c
}

// newMetrics returns the metrics registered with reg; the kinds that run
// Prometheus share them, and the second to ask gets the first's
// (kube.Registered).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		triggers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "podreload_controller_triggers_total",
			Help: "Reconciliations asked for by a change to an object of this kind, one per PrometheusServer concerned.",
		}, []string{"kind"}),
		Selected: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "podreload_controller_selected_resources",
			Help: "Objects a PrometheusServer selects, rejected ones included.",
		}, []string{"namespace", "name", "kind"}),
		ConfigApplied: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "podreload_controller_config_applied",
			Help: "Whether every ready replica of a PrometheusServer runs the configuration and rules last written (its ConfigApplied condition).",
		}, []string{"namespace", "name"}),
		applySeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:                            "podreload_controller_config_apply_seconds",
			Help:                            "Seconds from the controller writing new configuration or rules to every ready replica of the PrometheusServer reporting it runs them.",
			Buckets:                         []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300},
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  100,
			NativeHistogramMinResetDuration: time.Hour,
		}),
		Rejected: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "podreload_controller_rejected_resources",
			Help: "Selected objects left out of a PrometheusServer's configuration because they are invalid.",
		}, []string{"namespace", "name", "kind"}),
	}
	var err error
	if m.triggers, err = kube.Registered(reg, m.triggers); err != nil {
		return nil, err
	}
	if m.Selected, err = kube.Registered(reg, m.Selected); err != nil {
		return nil, err
	}
	if m.Rejected, err = kube.Registered(reg, m.Rejected); err != nil {
		return nil, err
	}
	if m.ConfigApplied, err = kube.Registered(reg, m.ConfigApplied); err != nil {
		return nil, err
	}
	if m.applySeconds, err = kube.Registered(reg, m.applySeconds); err != nil {
		return nil, err
	}
	return m, nil
}
