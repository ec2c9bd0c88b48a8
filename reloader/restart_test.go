package reloader

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/contract"
)

func jsonLogger(l *logs) *slog.Logger { return slog.New(slog.NewJSONHandler(l, nil)) }

// runUntilStopped runs r until stop is called (or the test ends).
func runUntilStopped(t *testing.T, r *Reloader) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done)
		}
	}
	t.Cleanup(stop)
	return stop
}

// rejectThenRestart has Prometheus accept v: 1 and reject v: [ from a
// source, stops the reloader, lets fresh remove what a restart loses, and
// starts a new one on the same rejected content. It returns the new
// reloader, its logs and its reports.
func rejectThenRestart(t *testing.T, h *harness, src *memSource, fresh func()) (*Reloader, *logs, *appliedLog) {
	t.Helper()
	h.opts.RetryInterval = time.Hour // No retry within the test.
	h.opts.OnApplied = new(appliedLog).add
	src.set("v: 1\n", map[string]string{"cm/a.yaml": "a1"}, nil)
	first, err := New(nil, h.reg, h.opts)
	require.NoError(t, err)
	stop := runUntilStopped(t, first)
	h.reloaded(t, 1, "v: 1\n|cm/a.yaml=a1;")
	h.ep.answer(http.StatusInternalServerError, prometheusRejects)
	src.set("v: [\n", map[string]string{"cm/a.yaml": "bad"}, nil)
	eventually(t, "rejected", func() bool { return testutil.ToFloat64(first.m.rejected) == 1 })
	stop()
	fresh()

	var (
		l   logs
		log appliedLog
	)
	opts := h.opts
	opts.OnApplied = log.add
	second, err := New(jsonLogger(&l), prometheus.NewRegistry(), opts)
	require.NoError(t, err)
	runUntilStopped(t, second)
	return second, &l, &log
}

// TestRestartKeepsAccepted: after Prometheus rejected the current content,
// neither a restart of the reloader's container nor one of the pod (fresh
// output directories, the state directory on a disk that outlives it)
// writes that content: the last accepted state is written instead, nothing
// is reloaded, and Rejected is reported with Prometheus' message.
func TestRestartKeepsAccepted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state func(h *harness) string // the state dir
		fresh func(t *testing.T, h *harness)
	}{
		{"container restart", func(*harness) string { return "" }, func(*testing.T, *harness) {}},
		{"pod restart", func(h *harness) string { return filepath.Join(filepath.Dir(h.cfgDir), "data", "reloader") }, func(t *testing.T, h *harness) {
			require.NoError(t, os.RemoveAll(filepath.Dir(h.out)))
			require.NoError(t, os.RemoveAll(h.rulesDir))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, src := sourceHarness(t)
			h.opts.StateDir = tc.state(h)
			r, l, log := rejectThenRestart(t, h, src, func() { tc.fresh(t, h) })

			l.waitErr(t, regexp.QuoteMeta(`rejected at `)+`.*`+regexp.QuoteMeta(`: status 500: `+prometheusRejects))
			require.Contains(t, l.String(), `"msg":"the current content was rejected before this start: the last accepted state is written instead, trying again later"`)
			require.Equal(t, "v: 1\n|cm/a.yaml=a1;", readFile(h.out)+"|"+readTree(h.rulesDir))
			report := log.wait(t, 1)
			require.Equal(t, contract.Sum([]byte("v: 1\n"), map[string]string{"cm/a.yaml": "a1"}), report.Hash)
			require.NotNil(t, report.Rejection)
			require.Equal(t, "status 500: "+prometheusRejects, report.Rejection.Message)
			require.Zero(t, testutil.ToFloat64(r.m.reloads))
			require.Len(t, h.ep.reloads(), 1)

			// A fix is applied at once.
			h.ep.answer(http.StatusOK, "")
			src.set("v: 2\n", map[string]string{"cm/a.yaml": "a2"}, nil)
			h.reloaded(t, 2, "v: 2\n|cm/a.yaml=a2;")
			require.Nil(t, log.wait(t, 2).Rejection)
		})
	}

	t.Run("init container", func(t *testing.T) {
		h, src := sourceHarness(t)
		h.opts.StateDir = filepath.Join(filepath.Dir(h.cfgDir), "data", "reloader")
		rejectThenRestartRender(t, h, src)
	})

	t.Run("other content at restart: applied as usual", func(t *testing.T) {
		h, src := sourceHarness(t)
		r, _, _ := rejectThenRestart(t, h, src, func() {
			h.ep.answer(http.StatusOK, "")
			src.set("v: 3\n", map[string]string{"cm/a.yaml": "a3"}, nil)
		})
		h.reloaded(t, 2, "v: 3\n|cm/a.yaml=a3;")
		eventually(t, "counted", func() bool { return testutil.ToFloat64(r.m.reloads) == 1 })
	})
}

// TestRestartOtherRejected: after a restart, the process rejects other
// content than the one recorded: what it accepted before the restart is
// read from the state dir and written back.
func TestRestartOtherRejected(t *testing.T) {
	h, src := sourceHarness(t)
	h.opts.StateDir = filepath.Join(filepath.Dir(h.cfgDir), "data", "reloader")
	r, l, log := rejectThenRestart(t, h, src, func() {
		require.NoError(t, os.RemoveAll(filepath.Dir(h.out)))
		require.NoError(t, os.RemoveAll(h.rulesDir))
		src.set("v: {\n", map[string]string{"cm/a.yaml": "worse"}, nil)
	})
	l.waitErr(t, regexp.QuoteMeta(`reload `+h.ep.URL+`/-/reload: status 500: `+prometheusRejects))
	eventually(t, "the accepted state written back", func() bool { return readFile(h.out)+"|"+readTree(h.rulesDir) == "v: 1\n|cm/a.yaml=a1;" })
	report := log.wait(t, 1)
	require.Equal(t, contract.Sum([]byte("v: 1\n"), map[string]string{"cm/a.yaml": "a1"}), report.Hash)
	require.NotNil(t, report.Rejection)
	require.Equal(t, 1.0, testutil.ToFloat64(r.m.rejected))
}

// rejectThenRestartRender: the init container of a restarted pod renders
// the last accepted state, not the content rejected.
func rejectThenRestartRender(t *testing.T, h *harness, src *memSource) {
	h.opts.RetryInterval = time.Hour
	src.set("v: 1\n", map[string]string{"cm/a.yaml": "a1"}, nil)
	first, err := New(nil, h.reg, h.opts)
	require.NoError(t, err)
	stop := runUntilStopped(t, first)
	h.reloaded(t, 1, "v: 1\n|cm/a.yaml=a1;")
	h.ep.answer(http.StatusInternalServerError, prometheusRejects)
	src.set("v: [\n", map[string]string{"cm/a.yaml": "bad"}, nil)
	eventually(t, "rejected", func() bool { return testutil.ToFloat64(first.m.rejected) == 1 })
	stop()
	require.NoError(t, os.RemoveAll(filepath.Dir(h.out)))
	require.NoError(t, os.RemoveAll(h.rulesDir))

	var l logs
	init, err := New(jsonLogger(&l), prometheus.NewRegistry(), h.opts)
	require.NoError(t, err)
	require.NoError(t, init.Render())
	require.Equal(t, "v: 1\n|cm/a.yaml=a1;", readFile(h.out)+"|"+readTree(h.rulesDir))
	require.Contains(t, l.String(), `"msg":"the current content was rejected: writing the last accepted state instead"`)
}
