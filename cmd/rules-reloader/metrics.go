package main

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// webhookMetrics are configmap-reload's metrics, by webhook.
type webhookMetrics struct {
	requests, errors, successes *prometheus.CounterVec
	lastError, lastDuration     *prometheus.GaugeVec
}

func newWebhookMetrics(reg prometheus.Registerer) webhookMetrics {
	f := promauto.With(reg)
	return webhookMetrics{
		requests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "configmap_reload_requests_total", Help: "Total requests by response status code.",
		}, []string{"webhook", "status_code"}),
		errors: f.NewCounterVec(prometheus.CounterOpts{
			Name: "configmap_reload_request_errors_total", Help: "Total request errors by reason.",
		}, []string{"webhook", "reason"}),
		successes: f.NewCounterVec(prometheus.CounterOpts{
			Name: "configmap_reload_success_reloads_total", Help: "Total success reload calls.",
		}, []string{"webhook"}),
		lastError: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "configmap_reload_last_reload_error", Help: "Whether the last reload resulted in an error (1 for error, 0 for success).",
		}, []string{"webhook"}),
		lastDuration: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "configmap_reload_last_request_duration_seconds", Help: "Duration of the last webhook request.",
		}, []string{"webhook"}),
	}
}

func (m webhookMetrics) observe(webhook string) func(int, time.Duration, error) {
	return func(status int, d time.Duration, err error) {
		if status != 0 {
			m.requests.WithLabelValues(webhook, strconv.Itoa(status)).Inc()
		}
		switch {
		case err != nil && status == 0:
			m.errors.WithLabelValues(webhook, "client_request_do").Inc()
		case err != nil:
			m.errors.WithLabelValues(webhook, "client_response").Inc()
		default:
			m.successes.WithLabelValues(webhook).Inc()
			m.lastDuration.WithLabelValues(webhook).Set(d.Seconds())
		}
		if err != nil {
			m.lastError.WithLabelValues(webhook).Set(1)
		} else {
			m.lastError.WithLabelValues(webhook).Set(0)
		}
	}
}
