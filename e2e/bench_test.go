package e2e

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/internal/testenv/docsection"
)

// benchDocsEnv names the Markdown file whose "pipeline" section
// BenchmarkPipeline rewrites with its figures (make bench sets it).
const benchDocsEnv = "PODRELOAD_BENCH_DOCS"

// BenchmarkPipeline times 50 PrometheusRule updates from the API server
// accepting them to Prometheus serving them, through the whole pipeline
// of TestPipeline, stage by stage. Run it once: -benchtime=1x.
func BenchmarkPipeline(b *testing.B) {
	e := startExample(b)
	want := map[string][]string{"example": {"job:up:sum", "ExampleTargetDown"}}
	e.waitGroups(b, "example rules", want)
	const (
		changes = 50
		pace    = 250 * time.Millisecond
	)
	var runs []timing
	for b.Loop() {
		runs = runs[:0]
		for i := range changes {
			// Isolated changes: the config-reloader coalesces the
			// changes that come within its quiet window (100 ms) of a
			// reload into one trailing reload.
			time.Sleep(pace)
			name := fmt.Sprintf("job:bench:%d", i)
			runs = append(runs, e.timeRuleChange(b, func() {
				e.editRule(b, "example-rules", func(r *monitoringv1.PrometheusRule) {
					r.Spec.Groups[0].Rules[0].Record = name
				})
			}, map[string][]string{"example": {name, "ExampleTargetDown"}}))
		}
	}
	totals := make([]time.Duration, len(runs))
	for i, r := range runs {
		totals[i] = r.total
	}
	slices.Sort(totals)
	p50, p99 := totals[len(totals)/2], totals[len(totals)*99/100]
	b.ReportMetric(float64(p50)/1e6, "p50-ms")
	b.ReportMetric(float64(p99)/1e6, "p99-ms")
	section := pipelineSection(runs, p50, p99)
	b.Log("\n" + section)
	if path := os.Getenv(benchDocsEnv); path != "" {
		require.NoError(b, docsection.Replace(path, "pipeline", "e2e/bench_test.go", section))
	}
}

// pipelineSection is the Markdown of the figures of runs.
func pipelineSection(runs []timing, p50, p99 time.Duration) string {
	var sum timing
	for _, r := range runs {
		sum.total += r.total
		sum.controller += r.controller
		sum.projection += r.projection
		sum.write += r.write
		sum.reload += r.reload
		sum.serve += r.serve
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	n := time.Duration(len(runs))
	share := func(d time.Duration) string { return fmt.Sprintf("%.0f%%", 100*float64(d)/float64(sum.total)) }
	var w strings.Builder
	fmt.Fprintf(&w, "## Whole pipeline: PrometheusRule update to Prometheus serving it\n\n")
	fmt.Fprintf(&w, "%d updates of the example PrometheusRule (deploy/example), each timed from the API server\n", len(runs))
	fmt.Fprintf(&w, "accepting it to Prometheus' `/api/v1/rules` serving the new rule (polled every millisecond), on this\n")
	fmt.Fprintf(&w, "2-core machine: a real kube-apiserver and etcd, the controller binary, and the pod it renders run on\n")
	fmt.Fprintf(&w, "loopback from its StatefulSet, with the API source (the default): the config-reloader sidecar watches\n")
	fmt.Fprintf(&w, "the rule ConfigMaps as the pod's service account and reloads a real Prometheus (e2e/bench_test.go,\n")
	fmt.Fprintf(&w, "`make bench`). The updates are 250 ms apart: the config-reloader reloads at once for the first change\n")
	fmt.Fprintf(&w, "after a quiet 100 ms, and folds the changes that come closer into one trailing reload.\n\n")
	fmt.Fprintf(&w, "| p50 | p99 | target p99 |\n|---|---|---|\n| %s | %s | < 1 s: %s |\n\n", ms(p50), ms(p99), map[bool]string{true: "met", false: "missed"}[p99 < time.Second])
	fmt.Fprintf(&w, "| stage | mean | share |\n|---|---|---|\n")
	for _, s := range []struct {
		name string
		d    time.Duration
	}{
		{"controller: update accepted to rule ConfigMap written (seen by a watch)", sum.controller},
		{"config-reloader: ConfigMap written to reload request sent (its watch event, the rule file written)", sum.projection},
		{"Prometheus reload: the reload request", sum.reload},
		{"serving: reload done to the API poll seeing it", sum.serve},
	} {
		fmt.Fprintf(&w, "| %s | %s | %s |\n", s.name, ms(s.d/n), share(s.d))
	}
	fmt.Fprintf(&w, "\nThrough volumes (`spec.reloader.source: volume`) the kubelet adds its own delay: it rewrites a\n")
	fmt.Fprintf(&w, "pod's Secret and ConfigMap volumes on its periodic pod sync (`--sync-frequency`, 1 minute by default,\n")
	fmt.Fprintf(&w, "plus jitter), so a change lands in the pod 0 to 90 s later: see the node's figures below.\n")
	return w.String()
}
