package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/internal/testenv/docsection"
)

// BenchmarkAppliedStatus times, through the whole pipeline of
// TestPipeline, Prometheus accepting a reload (its
// prometheus_config_last_reload_success_timestamp_seconds) to a watch of
// the PrometheusServer seeing its status say so: ConfigApplied True for
// the new content, the pod running it. It counts the status writes the API
// server served (its apiserver_request_total), per change and while
// nothing changes. Run it once: -benchtime=1x.
func BenchmarkAppliedStatus(b *testing.B) {
	e := startExample(b)
	applied := e.waitApplied(b, "the example", "")
	const (
		edits = 20
		pace  = 250 * time.Millisecond // Isolated changes: see BenchmarkPipeline.
		quiet = 5 * time.Second
	)
	var (
		latencies []time.Duration
		writes    []int
		conflicts []int
		idle      int
	)
	for b.Loop() {
		latencies, writes, conflicts = latencies[:0], writes[:0], conflicts[:0]
		for i := range edits {
			time.Sleep(pace)
			before, conflictsBefore := e.cl.statusWrites(b, "200"), e.cl.statusWrites(b, "409")
			hash, seen := e.timeApplied(b, applied, func() {
				e.editRule(b, "example-rules", func(r *monitoringv1.PrometheusRule) {
					r.Spec.Groups[0].Rules[0].Record = fmt.Sprintf("job:applied_bench:%d", i)
				})
			})
			reloaded, err := metric(b.Context(), e.promURL+"/metrics", "prometheus_config_last_reload_success_timestamp_seconds")
			require.NoError(b, err)
			latencies = append(latencies, seen.Sub(time.Unix(0, int64(reloaded*1e9))))
			applied = hash
			// The writes of this change have all been made once the status
			// says it is applied: the last one is that.
			writes = append(writes, e.cl.statusWrites(b, "200")-before)
			conflicts = append(conflicts, e.cl.statusWrites(b, "409")-conflictsBefore)
			// The status showing the change is a write: none counted is a
			// count gone wrong, not a figure.
			require.Positive(b, writes[len(writes)-1], "status writes counted for change %d", i)
		}
		before := e.cl.statusWrites(b, "200")
		time.Sleep(quiet)
		idle = e.cl.statusWrites(b, "200") - before
	}
	sorted := slices.Sorted(slices.Values(latencies))
	p50, p99 := sorted[len(sorted)/2], sorted[len(sorted)*99/100]
	b.ReportMetric(float64(p50)/1e6, "p50-ms")
	b.ReportMetric(float64(p99)/1e6, "p99-ms")
	section := appliedSection(p50, p99, writes, conflicts, idle, quiet)
	b.Log("\n" + section)
	if path := os.Getenv(benchDocsEnv); path != "" {
		require.NoError(b, docsection.Replace(path, "applied-status", "e2e/bench_test.go", section))
	}
}

// timeApplied makes change and returns the content hash the
// PrometheusServer then says every replica runs, other than before, and
// when a watch saw the status say so.
func (e *examplePipeline) timeApplied(b *testing.B, before string, change func()) (string, time.Time) {
	b.Helper()
	w, err := e.cl.c.Watch(b.Context(), &v1alpha1.PrometheusServerList{}, client.InNamespace("default"))
	require.NoError(b, err)
	defer w.Stop()
	change()
	timeout := time.After(deadline)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			require.True(b, ok, "the watch of PrometheusServers ended")
			srv, isServer := ev.Object.(*v1alpha1.PrometheusServer)
			if ev.Type != watch.Modified || !isServer || srv.Name != "example" {
				continue
			}
			st := srv.Status
			if st.ContentHash != before && meta.IsStatusConditionTrue(st.Conditions, "ConfigApplied") &&
				len(st.ReplicaStatuses) == 1 && st.ReplicaStatuses[0].AppliedHash == st.ContentHash {
				return st.ContentHash, time.Now()
			}
		case <-timeout:
			b.Fatalf("the status did not say the change was applied within %s", deadline)
		}
	}
}

// statusWrites returns the writes of PrometheusServer statuses the API
// server has answered with code: 200, made; 409, refused on a conflict
// (the controller's cache behind its own last write), retried.
func (cl *cluster) statusWrites(b *testing.B, code string) int {
	b.Helper()
	hc, err := rest.HTTPClientFor(cl.cfg)
	require.NoError(b, err)
	resp, err := hc.Get(strings.TrimSuffix(cl.cfg.Host, "/") + "/metrics")
	require.NoError(b, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(b, err)
	require.Equal(b, http.StatusOK, resp.StatusCode, "GET /metrics of the API server: %.200s", body)
	n := 0
	for line := range strings.Lines(string(body)) {
		write := (strings.Contains(line, `verb="PATCH"`) || strings.Contains(line, `verb="PUT"`)) && strings.Contains(line, `code="`+code+`"`)
		if !write || !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="prometheusservers"`) ||
			!strings.Contains(line, `subresource="status"`) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[strings.LastIndexByte(line, ' '):]), 64)
		require.NoError(b, err, line)
		n += int(v)
	}
	return n
}

// appliedSection is the Markdown of BenchmarkAppliedStatus' figures.
func appliedSection(p50, p99 time.Duration, writes, conflicts []int, idle int, quiet time.Duration) string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	verdict := func(ok bool) string { return map[bool]string{true: "met", false: "missed"}[ok] }
	most := slices.Max(writes)
	var w strings.Builder
	fmt.Fprintf(&w, "## What is running: Prometheus accepting a reload to the PrometheusServer's status saying so\n\n")
	fmt.Fprintf(&w, "%d updates of the example PrometheusRule through the whole pipeline of TestPipeline (a real\n", len(writes))
	fmt.Fprintf(&w, "kube-apiserver and etcd, the controller binary, the pod on loopback with a real Prometheus and the\n")
	fmt.Fprintf(&w, "config-reloader reporting with `--report-pod`), each timed from Prometheus accepting the reload (its\n")
	fmt.Fprintf(&w, "`prometheus_config_last_reload_success_timestamp_seconds`) to a watch of the PrometheusServer seeing\n")
	fmt.Fprintf(&w, "ConfigApplied True for the new content hash, the pod running it (e2e/applied_bench_test.go, `make bench`).\n")
	fmt.Fprintf(&w, "Status writes are those the API server made (`apiserver_request_total` of the status subresource, code 200).\n\n")
	fmt.Fprintf(&w, "| measure | figure | target |\n|---|---|---|\n")
	fmt.Fprintf(&w, "| reload accepted → status shows it, p50 | %s | |\n", ms(p50))
	fmt.Fprintf(&w, "| reload accepted → status shows it, p99 | %s | ≤ 2 s: %s |\n", ms(p99), verdict(p99 <= 2*time.Second))
	fmt.Fprintf(&w, "| status writes per change, at most (the new content written, then the replica's report) | %d | ≤ 1 + 1 per replica: %s |\n", most, verdict(most <= 2))
	fmt.Fprintf(&w, "| status writes refused with 409 Conflict and retried, per change, at most (in all) | %d (%d) | |\n", slices.Max(conflicts), sum(conflicts))
	fmt.Fprintf(&w, "| status writes in %s with nothing changing | %d | 0: %s |\n", quiet, idle, verdict(idle == 0))
	return w.String()
}

func sum(s []int) int {
	n := 0
	for _, v := range s {
		n += v
	}
	return n
}
