package collect

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// metrics are the collector's: the reload requests under the names the
// other podreload sidecars use, so that their dashboards and alerts work,
// and what is watched and written under collector_*.
type metrics struct {
	reloads, reloadsFailed          prometheus.Counter
	lastSuccess, lastSuccessSeconds prometheus.Gauge
	scripts, scriptsFailed          prometheus.Counter
	objects                         *prometheus.GaugeVec
	files                           prometheus.Gauge
	fileWrites, fileRemovals        prometheus.Counter
	fileErrors, urlErrors           prometheus.Counter
	watches                         prometheus.Gauge
	watchRestarts, watchEvents      *prometheus.CounterVec
	lists                           prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg)
	return &metrics{
		reloads: f.NewCounter(prometheus.CounterOpts{
			Name: "reloader_reloads_total",
			Help: "Total number of reload requests sent to REQ_URL, one per burst of changes.",
		}),
		reloadsFailed: f.NewCounter(prometheus.CounterOpts{
			Name: "reloader_reloads_failed_total",
			Help: "Total number of reload requests that failed after their retries.",
		}),
		lastSuccess: f.NewGauge(prometheus.GaugeOpts{
			Name: "reloader_last_reload_successful",
			Help: "Whether the last reload request succeeded.",
		}),
		lastSuccessSeconds: f.NewGauge(prometheus.GaugeOpts{
			Name: "reloader_last_reload_success_timestamp_seconds",
			Help: "Timestamp of the last successful reload request.",
		}),
		scripts: f.NewCounter(prometheus.CounterOpts{
			Name: "collector_script_runs_total",
			Help: "Total number of runs of SCRIPT, one per burst of changes.",
		}),
		scriptsFailed: f.NewCounter(prometheus.CounterOpts{
			Name: "collector_script_runs_failed_total",
			Help: "Total number of runs of SCRIPT that failed.",
		}),
		objects: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "collector_objects",
			Help: "ConfigMaps and Secrets watched, by resource.",
		}, []string{"resource"}),
		files: f.NewGauge(prometheus.GaugeOpts{
			Name: "collector_files",
			Help: "Files the collector keeps on disk.",
		}),
		fileWrites: f.NewCounter(prometheus.CounterOpts{
			Name: "collector_file_writes_total",
			Help: "Total number of files written.",
		}),
		fileRemovals: f.NewCounter(prometheus.CounterOpts{
			Name: "collector_file_removals_total",
			Help: "Total number of files removed.",
		}),
		fileErrors: f.NewCounter(prometheus.CounterOpts{
			Name: "collector_file_errors_total",
			Help: "Total number of files that could not be written or removed.",
		}),
		urlErrors: f.NewCounter(prometheus.CounterOpts{
			Name: "collector_url_errors_total",
			Help: "Total number of .url keys whose content could not be fetched.",
		}),
		watches: f.NewGauge(prometheus.GaugeOpts{
			Name: "collector_watches",
			Help: "Watches of the API server established.",
		}),
		watchRestarts: f.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_watch_restarts_total",
			Help: "Total number of watches started again, by reason: ended (by the server, resumed), expired (410, listed again), error, silent (no event within WATCH_CLIENT_TIMEOUT).",
		}, []string{"reason"}),
		watchEvents: f.NewCounterVec(prometheus.CounterOpts{
			Name: "collector_watch_events_total",
			Help: "Total number of watch events received, by type.",
		}, []string{"type"}),
		lists: f.NewCounter(prometheus.CounterOpts{
			Name: "collector_lists_total",
			Help: "Total number of full lists of the objects watched.",
		}),
	}
}
