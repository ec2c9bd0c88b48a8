package e2e

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDemo is what `make demo` runs: a narrated tour of a Prometheus pod on
// loopback whose volumes the kubelet's atomic writer updates. It asserts
// every state it prints, so it is a test like the others.
func TestDemo(t *testing.T) {
	say := func(format string, args ...any) { fmt.Fprintf(os.Stdout, format+"\n", args...) }
	show := func(p *pod) {
		got, err := p.observe()
		require.NoError(t, err)
		reloads, err := p.sidecarMetric("reloader_reloads_total")
		require.NoError(t, err)
		failed, err := p.sidecarMetric("reloader_reloads_failed_total")
		require.NoError(t, err)
		ok, err := metric(t.Context(), p.promURL+"/metrics", "prometheus_config_last_reload_successful")
		require.NoError(t, err)
		say("    Prometheus reports: external_labels {replica=%q, version=%q}", got.replica, got.version)
		say("    Prometheus reports: rule groups %v", got.rules)
		say("    Prometheus reports: prometheus_config_last_reload_successful %v", ok)
		say("    config-reloader: %v reload request(s), %v failed (Prometheus still starting)", reloads, failed)
	}
	step := func(p *pod, title string, want state) {
		say("\n==> %s", title)
		before, err := p.sidecarMetric("reloader_reloads_total")
		require.NoError(t, err)
		start := time.Now()
		p.apply(want)
		p.waitFor(want, before)
		say("    arrived in %v (kubelet swap to Prometheus serving it, polled every 20ms)", time.Since(start).Round(time.Millisecond))
		show(p)
	}

	say("==> Starting a pod on loopback: init config-reloader, Prometheus, config-reloader sidecar")
	say("    config volume: prometheus.yaml.gz (gzipped, replica: $(POD_NAME)); rules volume: one file per group")
	initial := state{podName, "v1", map[string][]string{"availability": {"job:up:sum"}}}
	p := newPod(t, podOptions{}, initial)
	say("    Prometheus %s, sidecar %s", p.promURL, p.sidecarURL)
	show(p)

	step(p, "Swapping the rules volume: a new rule", state{podName, "v1", map[string][]string{
		"availability": {"job:up:sum", "job:up:avg"}}})
	step(p, "Swapping the rules volume: a second rule file", state{podName, "v1", map[string][]string{
		"availability": {"job:up:sum", "job:up:avg"}, "latency": {"job:latency:p99"}}})
	step(p, "Swapping the config volume: external label version v1 -> v2", state{podName, "v2", map[string][]string{
		"availability": {"job:up:sum", "job:up:avg"}, "latency": {"job:latency:p99"}}})
	say("\n==> Done: stopping Prometheus and the sidecar")
}
