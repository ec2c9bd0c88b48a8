package reloader

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// degradedLike waits until Degraded says what every pattern, an anchored
// regexp, matches, in that order, one line each.
func degradedLike(t *testing.T, r *Reloader, patterns ...string) {
	t.Helper()
	re := regexp.MustCompile("^" + strings.Join(patterns, "\n") + "$")
	var last string
	eventually(t, "degraded: "+strings.Join(patterns, " / "), func() bool {
		if err := r.Degraded(); err != nil {
			last = err.Error()
		}
		return re.MatchString(last)
	})
}

// TestBlankInputsHeldBack empties the configuration and rule files with
// whitespace, plain and gzipped: each is held back as a 0-byte one is,
// its last version kept, counted by reason, and said by Degraded.
func TestBlankInputsHeldBack(t *testing.T) {
	h, src := sourceHarness(t)
	good := map[string]string{"cm/a.yaml": "a1", "cm/b.yaml.gz": gz(t, "b1")}
	src.set("v: 1\n", good, nil)
	h.start(t)
	h.reloaded(t, 1, "v: 1\n|cm/a.yaml=a1;cm/b.yaml=b1;")
	held := func() float64 { return testutil.ToFloat64(h.r.m.heldBack.WithLabelValues(reasonEmpty)) }
	require.Equal(t, 0.0, held())

	src.set(" \n\t\n", good, nil)
	degradedLike(t, h.r, regexp.QuoteMeta(`read config: secret test/cfg key prometheus.yaml.gz holds nothing but whitespace (4 bytes) where the last configuration rendered had 5 bytes: held back as a truncated or emptied input: the configuration last rendered is served`))
	require.Equal(t, 1.0, held())
	require.Equal(t, "v: 1\n", readFile(h.out))

	src.set("v: 2\n", map[string]string{"cm/a.yaml": "", "cm/b.yaml.gz": gz(t, "\n  \n")}, nil)
	h.reloaded(t, 2, "v: 2\n|cm/a.yaml=a1;cm/b.yaml=b1;")
	degradedLike(t, h.r,
		regexp.QuoteMeta(`cm/a.yaml: is empty where its last version had content: held back as a truncated or emptied input (keeping the last good file)`),
		regexp.QuoteMeta(`cm/b.yaml.gz: holds nothing but whitespace (4 bytes) where its last version had content: held back as a truncated or emptied input (keeping the last good file)`))
	require.Equal(t, 2.0, held())

	// A new file that is empty has nothing to hold back; a file with
	// content again is applied.
	src.set("v: 2\n", map[string]string{"cm/a.yaml": "a3", "cm/b.yaml.gz": gz(t, "b3"), "cm/c.yaml": " "}, nil)
	h.reloaded(t, 3, "v: 2\n|cm/a.yaml=a3;cm/b.yaml=b3;cm/c.yaml= ;")
	eventually(t, "not degraded", func() bool { return h.r.Degraded() == nil })
	require.Equal(t, 0.0, held())
}

func TestBlankInputsAllowed(t *testing.T) {
	h, src := sourceHarness(t)
	h.opts.AllowEmptyConfig = true
	src.set("v: 1\n", map[string]string{"cm/a.yaml": "a1"}, nil)
	h.start(t)
	h.reloaded(t, 1, "v: 1\n|cm/a.yaml=a1;")
	src.set("\n", map[string]string{"cm/a.yaml": ""}, nil)
	h.reloaded(t, 2, "\n|cm/a.yaml=;")
	require.NoError(t, h.r.Degraded())
}

// TestDegradedStates goes through the states in which the process runs,
// but not on what was given: Degraded names each, and what is served.
func TestDegradedStates(t *testing.T) {
	h, src := sourceHarness(t)
	h.opts.RetryInterval = time.Hour
	src.set("v: 1\n", map[string]string{"cm/a.yaml.gz": gz(t, "a1")}, nil)
	h.start(t)
	h.reloaded(t, 1, "v: 1\n|cm/a.yaml=a1;")
	require.NoError(t, h.r.Degraded())

	// A rule file that is not gzipped.
	src.set("v: 1\n", map[string]string{"cm/a.yaml.gz": "a2"}, nil)
	degradedLike(t, h.r, regexp.QuoteMeta(`cm/a.yaml.gz: gunzip: not gzipped (no gzip magic bytes) (keeping the last good file)`))

	// The configuration's output cannot be written.
	restore := readOnly(t, filepath.Dir(h.out))
	src.set("v: 2\n", map[string]string{"cm/a.yaml.gz": gz(t, "a2")}, nil)
	h.reloaded(t, 2, "v: 1\n|cm/a.yaml=a2;")
	degradedLike(t, h.r, regexp.QuoteMeta(`write `+h.out+`: open `+filepath.Dir(h.out)+`/.prometheus.env.yaml.tmp`)+`[0-9]+: .*`+regexp.QuoteMeta(` (keeping the previous config)`))
	require.NoError(t, h.r.Ready())
	restore()
	src.set("v: 2\n", map[string]string{"cm/a.yaml.gz": gz(t, "a2")}, nil) // No retry before an hour: a change.
	h.reloaded(t, 3, "v: 2\n|cm/a.yaml=a2;")
	eventually(t, "not degraded", func() bool { return h.r.Degraded() == nil })

	// Rejected: the accepted state is back on disk, and served.
	h.ep.answer(http.StatusInternalServerError, prometheusRejects)
	src.set("v: [\n", map[string]string{"cm/a.yaml.gz": gz(t, "a2")}, nil)
	degradedLike(t, h.r, `the process rejected the current content at [0-9TZ:-]+: `+regexp.QuoteMeta(`status 500: `+prometheusRejects+`; the last accepted state is served, written back`))
	require.Equal(t, "v: 2\n", readFile(h.out))
	require.NoError(t, h.r.Ready())

	// Back to what the process runs: nothing amiss.
	src.set("v: 2\n", map[string]string{"cm/a.yaml.gz": gz(t, "a2")}, nil)
	eventually(t, "not degraded", func() bool { return h.r.Degraded() == nil })
}

// TestReadyOnTheOutputAtStart starts over an output that has content
// while the input is held back: the process runs the output, which Ready
// and Degraded say, rather than "no reload has succeeded yet".
func TestReadyOnTheOutputAtStart(t *testing.T) {
	for _, tc := range []struct {
		name, input, cause string
	}{
		{"empty", gz(t, ""), "is empty where the last configuration rendered had 5 bytes: held back as a truncated or emptied input"},
		{"whitespace", "\n\n", "holds nothing but whitespace (2 bytes) where the last configuration rendered had 5 bytes: held back as a truncated or emptied input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			plainFiles(t, h, tc.input)
			require.NoError(t, writeAtomic(h.out, []byte("a: 0\n")))
			h.start(t)
			degradedLike(t, h.r, regexp.QuoteMeta(`read config: `+h.opts.ConfigFile+` `+tc.cause+`: the configuration `+h.out+` held at start is served`))
			require.NoError(t, h.r.Ready())
			require.Equal(t, "a: 0\n", readFile(h.out))
			require.Empty(t, h.ep.reloads())
		})
	}
	t.Run("no output", func(t *testing.T) {
		h := newHarness(t)
		plainFiles(t, h, "a: ${")
		h.opts.Expander = nil
		h.ep.answer(http.StatusInternalServerError, prometheusRejects)
		h.opts.KeepAccepted = true
		h.start(t)
		want := regexp.MustCompile(`^not ready: no reload has succeeded yet; the process rejected the current content at [0-9TZ:-]+: ` +
			regexp.QuoteMeta(`status 500: `+prometheusRejects+`; no accepted state is known to write back`) + `$`)
		eventually(t, "not ready, rejected", func() bool { err := h.r.Ready(); return err != nil && want.MatchString(err.Error()) })
	})
}

// TestFirstReloadRejected starts a reloader that keeps no state over
// outputs the process runs, and whose first reload the process rejects:
// the outputs are written back, kept in the state dir with the rejection,
// and an init container started on the rejected content writes them.
func TestFirstReloadRejected(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stateDir func(t *testing.T) string
	}{
		{"default state dir", func(*testing.T) string { return "" }},
		{"empty state dir", func(t *testing.T) string { return t.TempDir() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, src := sourceHarness(t)
			h.opts.StateDir = tc.stateDir(t)
			h.opts.RetryInterval = time.Hour
			require.NoError(t, writeAtomic(h.out, []byte("v: 0\n")))
			require.NoError(t, writeAtomic(filepath.Join(h.rulesDir, "cm", "a.yaml"), []byte("a0")))
			h.ep.answer(http.StatusInternalServerError, prometheusRejects)
			bad := map[string]string{"cm/a.yaml": "bad", "cm/b.yaml": "b1"}
			src.set("v: [\n", bad, nil)
			h.start(t)
			eventually(t, "rejected", func() bool { return testutil.ToFloat64(h.r.m.rejected) == 1 })
			eventually(t, "outputs written back", func() bool {
				return readFile(h.out)+"|"+readTree(h.rulesDir) == "v: 0\n|cm/a.yaml=a0;"
			})
			require.NoError(t, h.r.Ready())
			degradedLike(t, h.r, `the process rejected the current content at .*; the last accepted state is served, written back`)
			stateDir := h.opts.StateDir
			if stateDir == "" {
				stateDir = filepath.Join(filepath.Dir(h.out), DefaultStateDir)
			}
			require.FileExists(t, filepath.Join(stateDir, acceptedFile))
			require.FileExists(t, filepath.Join(stateDir, rejectedFile))

			// The pod again: its init container, on the rejected content.
			require.NoError(t, os.Remove(h.out))
			require.NoError(t, os.RemoveAll(h.rulesDir))
			opts := h.opts
			opts.StateDir = stateDir
			init, err := New(nil, nil, opts)
			require.NoError(t, err)
			require.NoError(t, init.Render())
			require.Equal(t, "v: 0\n|cm/a.yaml=a0;", readFile(h.out)+"|"+readTree(h.rulesDir))

			// Accepted: it replaces what the outputs held.
			h.ep.answer(http.StatusOK, "")
			src.set("v: 1\n", bad, nil)
			h.reloaded(t, 1, "v: 1\n|cm/a.yaml=bad;cm/b.yaml=b1;")
		})
	}
}

// TestFullDisk fills the disk of the configuration's output (a tmpfs of
// 64 KiB, as root): the write fails, the configuration Prometheus runs
// stays whole on disk, no temporary file is left taking space, and
// Degraded says it; once there is room, the next try writes and reloads.
func TestFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs (CAP_SYS_ADMIN): run as root, as make test does for e2e/node")
	}
	h, src := sourceHarness(t)
	dir := filepath.Dir(h.out)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"), "mount a tmpfs on %s", dir)
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	src.set("v: 1\n", nil, nil)
	h.start(t)
	h.reloaded(t, 1, "v: 1\n|")

	filler := filepath.Join(dir, "filler")
	err := os.WriteFile(filler, make([]byte, 1<<20), 0o644)
	require.ErrorIs(t, err, syscall.ENOSPC, "the tmpfs filled")
	big := "v: 2\n# " + strings.Repeat("x", 16<<10) + "\n"
	src.set(big, nil, nil)
	degradedLike(t, h.r, regexp.QuoteMeta(`write `+h.out+`: `)+`.*`+regexp.QuoteMeta(`: no space left on device (keeping the previous config)`))
	require.Equal(t, "v: 1\n", readFile(h.out))
	require.NoError(t, h.r.Ready())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.NotContains(t, e.Name(), ".tmp", "a temporary file left on the full disk")
	}
	require.Len(t, h.ep.reloads(), 1)

	require.NoError(t, os.Remove(filler))
	h.reloaded(t, 2, big+"|")
	eventually(t, "not degraded", func() bool { return h.r.Degraded() == nil })
}
