package reloader

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// plainFiles starts h on plain directories (no kubelet volume): a config
// file with content cfg and an empty rules directory.
func plainFiles(t *testing.T, h *harness, cfg string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(h.cfgDir, 0o755))
	require.NoError(t, os.MkdirAll(h.rulesDir, 0o755))
	require.NoError(t, writeAtomic(h.opts.ConfigFile, []byte(cfg)))
}

// lastReload waits until the last reload saw state: a plain write into a
// watched directory is seen, and may be reloaded, half done.
func lastReload(t *testing.T, h *harness, state string) {
	t.Helper()
	eventually(t, "reload "+state, func() bool {
		r := h.ep.reloads()
		return len(r) > 0 && r[len(r)-1] == state
	})
}

// mkfifo replaces path with a named pipe nothing ever writes to.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	require.NoError(t, os.RemoveAll(path))
	require.NoError(t, syscall.Mkfifo(path, 0o644))
}

func TestNotRegularFiles(t *testing.T) {
	t.Run("config replaced by a named pipe", func(t *testing.T) {
		h := newHarness(t)
		plainFiles(t, h, "a: 1\n")
		h.start(t)
		h.reloaded(t, 1, "a: 1\n|")

		mkfifo(t, h.opts.ConfigFile)
		h.logs.waitErr(t, regexp.QuoteMeta(`read config: open `+h.opts.ConfigFile+`: not a regular file (named pipe) (keeping the previous config)`))
		require.Positive(t, testutil.ToFloat64(h.r.m.appliesFailed))
		// The engine goes on: a rules change is applied with the last good config.
		require.NoError(t, writeAtomic(filepath.Join(h.rulesDir, "a.yaml"), []byte("a1")))
		lastReload(t, h, "a: 1\n|a.yaml=a1;")
		require.NoError(t, h.r.Ready())

		require.NoError(t, os.Remove(h.opts.ConfigFile))
		require.NoError(t, writeAtomic(h.opts.ConfigFile, []byte("a: 2\n")))
		lastReload(t, h, "a: 2\n|a.yaml=a1;")
	})

	t.Run("named pipe in place of a watched dir", func(t *testing.T) {
		h := newHarness(t)
		plainFiles(t, h, "a: 1\n")
		h.start(t)
		h.reloaded(t, 1, "a: 1\n|")

		mkfifo(t, h.rulesDir)
		h.logs.waitErr(t, regexp.QuoteMeta(`read watched dir `+h.rulesDir+`: read dir: open `+h.rulesDir+`: not a directory`))
		require.Len(t, h.ep.reloads(), 1)

		require.NoError(t, os.Remove(h.rulesDir))
		require.NoError(t, writeAtomic(filepath.Join(h.rulesDir, "a.yaml"), []byte("a1")))
		lastReload(t, h, "a: 1\n|a.yaml=a1;")
	})

	t.Run("named pipe at the output path", func(t *testing.T) {
		h := newHarness(t)
		plainFiles(t, h, "a: 1\n")
		require.NoError(t, os.MkdirAll(filepath.Dir(h.out), 0o755))
		mkfifo(t, h.out)
		h.start(t)
		// The output is ours: the rename replaces the pipe, never opened.
		h.reloaded(t, 1, "a: 1\n|")
		fi, err := os.Lstat(h.out)
		require.NoError(t, err)
		require.True(t, fi.Mode().IsRegular(), "%s", fi.Mode())
	})
}

// blockingTrigger is a reload endpoint that never answers until released.
type blockingTrigger struct{ release chan struct{} }

func (b blockingTrigger) Reload(ctx context.Context) error {
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (blockingTrigger) String() string { return "blocking" }

func TestReadyReportsAStuckApply(t *testing.T) {
	h := newHarness(t)
	plainFiles(t, h, "a: 1\n")
	trigger := blockingTrigger{release: make(chan struct{})}
	h.opts.Trigger = trigger
	r, err := New(nil, h.reg, h.opts)
	require.NoError(t, err)
	r.stuck = 50 * time.Millisecond
	require.EqualError(t, r.Ready(), "not ready: no reload has succeeded yet")
	start(t, r)

	eventually(t, "stuck apply reported", func() bool {
		err := r.Ready()
		return err != nil && err.Error() == "not ready: an apply has been running for more than 50ms"
	})
	close(trigger.release)
	eventually(t, "ready", func() bool { return r.Ready() == nil })
}

func TestConfigMaxSize(t *testing.T) {
	h := newHarness(t)
	h.opts.MaxConfigSize = 64 << 10
	plainFiles(t, h, "a: 1\n")
	h.start(t)
	h.reloaded(t, 1, "a: 1\n|")

	// 1 MiB gzipped into about 1 KiB.
	require.NoError(t, writeAtomic(h.opts.ConfigFile, []byte(gz(t, strings.Repeat("#", 1<<20)))))
	h.logs.waitErr(t, regexp.QuoteMeta(`read config: gunzip `+h.opts.ConfigFile+`: larger than 64 KiB (keeping the previous config)`))
	require.NoError(t, writeAtomic(h.opts.ConfigFile, []byte(strings.Repeat("#", 64<<10+1))))
	h.logs.waitErr(t, regexp.QuoteMeta(`read config: read `+h.opts.ConfigFile+`: larger than 64 KiB (keeping the previous config)`))
	require.Equal(t, "a: 1\n", readFile(h.out))
	require.Len(t, h.ep.reloads(), 1)
	require.Positive(t, testutil.ToFloat64(h.r.m.appliesFailed))

	limit := "a: 2\n" + strings.Repeat("#", 64<<10-5)
	require.NoError(t, writeAtomic(h.opts.ConfigFile, []byte(gz(t, limit))))
	h.reloaded(t, 2, limit+"|")
}

func TestReadAll(t *testing.T) {
	const limit = 1000
	for _, tc := range []struct {
		name       string
		size, hint int64
		err        string
	}{
		{"empty", 0, 0, ""},
		{"under the limit", 999, 999, ""},
		{"at the limit", 1000, 1000, ""},
		{"at the limit, hint too small", 1000, 10, ""},
		{"at the limit, hint too large", 1000, 1000, ""},
		{"over the limit", 1001, 1001, "larger than 1000 bytes"},
		{"over the limit, hint too small", 5000, 0, "larger than 1000 bytes"},
		{"hint over the limit", 10, 1001, "larger than 1000 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.Repeat("x", int(tc.size))
			var read int64
			b, err := readAll(countingReader{strings.NewReader(in), &read}, tc.hint, limit)
			require.LessOrEqual(t, read, int64(limit+1), "read past the limit")
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, in, string(b))
		})
	}
}

// countingReader counts the bytes read from r.
type countingReader struct {
	r interface{ Read([]byte) (int, error) }
	n *int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}

func TestFormatSize(t *testing.T) {
	for in, want := range map[int64]string{0: "0 bytes", 1000: "1000 bytes", 1024: "1 KiB", 3 << 19: "1536 KiB", 16 << 20: "16 MiB"} {
		require.Equal(t, want, formatSize(in), in)
	}
}

// TestSteadyStream changes a rule every few milliseconds, faster than the
// coalescing window: reloads go on during the stream instead of waiting for
// it to end (at most ten windows apart: TestSchedule).
func TestSteadyStream(t *testing.T) {
	h := newHarness(t)
	h.opts.QuietWindow = 0 // DefaultQuietWindow
	plainFiles(t, h, "a: 1\n")
	h.start(t)
	h.reloaded(t, 1, "a: 1\n|")

	i := 0
	eventually(t, "six reloads during the stream", func() bool {
		i++ // Each check is also a change.
		require.NoError(t, os.WriteFile(filepath.Join(h.rulesDir, "a.yaml"), []byte(strconv.Itoa(i)), 0o644))
		return len(h.ep.reloads()) >= 6
	})
}

// failures returns the attempt numbers of the "apply failed" records
// logged since the first n lines.
func (l *logs) failures(n int) []int {
	lines := strings.Split(l.String(), "\n")
	var attempts []int
	for _, line := range lines[min(n, len(lines)):] {
		var rec struct {
			Msg     string
			Attempt int
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "apply failed" {
			attempts = append(attempts, rec.Attempt)
		}
	}
	return attempts
}

func (l *logs) lines() int {
	return strings.Count(l.String(), "\n")
}

// TestBackoffStartsAgain lets failures grow the backoff, then checks that
// the next failure is retried after the first interval again.
func TestBackoffStartsAgain(t *testing.T) {
	t.Run("when the content changes", func(t *testing.T) {
		h := newHarness(t)
		h.ep.answer(http.StatusInternalServerError, "no")
		plainFiles(t, h, "a: 1\n")
		h.start(t)
		eventually(t, "five failures", func() bool { return slices.Contains(h.logs.failures(0), 5) })

		n := h.logs.lines()
		require.NoError(t, os.WriteFile(filepath.Join(h.rulesDir, "a.yaml"), []byte("a1"), 0o644))
		eventually(t, "a first attempt again", func() bool { return slices.Contains(h.logs.failures(n), 1) })
		h.ep.answer(http.StatusOK, "")
		lastReload(t, h, "a: 1\n|a.yaml=a1;")
	})

	t.Run("when a reload succeeds", func(t *testing.T) {
		// The configuration turns invalid (an undefined variable) and
		// stays so: every apply fails, even once the endpoint, failing at
		// first, accepts the rules with the last good configuration.
		h := newHarness(t)
		plainFiles(t, h, "a: 1\n")
		h.start(t)
		h.reloaded(t, 1, "a: 1\n|")
		h.ep.answer(http.StatusInternalServerError, "no")
		require.NoError(t, writeAtomic(h.opts.ConfigFile, []byte("a: $(NOPE)\n")))
		require.NoError(t, writeAtomic(filepath.Join(h.rulesDir, "a.yaml"), []byte("a1")))
		eventually(t, "five failures", func() bool { return slices.Contains(h.logs.failures(0), 5) })

		n := h.logs.lines()
		h.ep.answer(http.StatusOK, "")
		lastReload(t, h, "a: 1\n|a.yaml=a1;")
		eventually(t, "a first attempt again", func() bool { return slices.Contains(h.logs.failures(n), 1) })
	})
}

// TestStaleTempFiles plants the temporary files a kill -9 during a write
// leaves: starting removes them, and only them.
func TestStaleTempFiles(t *testing.T) {
	for _, mode := range []string{"run", "render"} {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t)
			plainFiles(t, h, "a: 1\n")
			dir := filepath.Dir(h.out)
			require.NoError(t, os.MkdirAll(filepath.Join(dir, ".prometheus.env.yaml.tmp5"), 0o755))
			keep := []string{
				".prometheus.env.yaml.tmp", ".prometheus.env.yaml.tmp12x", ".prometheus.env.yaml.tmp5", // a directory
				"prometheus.env.yaml.tmp1", ".other.yaml.tmp1", ".prometheus.env.yaml.tmp1.bak", "x.yaml",
			}
			for _, name := range append([]string{".prometheus.env.yaml.tmp1", ".prometheus.env.yaml.tmp3589636199"}, keep...) {
				if name != ".prometheus.env.yaml.tmp5" {
					require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("half"), 0o644))
				}
			}
			if mode == "render" {
				r, err := New(nil, h.reg, h.opts)
				require.NoError(t, err)
				require.NoError(t, r.Render())
			} else {
				h.start(t)
				h.reloaded(t, 1, "a: 1\n|")
			}
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			require.ElementsMatch(t, append(keep, "prometheus.env.yaml"), names)
		})
	}
}

func TestOpenRegular(t *testing.T) {
	dir := t.TempDir()
	file, pipe := filepath.Join(dir, "file"), filepath.Join(dir, "pipe")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	mkfifo(t, pipe)
	require.NoError(t, os.Symlink("pipe", filepath.Join(dir, "link")))
	for _, tc := range []struct{ name, err string }{
		{"file", ""},
		{"pipe", "open " + pipe + ": not a regular file (named pipe)"},
		{"link", "open " + filepath.Join(dir, "link") + ": not a regular file (named pipe)"},
		{".", "open " + dir + ": not a regular file (directory)"},
		{"missing", "open " + filepath.Join(dir, "missing") + ": no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _, err := openRegular(filepath.Join(dir, tc.name))
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			defer f.Close()
			c, err := f.SyscallConn()
			require.NoError(t, err)
			var flags int
			require.NoError(t, c.Control(func(fd uintptr) { flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0) }))
			require.NoError(t, err)
			require.Zero(t, flags&unix.O_NONBLOCK, "a regular file is read in blocking mode")
		})
	}
}
