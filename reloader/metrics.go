package reloader

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

type metrics struct {
	reloads, reloadsFailed          prometheus.Counter
	lastSuccess, lastSuccessSeconds prometheus.Gauge
	applies, appliesFailed          prometheus.Counter
	rejected                        prometheus.Counter
	expansionErrors                 prometheus.Gauge
	watches                         prometheus.Gauge
	events, watchErrors             prometheus.Counter
	duration                        prometheus.Histogram
	leftOut, heldBack               *prometheus.GaugeVec
	stateErrors                     prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) metrics {
	f := promauto.With(reg)
	return metrics{
		reloads: f.NewCounter(prometheus.CounterOpts{
			Name: "reloader_reloads_total",
			Help: "Total number of reload requests.",
		}),
		reloadsFailed: f.NewCounter(prometheus.CounterOpts{
			Name: "reloader_reloads_failed_total",
			Help: "Total number of reload requests that failed.",
		}),
		lastSuccess: f.NewGauge(prometheus.GaugeOpts{
			Name: "reloader_last_reload_successful",
			Help: "Whether the last reload attempt was successful.",
		}),
		lastSuccessSeconds: f.NewGauge(prometheus.GaugeOpts{
			Name: "reloader_last_reload_success_timestamp_seconds",
			Help: "Timestamp of the last successful reload.",
		}),
		rejected: f.NewCounter(prometheus.CounterOpts{
			Name: "reloader_reloads_rejected_total",
			Help: "Total number of reload requests the process answered by refusing the new configuration (a subset of reloader_reloads_failed_total).",
		}),
		applies: f.NewCounter(prometheus.CounterOpts{
			Name: "reloader_config_apply_operations_total",
			Help: "Total number of times the watched files were read and the configuration rendered.",
		}),
		appliesFailed: f.NewCounter(prometheus.CounterOpts{
			Name: "reloader_config_apply_operations_failed_total",
			Help: "Total number of times reading the watched files or rendering the configuration failed.",
		}),
		expansionErrors: f.NewGauge(prometheus.GaugeOpts{
			Name: "reloader_config_environment_variable_expansion_errors",
			Help: "Number of environment variable references that could not be expanded in the last render.",
		}),
		watches: f.NewGauge(prometheus.GaugeOpts{
			Name: "reloader_watches",
			Help: "Number of directories watched.",
		}),
		events: f.NewCounter(prometheus.CounterOpts{
			Name: "reloader_watch_events_total",
			Help: "Total number of file system events received.",
		}),
		watchErrors: f.NewCounter(prometheus.CounterOpts{
			Name: "reloader_watch_errors_total",
			Help: "Total number of errors from the file system watcher.",
		}),
		duration: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "reloader_reload_duration_seconds",
			Help:    "Duration of reload requests, successful or not.",
			Buckets: []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		leftOut: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reloader_files_left_out",
			Help: "Number of input files the last apply left out, by reason: unreadable (a symlink loop, a named pipe, a socket, a device, no read permission) or invalid_name (a ConfigMap key the rules dir cannot hold, such as one starting with a dot); the rest applied without them.",
		}, []string{"reason"}),
		heldBack: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reloader_inputs_held_back",
			Help: "Number of inputs the last apply held back, their previous version kept, by reason: empty (a configuration or rule file holding nothing but whitespace where its last version had content).",
		}, []string{"reason"}),
		stateErrors: f.NewCounter(prometheus.CounterOpts{
			Name: "reloader_state_errors_total",
			Help: "Total number of failed reads and writes of the last accepted state kept in the state directory.",
		}),
	}
}
