package reloader

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/internal/testenv/projector"
)

// memSource is a Source whose content a test sets.
type memSource struct {
	// Describe names the files as Snapshot.Describe does; nil names
	// them by their paths.
	Describe func(string) string

	mu      sync.Mutex
	snap    Snapshot
	err     error
	changed chan struct{}
}

func newMemSource() *memSource { return &memSource{changed: make(chan struct{}, 1)} }

func (m *memSource) Changed() <-chan struct{} { return m.changed }

func (m *memSource) Snapshot() (Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snap, m.err
}

// set replaces the content and announces the change.
func (m *memSource) set(config string, files map[string]string, err error) {
	m.mu.Lock()
	m.snap = Snapshot{Config: []byte(config), ConfigName: "secret test/cfg key prometheus.yaml.gz", Files: maps.Clone(files), Describe: m.Describe}
	m.err = err
	m.mu.Unlock()
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// sourceHarness is a harness whose reloader reads from a memSource and
// writes the rules into its own directory.
func sourceHarness(t *testing.T) (*harness, *memSource) {
	h := newHarness(t)
	src := newMemSource()
	h.opts.ConfigFile, h.opts.WatchedDirs = "", nil
	h.opts.Source, h.opts.RulesDir, h.opts.KeepAccepted = src, h.rulesDir, true
	h.ep.snapshot = func() string { return readFile(h.out) + "|" + readTree(h.rulesDir) }
	return h, src
}

// readTree renders the files of dir's subdirectories as "group/name=content;".
func readTree(dir string) string {
	groups, _ := os.ReadDir(dir)
	var b strings.Builder
	for _, g := range groups {
		files, _ := os.ReadDir(filepath.Join(dir, g.Name()))
		for _, f := range files {
			if !hidden(f.Name()) {
				b.WriteString(g.Name() + "/" + f.Name() + "=" + readFile(filepath.Join(dir, g.Name(), f.Name())) + ";")
			}
		}
	}
	return b.String()
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Sys().(*syscall.Stat_t).Ino
}

func TestSourceWritesFiles(t *testing.T) {
	h, src := sourceHarness(t)
	// Left by an earlier run: a stale file, and one that stays as it is.
	require.NoError(t, os.MkdirAll(filepath.Join(h.rulesDir, "old"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(h.rulesDir, "old", "x.yaml"), []byte("x"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(h.rulesDir, "cm-0"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(h.rulesDir, "cm-0", "b.yaml"), []byte("b1"), 0o644))
	src.set(gz(t, "replica: $(POD_NAME)\n"), map[string]string{"cm-0/a.yaml": "a1", "cm-0/b.yaml": "b1", "cm-1/c.yaml": "c1"}, nil)
	h.start(t)
	h.reloaded(t, 1, "replica: prom-3\n|cm-0/a.yaml=a1;cm-0/b.yaml=b1;cm-1/c.yaml=c1;")
	require.NoDirExists(t, filepath.Join(h.rulesDir, "old"))

	// One file changes: only it is rewritten.
	a, b, c := inode(t, filepath.Join(h.rulesDir, "cm-0", "a.yaml")), inode(t, filepath.Join(h.rulesDir, "cm-0", "b.yaml")), inode(t, filepath.Join(h.rulesDir, "cm-1", "c.yaml"))
	src.set(gz(t, "replica: $(POD_NAME)\n"), map[string]string{"cm-0/a.yaml": "a2", "cm-0/b.yaml": "b1", "cm-1/c.yaml": "c1"}, nil)
	h.reloaded(t, 2, "replica: prom-3\n|cm-0/a.yaml=a2;cm-0/b.yaml=b1;cm-1/c.yaml=c1;")
	require.NotEqual(t, a, inode(t, filepath.Join(h.rulesDir, "cm-0", "a.yaml")))
	require.Equal(t, b, inode(t, filepath.Join(h.rulesDir, "cm-0", "b.yaml")))
	require.Equal(t, c, inode(t, filepath.Join(h.rulesDir, "cm-1", "c.yaml")))

	// A group goes away with its directory.
	src.set(gz(t, "replica: $(POD_NAME)\n"), map[string]string{"cm-0/a.yaml": "a2", "cm-0/b.yaml": "b1"}, nil)
	h.reloaded(t, 3, "replica: prom-3\n|cm-0/a.yaml=a2;cm-0/b.yaml=b1;")
	require.NoDirExists(t, filepath.Join(h.rulesDir, "cm-1"))

	// The same content announced again reloads nothing: the next reload
	// is the next change's.
	src.set(gz(t, "replica: $(POD_NAME)\n"), map[string]string{"cm-0/a.yaml": "a2", "cm-0/b.yaml": "b1"}, nil)
	src.set("replica: 2\n", map[string]string{"cm-0/a.yaml": "a2", "cm-0/b.yaml": "b1"}, nil)
	h.reloaded(t, 4, "replica: 2\n|cm-0/a.yaml=a2;cm-0/b.yaml=b1;")
}

func TestSourceMissing(t *testing.T) {
	h, src := sourceHarness(t)
	// Before its first read, the source is not a failure: nothing is
	// counted, nothing retried.
	src.set("", nil, fmt.Errorf("secret test/cfg: %w", ErrNotRead))
	var applies atomic.Int32
	h.opts.AfterApply = func() { applies.Add(1) }
	h.start(t)
	eventually(t, "an apply", func() bool { return applies.Load() > 0 })
	require.Zero(t, testutil.ToFloat64(h.r.m.appliesFailed))
	require.NotContains(t, h.logs.String(), "apply failed")
	src.set("", nil, errors.New(`secret test/cfg not found: waiting for it`))
	h.logs.waitErr(t, `secret test/cfg not found: waiting for it`)
	require.Empty(t, h.ep.reloads())
	require.NoFileExists(t, h.out)
	src.set("a: 1\n", map[string]string{"cm/r.yaml": "r"}, nil)
	h.reloaded(t, 1, "a: 1\n|cm/r.yaml=r;")
}

// TestOddKeysLeftOut: keys the rules dir cannot hold (a ConfigMap key
// starting with a dot, valid in Kubernetes, or a path) are left out,
// logged naming the ConfigMap and key, counted; everything else applies
// and reloads, once, without retries.
func TestOddKeysLeftOut(t *testing.T) {
	h, src := sourceHarness(t)
	src.Describe = func(name string) string { return "configmap test/" + name }
	src.set("a: 1\n", map[string]string{"cm/a.yaml": "a1", "cm/.hidden": "h", "../escape.yaml": "x"}, nil)
	h.start(t)
	h.reloaded(t, 1, "a: 1\n|cm/a.yaml=a1;")
	for _, name := range []string{"cm/.hidden", "../escape.yaml"} {
		require.Contains(t, h.logs.String(), `"msg":"input file left out, the rest applies without it","file":"configmap test/`+name+`","reason":"invalid_name","err":"`+invalidName+`"`)
	}
	require.NoFileExists(t, filepath.Join(filepath.Dir(h.rulesDir), "escape.yaml"))
	require.NoFileExists(t, filepath.Join(h.rulesDir, "cm", ".hidden"))
	require.Equal(t, 2.0, testutil.ToFloat64(h.r.m.leftOut.WithLabelValues(reasonInvalidName)))
	require.EqualError(t, h.r.Degraded(), "2 input files left out: configmap test/../escape.yaml: "+invalidName+"; configmap test/cm/.hidden: "+invalidName+"; the rest is applied")
	require.Zero(t, testutil.ToFloat64(h.r.m.appliesFailed))

	// A change applies with the odd key still there; nothing is retried.
	src.set("a: 2\n", map[string]string{"cm/a.yaml": "a2", "cm/.hidden": "h"}, nil)
	h.reloaded(t, 2, "a: 2\n|cm/a.yaml=a2;")
	eventually(t, "one left out", func() bool { return testutil.ToFloat64(h.r.m.leftOut.WithLabelValues(reasonInvalidName)) == 1 })
	// Counted once the answer is in, maybe just after the endpoint saw it.
	eventually(t, "the second request counted", func() bool { return testutil.ToFloat64(h.r.m.reloads) == 2 })
	require.Zero(t, testutil.ToFloat64(h.r.m.reloadsFailed))
}

// TestOddKeysLeftOutOfVolumes: the same key in a ConfigMap's volume, read
// with RulesInputDirs.
func TestOddKeysLeftOutOfVolumes(t *testing.T) {
	h, inputs, dirs := inputHarness(t)
	projector.Open(t, h.cfgDir).Set(t, map[string]string{"prometheus.yaml.gz": "v: 1\n"})
	inputs[0].Set(t, map[string]string{"a.yaml": "a1", ".hidden": "h"})
	h.start(t)
	h.reloaded(t, 1, "v: 1\n|cm-0/a.yaml=a1;")
	h.logs.waitErr(t, regexp.QuoteMeta(invalidName))
	require.Contains(t, h.logs.String(), `"file":"`+filepath.Join(dirs[0], ".hidden")+`","reason":"invalid_name"`)
	require.Equal(t, 1.0, testutil.ToFloat64(h.r.m.leftOut.WithLabelValues(reasonInvalidName)))
	inputs[0].Set(t, map[string]string{"a.yaml": "a2", ".hidden": "h"})
	h.reloaded(t, 2, "v: 1\n|cm-0/a.yaml=a2;")
}

// prometheusRejects is how Prometheus answers a configuration it refuses.
const prometheusRejects = `failed to reload config: couldn't load configuration (--config.file="out"): parsing YAML file out: yaml: line 1: did not find expected key`

func TestKeepAcceptedFromSource(t *testing.T) {
	h, src := sourceHarness(t)
	h.opts.RetryInterval = time.Hour // Only the retries' backoff tries it again (TestRejectedRetried).
	good := map[string]string{"cm/a.yaml": "a1", "cm/b.yaml": "b1"}
	src.set("v: 1\n", good, nil)
	h.start(t)
	h.reloaded(t, 1, "v: 1\n|cm/a.yaml=a1;cm/b.yaml=b1;")

	// Prometheus refuses the next content: what it runs is written back.
	h.ep.answer(http.StatusInternalServerError, prometheusRejects)
	src.set("v: [\n", map[string]string{"cm/a.yaml": "bad", "cm/c.yaml": "c1"}, nil)
	h.logs.waitErr(t, `reload `+h.ep.URL+`/-/reload: status 500: `+regexp.QuoteMeta(prometheusRejects))
	eventually(t, "restore", func() bool {
		return readFile(h.out)+"|"+readTree(h.rulesDir) == "v: 1\n|cm/a.yaml=a1;cm/b.yaml=b1;"
	})
	require.Equal(t, 1.0, testutil.ToFloat64(h.r.m.rejected))
	require.Equal(t, 0.0, testutil.ToFloat64(h.r.m.lastSuccess))

	// Not tried again before its retry while it is the same, though
	// Prometheus would now take anything: the same content announced
	// again.
	h.ep.answer(http.StatusOK, "")
	for range 3 {
		applies := testutil.ToFloat64(h.r.m.applies)
		src.set("v: [\n", map[string]string{"cm/a.yaml": "bad", "cm/c.yaml": "c1"}, nil)
		eventually(t, "an apply", func() bool { return testutil.ToFloat64(h.r.m.applies) > applies })
	}
	require.Equal(t, "v: 1\n|cm/a.yaml=a1;cm/b.yaml=b1;", readFile(h.out)+"|"+readTree(h.rulesDir))
	// A fix is applied at once, and is the next reload.
	src.set("v: 2\n", map[string]string{"cm/a.yaml": "a2"}, nil)
	h.reloaded(t, 2, "v: 2\n|cm/a.yaml=a2;")
	// Three requests: accepted, rejected, accepted; no retry between. The
	// reloader counts a request once it has its answer, which may be just
	// after the endpoint has recorded it.
	eventually(t, "the third request counted", func() bool { return testutil.ToFloat64(h.r.m.lastSuccess) == 1 })
	require.Equal(t, 3.0, testutil.ToFloat64(h.r.m.reloads))
	require.Equal(t, 1.0, testutil.ToFloat64(h.r.m.rejected))
	require.Equal(t, 1.0, testutil.ToFloat64(h.r.m.lastSuccess))
}

func TestKeepAcceptedFromVolume(t *testing.T) {
	h := newHarness(t)
	h.opts.KeepAccepted = true
	// No retry of the rejected content, which the endpoint would take
	// once it answers 200, before the fix (TestRejectedRetried).
	h.opts.RetryInterval = time.Hour
	cfg, rules := projector.Open(t, h.cfgDir), projector.Open(t, h.rulesDir)
	cfg.Set(t, map[string]string{"prometheus.yaml.gz": gz(t, "v: 1\n")})
	rules.Set(t, map[string]string{"a.yaml": "a1"})
	h.start(t)
	h.reloaded(t, 1, "v: 1\n|a.yaml=a1;")

	h.ep.answer(http.StatusInternalServerError, prometheusRejects)
	cfg.Set(t, map[string]string{"prometheus.yaml.gz": gz(t, "v: [\n")})
	h.logs.waitErr(t, `reload `+h.ep.URL+`/-/reload: status 500: `+regexp.QuoteMeta(prometheusRejects))
	// The rendered configuration is ours to restore; the rules volume is
	// the kubelet's, read-only.
	eventually(t, "restore", func() bool { return readFile(h.out) == "v: 1\n" })

	h.ep.answer(http.StatusOK, "")
	cfg.Set(t, map[string]string{"prometheus.yaml.gz": gz(t, "v: 2\n")})
	h.reloaded(t, 2, "v: 2\n|a.yaml=a1;")
}

// sequenceEndpoint answers the reload requests with the statuses given, in
// order, then 200; it records what the process would read at each 200.
type sequenceEndpoint struct {
	*httptest.Server
	mu       sync.Mutex
	statuses []int
	requests int
	seen     []string
}

func newSequenceEndpoint(t *testing.T, snapshot func() string, statuses ...int) *sequenceEndpoint {
	e := &sequenceEndpoint{statuses: statuses}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		e.mu.Lock()
		defer e.mu.Unlock()
		status := http.StatusOK
		if e.requests < len(e.statuses) {
			status = e.statuses[e.requests]
		}
		e.requests++
		if status != http.StatusOK {
			http.Error(w, prometheusRejects, status)
			return
		}
		e.seen = append(e.seen, snapshot())
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *sequenceEndpoint) counts() (requests int, seen []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.requests, slices.Clone(e.seen)
}

// TestRejectedRetried: content Prometheus rejects is tried again with the
// retries' backoff, without a change (it answers 500 too when something
// the configuration loads is not there yet); Rejected is reported until
// a retry succeeds, and what it accepted stays on disk in between.
func TestRejectedRetried(t *testing.T) {
	t.Run("at start: 500, 500, then 200", func(t *testing.T) {
		h, src := sourceHarness(t)
		ep := newSequenceEndpoint(t, func() string { return readFile(h.out) + "|" + readTree(h.rulesDir) }, 500, 500)
		h.opts.Trigger = &HTTPTrigger{URL: mustURL(t, ep.URL+"/-/reload"), Timeout: time.Second}
		src.set("v: 1\n", map[string]string{"cm/a.yaml": "a1"}, nil)
		h.start(t)
		eventually(t, "the third request accepted", func() bool { _, seen := ep.counts(); return len(seen) == 1 })
		requests, seen := ep.counts()
		require.Equal(t, 3, requests)
		require.Equal(t, []string{"v: 1\n|cm/a.yaml=a1;"}, seen)
		eventually(t, "ready", func() bool { return h.r.Ready() == nil })
		require.Equal(t, 2.0, testutil.ToFloat64(h.r.m.rejected))
	})

	t.Run("after an accepted state: the accepted state stays on disk between tries", func(t *testing.T) {
		h, src := sourceHarness(t)
		var log appliedLog
		h.opts.OnApplied = log.add
		h.opts.RetryInterval = 200 * time.Millisecond
		ep := newSequenceEndpoint(t, func() string { return readFile(h.out) + "|" + readTree(h.rulesDir) }, 200, 500, 500)
		h.opts.Trigger = &HTTPTrigger{URL: mustURL(t, ep.URL+"/-/reload"), Timeout: time.Second}
		src.set("v: 1\n", map[string]string{"cm/a.yaml": "a1"}, nil)
		h.start(t)
		eventually(t, "accepted", func() bool { _, seen := ep.counts(); return len(seen) == 1 })
		src.set("v: 2\n", map[string]string{"cm/a.yaml": "a2"}, nil)
		eventually(t, "rejected", func() bool { n, _ := ep.counts(); return n == 2 })
		rejected := log.wait(t, 2)
		require.NotNil(t, rejected.Rejection)
		require.Equal(t, "status 500: "+prometheusRejects, rejected.Rejection.Message)
		eventually(t, "the accepted state back", func() bool { return readFile(h.out)+"|"+readTree(h.rulesDir) == "v: 1\n|cm/a.yaml=a1;" })
		eventually(t, "the retry accepted", func() bool { _, seen := ep.counts(); return len(seen) == 2 })
		requests, seen := ep.counts()
		require.Equal(t, 4, requests)
		require.Equal(t, "v: 2\n|cm/a.yaml=a2;", seen[1])
		accepted := log.wait(t, 3)
		require.Nil(t, accepted.Rejection)
		require.Equal(t, contract.Sum([]byte("v: 2\n"), map[string]string{"cm/a.yaml": "a2"}), accepted.Hash)
		// Reported once per rejection message, not at every retry.
		log.mu.Lock()
		defer log.mu.Unlock()
		require.Len(t, log.all, 3)
	})
}

// TestRejectedRetryNotAnswered: a retry of rejected content that the
// process does not answer (503: starting) leaves the accepted state on
// disk, not the rejected content.
func TestRejectedRetryNotAnswered(t *testing.T) {
	h, src := sourceHarness(t)
	h.opts.RetryInterval = 50 * time.Millisecond
	statuses := []int{200, 500}
	for range 1000 {
		statuses = append(statuses, http.StatusServiceUnavailable)
	}
	ep := newSequenceEndpoint(t, func() string { return "" }, statuses...)
	h.opts.Trigger = &HTTPTrigger{URL: mustURL(t, ep.URL+"/-/reload"), Timeout: time.Second}
	src.set("v: 1\n", map[string]string{"cm/a.yaml": "a1"}, nil)
	h.start(t)
	eventually(t, "accepted", func() bool { n, _ := ep.counts(); return n == 1 })
	src.set("v: 2\n", map[string]string{"cm/a.yaml": "a2"}, nil)
	eventually(t, "a retry not answered", func() bool { n, _ := ep.counts(); return n >= 3 })
	eventually(t, "the accepted state on disk", func() bool { return readFile(h.out)+"|"+readTree(h.rulesDir) == "v: 1\n|cm/a.yaml=a1;" })
}

func TestRejectedWithoutKeepAcceptedIsRetried(t *testing.T) {
	h, src := sourceHarness(t)
	h.opts.KeepAccepted = false
	src.set("v: 1\n", nil, nil)
	h.ep.answer(http.StatusInternalServerError, prometheusRejects)
	h.start(t)
	eventually(t, "retries", func() bool { return testutil.ToFloat64(h.r.m.reloadsFailed) >= 3 })
	require.Zero(t, testutil.ToFloat64(h.r.m.rejected))
	h.ep.answer(http.StatusOK, "")
	h.reloaded(t, 1, "v: 1\n|")
}
