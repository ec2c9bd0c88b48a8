package reloader

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/internal/testenv/projector"
)

// The content hash of what a volume presents is the one of the same
// content read from the API: the sidecar reports the same hash either way.
func TestVolumeContentHashAgreesWithSource(t *testing.T) {
	root := t.TempDir()
	config := gz(t, "global: {}\n")
	files := map[string]string{"main-rulefiles-0/a.yaml": "groups: []\n", "main-rulefiles-0/b.yaml": "b", "main-rulefiles-1/c.yaml": ""}
	dirs := []string{filepath.Join(root, "main-rulefiles-0"), filepath.Join(root, "main-rulefiles-1"), filepath.Join(root, "main-rulefiles-2")}
	projector.Open(t, dirs[0]).Set(t, map[string]string{"a.yaml": "groups: []\n", "b.yaml": "b"})
	second := projector.Open(t, dirs[1])
	second.Set(t, map[string]string{"c.yaml": ""})
	// dirs[2] is missing: a ConfigMap not there yet holds no files.
	require.NoError(t, os.Mkdir(filepath.Join(dirs[1], "sub"), 0o755))

	want := contract.Sum([]byte(config), files)
	got, err := volumeContentHash([]byte(config), nil, dirs, DefaultMaxConfigSize)
	require.NoError(t, err)
	require.Equal(t, want, got)

	second.Set(t, map[string]string{"c.yaml": "changed"})
	got, err = volumeContentHash([]byte(config), nil, dirs, DefaultMaxConfigSize)
	require.NoError(t, err)
	require.NotEqual(t, want, got)
}

// TestVolumeContentHashLeavesOut: a file of a watched dir that cannot be
// read is left out of the content hash, as it is of the apply.
func TestVolumeContentHashLeavesOut(t *testing.T) {
	dir := t.TempDir()
	empty, err := volumeContentHash(nil, nil, []string{dir}, 10)
	require.NoError(t, err)
	unreadable(t, filepath.Join(dir, "x.yaml"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.yaml"), make([]byte, 11), 0o644))
	got, err := volumeContentHash(nil, nil, []string{dir}, 10)
	require.NoError(t, err)
	require.Equal(t, empty, got)

	_, err = volumeContentHash(nil, nil, []string{filepath.Join(dir, "big.yaml")}, 10)
	require.ErrorContains(t, err, "hash watched dir: ")
}

// appliedLog records what OnApplied is given.
type appliedLog struct {
	mu  sync.Mutex
	all []Applied
}

func (l *appliedLog) add(a Applied) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, a)
}

// wait waits for the nth report and returns it.
func (l *appliedLog) wait(t *testing.T, n int) Applied {
	t.Helper()
	eventually(t, fmt.Sprintf("report %d", n), func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.all) >= n
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Len(t, l.all, n, "one report per change of what the process runs")
	return l.all[n-1]
}

func TestOnAppliedFromSource(t *testing.T) {
	h, src := sourceHarness(t)
	h.opts.WatchInterval = 20 * time.Millisecond // Safety ticks report nothing.
	var log appliedLog
	h.opts.OnApplied = log.add
	good := map[string]string{"cm/a.yaml": "a1"}
	config := gz(t, "v: 1\n")
	src.set(config, good, nil)
	before := time.Now()
	h.start(t)
	h.reloaded(t, 1, "v: 1\n|cm/a.yaml=a1;")
	first := log.wait(t, 1)
	require.Equal(t, contract.Sum([]byte(config), good), first.Hash)
	require.WithinRange(t, first.Time, before, time.Now())
	require.Nil(t, first.Rejection)

	// Rejected: the hash stays the one Prometheus runs.
	h.ep.answer(http.StatusInternalServerError, prometheusRejects)
	src.set("v: [\n", good, nil)
	rejected := log.wait(t, 2)
	require.Equal(t, first.Hash, rejected.Hash)
	require.Equal(t, first.Time, rejected.Time)
	require.NotNil(t, rejected.Rejection)
	require.Equal(t, "status 500: "+prometheusRejects, rejected.Rejection.Message)
	require.False(t, rejected.Rejection.Time.Before(first.Time))

	// Back to what Prometheus runs: no reload, the rejection is over.
	h.ep.answer(http.StatusOK, "")
	src.set(config, good, nil)
	require.Equal(t, Applied{Hash: first.Hash, Time: first.Time}, log.wait(t, 3))

	// A change accepted: a new hash; safety ticks in between report nothing.
	applies := testutil.ToFloat64(h.r.m.applies)
	eventually(t, "safety ticks", func() bool { return testutil.ToFloat64(h.r.m.applies) >= applies+3 })
	src.set(config, map[string]string{"cm/a.yaml": "a2"}, nil)
	h.reloaded(t, 2, "v: 1\n|cm/a.yaml=a2;")
	second := log.wait(t, 4)
	require.Equal(t, contract.Sum([]byte(config), map[string]string{"cm/a.yaml": "a2"}), second.Hash)
	require.Nil(t, second.Rejection)
}

func TestOnAppliedFromVolume(t *testing.T) {
	h := newHarness(t)
	h.opts.KeepAccepted = true
	var log appliedLog
	h.opts.OnApplied = log.add
	cfg, rules := projector.Open(t, h.cfgDir), projector.Open(t, h.rulesDir)
	config := gz(t, "v: 1\n")
	cfg.Set(t, map[string]string{"prometheus.yaml.gz": config})
	rules.Set(t, map[string]string{"a.yaml": "a1"})
	h.start(t)
	h.reloaded(t, 1, "v: 1\n|a.yaml=a1;")
	// The rules directory's base name stands for its ConfigMap.
	first := log.wait(t, 1)
	require.Equal(t, contract.Sum([]byte(config), map[string]string{"rules/a.yaml": "a1"}), first.Hash)

	h.ep.answer(http.StatusInternalServerError, prometheusRejects)
	rules.Set(t, map[string]string{"a.yaml": "bad"})
	rejected := log.wait(t, 2)
	require.Equal(t, first.Hash, rejected.Hash)
	require.Equal(t, "status 500: "+prometheusRejects, rejected.Rejection.Message)

	h.ep.answer(http.StatusOK, "")
	cfg.Set(t, map[string]string{"prometheus.yaml.gz": "v: 2\n"})
	h.reloaded(t, 2, "v: 2\n|a.yaml=bad;")
	last := log.wait(t, 3)
	require.Equal(t, contract.Sum([]byte("v: 2\n"), map[string]string{"rules/a.yaml": "bad"}), last.Hash)
	require.Nil(t, last.Rejection)
}
