package reloader

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/podreload/podreload/envsubst"
	"github.com/podreload/podreload/internal/testenv/projector"
)

func TestMain(m *testing.M) {
	if os.Getenv(signalTargetEnv) != "" {
		os.Exit(signalTarget())
	}
	goleak.VerifyTestMain(m)
}

// endpoint is a reload endpoint that records, at each call, what the process
// would read at that moment.
type endpoint struct {
	*httptest.Server
	t        *testing.T
	snapshot func() string

	mu     sync.Mutex
	seen   []string
	status int
	body   string
	hang   chan struct{}
}

func newEndpoint(t *testing.T, snapshot func() string) *endpoint {
	e := &endpoint{t: t, snapshot: snapshot, status: http.StatusOK, hang: make(chan struct{})}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "method", http.StatusMethodNotAllowed)
			return
		}
		e.mu.Lock()
		status, body, hang := e.status, e.body, e.hang
		e.mu.Unlock()
		if status == 0 {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
			return
		}
		if status == http.StatusOK {
			e.mu.Lock()
			e.seen = append(e.seen, e.snapshot())
			e.mu.Unlock()
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(func() {
		e.mu.Lock()
		close(e.hang)
		e.mu.Unlock()
		e.Close()
	})
	return e
}

// answer makes the endpoint reply with status and body; status 0 hangs.
func (e *endpoint) answer(status int, body string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.status, e.body = status, body
}

// reloads returns the snapshots taken at each successful reload.
func (e *endpoint) reloads() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.seen...)
}

func (e *endpoint) trigger(timeout time.Duration) *HTTPTrigger {
	u, err := url.Parse(e.URL + "/-/reload")
	require.NoError(e.t, err)
	return &HTTPTrigger{URL: u, Timeout: timeout}
}

// eventually waits for cond, checked every few milliseconds in the test's
// goroutine, failing the test after a deadline: the one way reloader tests
// wait for something.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// start runs r until the test ends.
func start(t *testing.T, r *Reloader) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

func gz(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, err := io.WriteString(zw, s)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.String()
}

// readDir renders a directory's visible files as "name=content;" pairs; a
// file that is not regular is not waited on.
func readDir(dir string) string {
	entries, _ := os.ReadDir(dir)
	var b strings.Builder
	for _, e := range entries {
		if hidden(e.Name()) {
			continue
		}
		c, err := readRegular(filepath.Join(dir, e.Name()), 1<<20)
		if err != nil {
			c = []byte("<" + err.Error() + ">")
		}
		b.WriteString(e.Name() + "=" + string(c) + ";")
	}
	return b.String()
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func expander(strict bool) *envsubst.Expander {
	env := map[string]string{"POD_NAME": "prom-3", "CLUSTER": "eu1"}
	return envsubst.New(envsubst.Options{Strict: strict, OrdinalFromEnv: "POD_NAME", Lookup: func(n string) (string, bool) {
		v, ok := env[n]
		return v, ok
	}})
}

// setup is a config volume, a rules volume, an output file and an endpoint
// that snapshots the output and the rules at each reload.
type setup struct {
	cfgDir, rulesDir, out string
	ep                    *endpoint
	reg                   *prometheus.Registry
	opts                  Options
}

func newSetup(t *testing.T) *setup {
	root := t.TempDir()
	s := &setup{
		cfgDir:   filepath.Join(root, "config"),
		rulesDir: filepath.Join(root, "rules"),
		out:      filepath.Join(root, "out", "prometheus.env.yaml"),
		reg:      prometheus.NewRegistry(),
	}
	s.ep = newEndpoint(t, func() string { return readFile(s.out) + "|" + readDir(s.rulesDir) })
	s.opts = Options{
		ConfigFile:    filepath.Join(s.cfgDir, "prometheus.yaml.gz"),
		ConfigOutput:  s.out,
		WatchedDirs:   []string{s.rulesDir},
		Expander:      expander(true),
		Trigger:       s.ep.trigger(time.Second),
		QuietWindow:   50 * time.Millisecond,
		RetryInterval: 20 * time.Millisecond,
		WatchInterval: time.Minute,
		Retries:       -1,
	}
	return s
}

// startStoppable runs a new reloader of s until stop is called or the test
// ends.
func (s *setup) startStoppable(t *testing.T) (stop func()) {
	r, err := New(nil, s.reg, s.opts)
	require.NoError(t, err)
	return runUntilStopped(t, r)
}

func (s *setup) start(t *testing.T) *Reloader {
	r, err := New(nil, s.reg, s.opts)
	require.NoError(t, err)
	start(t, r)
	return r
}

func TestKubeletSwaps(t *testing.T) {
	s := newSetup(t)
	cfg, rules := projector.Open(t, s.cfgDir), projector.Open(t, s.rulesDir)
	cfg.Set(t, map[string]string{"prometheus.yaml.gz": gz(t, "replica: $(POD_NAME)\nv: 1\n")})
	rules.Set(t, map[string]string{"a.yaml": "a1"})
	r := s.start(t)

	want := []string{"replica: prom-3\nv: 1\n|a.yaml=a1;"}
	eventually(t, "first reload", func() bool { return len(s.ep.reloads()) == 1 })

	steps := []struct {
		name  string
		apply func()
		state string
	}{
		{"config swap", func() {
			cfg.Set(t, map[string]string{"prometheus.yaml.gz": gz(t, "replica: $(POD_NAME)\nv: 2\n")})
		}, "replica: prom-3\nv: 2\n|a.yaml=a1;"},
		{"config swap to plain text", func() {
			cfg.Set(t, map[string]string{"prometheus.yaml.gz": "ordinal: $(STATEFULSET_ORDINAL_NUMBER)\n"})
		}, "ordinal: 3\n|a.yaml=a1;"},
		{"rule changed", func() { rules.Set(t, map[string]string{"a.yaml": "a2"}) }, "ordinal: 3\n|a.yaml=a2;"},
		{"rule added", func() { rules.Set(t, map[string]string{"a.yaml": "a2", "b.yaml": "b1"}) }, "ordinal: 3\n|a.yaml=a2;b.yaml=b1;"},
		{"rule removed", func() { rules.Set(t, map[string]string{"b.yaml": "b1"}) }, "ordinal: 3\n|b.yaml=b1;"},
		{"rule renamed", func() { rules.Set(t, map[string]string{"c.yaml": "b1"}) }, "ordinal: 3\n|c.yaml=b1;"},
		{"every rule removed", func() { rules.Set(t, map[string]string{}) }, "ordinal: 3\n|"},
	}
	for _, step := range steps {
		step.apply()
		want = append(want, step.state)
		// A second reload of a step would show at the next one; that the
		// schedule has nothing more to do after a swap is TestSchedule's.
		eventually(t, step.name, func() bool { return len(s.ep.reloads()) >= len(want) })
		require.Equal(t, want, s.ep.reloads(), step.name)
	}
	// The reloader counts a request once it has its answer, which may be
	// just after the endpoint has recorded it.
	eventually(t, "the last request counted", func() bool { return testutil.ToFloat64(r.m.reloads) >= float64(len(want)) })
	require.Equal(t, float64(len(want)), testutil.ToFloat64(r.m.reloads))
	eventually(t, "the last request a success", func() bool { return testutil.ToFloat64(r.m.lastSuccess) == 1 })
	require.Equal(t, 2.0, testutil.ToFloat64(r.m.watches))
	require.Zero(t, testutil.ToFloat64(r.m.appliesFailed))
}

func TestNothingChanged(t *testing.T) {
	s := newSetup(t)
	cfg, rules := projector.Open(t, s.cfgDir), projector.Open(t, s.rulesDir)
	cfg.Set(t, map[string]string{"prometheus.yaml.gz": "a: 1\n"})
	rules.Set(t, map[string]string{"a.yaml": "a1"})
	r := s.start(t)
	eventually(t, "first reload", func() bool { return len(s.ep.reloads()) == 1 })

	// The same configuration gzipped: applied, not reloaded, since
	// Prometheus reads the same.
	applies := testutil.ToFloat64(r.m.applies)
	cfg.Set(t, map[string]string{"prometheus.yaml.gz": gz(t, "a: 1\n")})
	eventually(t, "the same configuration gzipped applied", func() bool { return testutil.ToFloat64(r.m.applies) > applies })

	// The same payload again (the kubelet writes nothing), kubelet
	// bookkeeping entries, a touch and a chmod: none changes what
	// Prometheus reads.
	events := testutil.ToFloat64(r.m.events)
	rules.Set(t, map[string]string{"a.yaml": "a1"})
	stamp := filepath.Join(s.rulesDir, "..2026_11_21_10_00_00.000000001")
	require.NoError(t, os.Mkdir(stamp, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(stamp, "b.yaml"), []byte("b"), 0o644))
	require.NoError(t, os.Symlink(stamp, filepath.Join(s.rulesDir, "..data_tmp")))
	require.NoError(t, os.RemoveAll(stamp))
	now := time.Now()
	require.NoError(t, os.Chtimes(filepath.Join(s.rulesDir, "a.yaml"), now, now))
	require.NoError(t, os.Chmod(filepath.Join(s.cfgDir, "prometheus.yaml.gz"), 0o600))
	eventually(t, "events", func() bool { return testutil.ToFloat64(r.m.events) > events })

	// A real change last: the only reload since the first.
	cfg.Set(t, map[string]string{"prometheus.yaml.gz": "a: 2\n"})
	eventually(t, "the change reloaded", func() bool { return len(s.ep.reloads()) >= 2 })
	require.Equal(t, []string{"a: 1\n|a.yaml=a1;", "a: 2\n|a.yaml=a1;"}, s.ep.reloads())
}

func TestPlainDirectoryEdits(t *testing.T) {
	s := newSetup(t)
	require.NoError(t, os.MkdirAll(s.rulesDir, 0o755))
	require.NoError(t, os.MkdirAll(s.cfgDir, 0o755))
	write := func(dir, name, content string) {
		require.NoError(t, writeAtomic(filepath.Join(dir, name), []byte(content)))
	}
	write(s.cfgDir, "prometheus.yaml.gz", "v: 1\n")
	s.start(t)
	eventually(t, "first reload", func() bool { return len(s.ep.reloads()) == 1 })

	last := func(want string) func() bool {
		return func() bool { r := s.ep.reloads(); return r[len(r)-1] == want }
	}
	write(s.rulesDir, "a.yaml", "a1")
	eventually(t, "new file", last("v: 1\n|a.yaml=a1;"))
	f, err := os.OpenFile(filepath.Join(s.rulesDir, "a.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("+")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	eventually(t, "in-place edit", last("v: 1\n|a.yaml=a1+;"))
	require.NoError(t, os.Rename(filepath.Join(s.rulesDir, "a.yaml"), filepath.Join(s.rulesDir, "b.yaml")))
	eventually(t, "rename", last("v: 1\n|b.yaml=a1+;"))
	require.NoError(t, os.Remove(filepath.Join(s.rulesDir, "b.yaml")))
	eventually(t, "delete", last("v: 1\n|"))
	write(s.cfgDir, "prometheus.yaml.gz", "v: 2\n")
	eventually(t, "config edit", last("v: 2\n|"))
	write(s.cfgDir, "unrelated.txt", "x")
	require.NoError(t, os.RemoveAll(s.rulesDir))
	eventually(t, "rules dir removed", last("v: 2\n|"))
	write(s.rulesDir, "c.yaml", "c1")
	eventually(t, "rules dir created again", last("v: 2\n|c.yaml=c1;"))
}

// TestBurst swaps the rules ten times in a row: the last state is reloaded.
// How a burst is coalesced, in time, is TestSchedule's.
func TestBurst(t *testing.T) {
	s := newSetup(t)
	s.opts.QuietWindow = DefaultQuietWindow
	cfg, rules := projector.Open(t, s.cfgDir), projector.Open(t, s.rulesDir)
	cfg.Set(t, map[string]string{"prometheus.yaml.gz": "v: 0\n"})
	rules.Set(t, map[string]string{"a.yaml": "0"})
	s.start(t)
	eventually(t, "first reload", func() bool { return len(s.ep.reloads()) == 1 })

	for i := 1; i <= 10; i++ {
		rules.Set(t, map[string]string{"a.yaml": strings.Repeat("x", i)})
	}
	want := "v: 0\n|a.yaml=xxxxxxxxxx;"
	eventually(t, "last state", func() bool { r := s.ep.reloads(); return r[len(r)-1] == want })
}

func TestDelayInterval(t *testing.T) {
	s := newSetup(t)
	s.opts.DelayInterval = 300 * time.Millisecond
	cfg := projector.Open(t, s.cfgDir)
	cfg.Set(t, map[string]string{"prometheus.yaml.gz": "v: 0\n"})
	s.start(t)
	eventually(t, "first reload", func() bool { return len(s.ep.reloads()) == 1 })

	// Before the swap: the reloader may see the rename before Project
	// returns (under load it saw it 4 ms earlier than Project's return).
	before := time.Now()
	_, err := cfg.Project(map[string]string{"prometheus.yaml.gz": "v: 1\n"})
	require.NoError(t, err)
	eventually(t, "delayed reload", func() bool { return len(s.ep.reloads()) == 2 })
	require.GreaterOrEqual(t, time.Since(before), s.opts.DelayInterval)
	require.Equal(t, "v: 1\n|", s.ep.reloads()[1])
}

func TestTolerantExpansion(t *testing.T) {
	s := newSetup(t)
	s.opts.Expander = expander(false)
	cfg := projector.Open(t, s.cfgDir)
	cfg.Set(t, map[string]string{"prometheus.yaml.gz": gz(t, "a: $(NOPE)\nb: $(CLUSTER) $(NOPE2) ${CLUSTER} $CLUSTER $$\n")})
	r := s.start(t)
	eventually(t, "reload", func() bool { return len(s.ep.reloads()) == 1 })
	require.Equal(t, "a: $(NOPE)\nb: eu1 $(NOPE2) ${CLUSTER} $CLUSTER $$\n|", s.ep.reloads()[0])
	require.Equal(t, 2.0, testutil.ToFloat64(r.m.expansionErrors))
	require.Zero(t, testutil.ToFloat64(r.m.appliesFailed))
}

func TestRender(t *testing.T) {
	s := newSetup(t)
	projector.Open(t, s.cfgDir).Set(t, map[string]string{"prometheus.yaml.gz": gz(t, "replica: $(POD_NAME)\n")})
	r, err := New(nil, s.reg, s.opts)
	require.NoError(t, err)
	require.NoError(t, r.Render())
	require.Equal(t, "replica: prom-3\n", readFile(s.out))
	require.Empty(t, s.ep.reloads())
}

func TestMetricNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, err := New(nil, reg, Options{WatchedDirs: []string{t.TempDir()}})
	require.NoError(t, err)
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, problems)
	want := []string{
		"reloader_config_apply_operations_failed_total", "reloader_config_apply_operations_total",
		"reloader_config_environment_variable_expansion_errors", "reloader_last_reload_success_timestamp_seconds",
		"reloader_last_reload_successful", "reloader_reload_duration_seconds", "reloader_reloads_failed_total",
		"reloader_reloads_rejected_total", "reloader_reloads_total", "reloader_watch_errors_total", "reloader_watch_events_total", "reloader_watches",
	}
	n, err := testutil.GatherAndCount(reg, want...)
	require.NoError(t, err)
	require.Equal(t, len(want), n)
}
