package handoff

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/internal/testenv/docsection"
)

// benchDocsEnv names the file whose section "handoff faults" the
// benchmark rewrites (docs/benchmarks.md in `make bench`).
const benchDocsEnv = "PODRELOAD_BENCH_DOCS"

// BenchmarkHandoff runs each fault of TestHandoff once, one after the
// other on one control plane, and reports the times each measured: from
// the restart of the process killed, the last flip, the deletion or the
// partition to the end state. On a bare API server: the rolls are the
// writes, no pod starts. One iteration: run it with -benchtime 1x.
func BenchmarkHandoff(b *testing.B) {
	if b.N != 1 {
		b.Fatalf("b.N = %d: run BenchmarkHandoff with -benchtime 1x", b.N)
	}
	e := startEnv(b)
	var rows []string
	for _, sc := range scenarios() {
		// Each in a sub-benchmark: its processes stop before the next
		// one starts.
		b.Run(sc.name, func(b *testing.B) {
			sc.run(b, e, func(what string, d time.Duration) {
				b.Logf("%s: %s", what, d)
				rows = append(rows, fmt.Sprintf("| %s | %s |", what, d.Round(time.Millisecond)))
			})
		})
	}
	path := os.Getenv(benchDocsEnv)
	if path == "" {
		return
	}
	section := fmt.Sprintf(`
The faults of TestHandoff (e2e/handoff, issue 41), one after the other, on a bare kube-apiserver and etcd (no kubelet: a roll is the writes of the objects), prometheus-operator's operator v0.93.1 and bin/controller as processes; the process killed is cut in the middle of its roll by a proxy adding %s to each of its requests, which its restart no longer has; the replicas' leader election: a %s Lease, a renew deadline of %s, a retry period of %s:

| fault: from → to the end state | time |
|---|---|
%s
`, slow, leaseDuration, renewDeadline, retryPeriod, strings.Join(rows, "\n"))
	require.NoError(b, docsection.Replace(path, "handoff faults", "e2e/handoff/bench_test.go", section))
}
