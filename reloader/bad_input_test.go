package reloader

import (
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/internal/testenv/projector"
	"github.com/podreload/podreload/internal/testenv/testlog"
)

// logs collects JSON log records.
type logs struct{ testlog.Buffer }

// waitErr waits for a logged error matching the anchored regexp pattern.
func (l *logs) waitErr(t *testing.T, pattern string) {
	t.Helper()
	re := regexp.MustCompile("^" + pattern + "$")
	var errs []string
	eventually(t, "error "+pattern, func() bool {
		lines := strings.Split(l.String(), "\n")
		errs = errs[:0]
		for _, line := range lines {
			var rec struct{ Err string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Err != "" {
				errs = append(errs, rec.Err)
				if re.MatchString(rec.Err) {
					return true
				}
			}
		}
		return false
	})
}

type harness struct {
	*setup
	logs logs
	r    *Reloader
}

func newHarness(t *testing.T) *harness {
	return &harness{setup: newSetup(t)}
}

func (h *harness) start(t *testing.T) {
	var err error
	h.r, err = New(slog.New(slog.NewJSONHandler(&h.logs, nil)), h.reg, h.opts)
	require.NoError(t, err)
	start(t, h.r)
}

func (h *harness) reloaded(t *testing.T, n int, state string) {
	t.Helper()
	eventually(t, "reload "+state, func() bool { return len(h.ep.reloads()) == n })
	require.Equal(t, state, h.ep.reloads()[n-1])
}

// unreadable creates a file at path that this process cannot read: mode 000,
// or, for root, a link to a write-only sysfs file.
func unreadable(t *testing.T, path string) {
	if os.Geteuid() != 0 {
		require.NoError(t, os.WriteFile(path, []byte("x"), 0o000))
		return
	}
	const writeOnly = "/sys/bus/pci/rescan"
	_, err := os.ReadFile(writeOnly)
	require.ErrorIs(t, err, os.ErrPermission, "root needs a file it cannot read: %s", writeOnly)
	require.NoError(t, os.Symlink(writeOnly, path))
}

// readOnly makes dir read-only (as root, by mounting it read-only) until the
// returned function restores it.
func readOnly(t *testing.T, dir string) (restore func()) {
	if os.Geteuid() != 0 {
		require.NoError(t, os.Chmod(dir, 0o555))
		return func() { require.NoError(t, os.Chmod(dir, 0o755)) }
	}
	require.NoError(t, syscall.Mount(dir, dir, "", syscall.MS_BIND, ""), "bind mount %s (root needs CAP_SYS_ADMIN for this test)", dir)
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	require.NoError(t, syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""))
	return func() {
		require.NoError(t, syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_BIND, ""))
	}
}

func TestBadInput(t *testing.T) {
	t.Run("undefined variable", func(t *testing.T) {
		h := newHarness(t)
		cfg := projector.Open(t, h.cfgDir)
		cfg.Set(t, map[string]string{"prometheus.yaml.gz": "a: 1\n"})
		h.start(t)
		h.reloaded(t, 1, "a: 1\n|")

		cfg.Set(t, map[string]string{"prometheus.yaml.gz": gz(t, "a: 2\nb: $(NOPE) $(NOPE)\n")})
		h.logs.waitErr(t, regexp.QuoteMeta(`expand `+h.opts.ConfigFile+`: line 2: environment variable "NOPE" is not set, and 1 more (keeping the previous config)`))
		require.Equal(t, "a: 1\n", readFile(h.out))
		require.Len(t, h.ep.reloads(), 1)
		require.Equal(t, 2.0, testutil.ToFloat64(h.r.m.expansionErrors))
		require.Positive(t, testutil.ToFloat64(h.r.m.appliesFailed))

		cfg.Set(t, map[string]string{"prometheus.yaml.gz": "a: 3\n"})
		h.reloaded(t, 2, "a: 3\n|")
	})

	t.Run("invalid gzip", func(t *testing.T) {
		h := newHarness(t)
		cfg := projector.Open(t, h.cfgDir)
		cfg.Set(t, map[string]string{"prometheus.yaml.gz": gz(t, "a: 1\n")})
		h.start(t)
		h.reloaded(t, 1, "a: 1\n|")

		cfg.Set(t, map[string]string{"prometheus.yaml.gz": "\x1f\x8bnot gzip"})
		h.logs.waitErr(t, regexp.QuoteMeta(`read config: gunzip `+h.opts.ConfigFile+`: gzip: invalid header (keeping the previous config)`))
		degradedLike(t, h.r, regexp.QuoteMeta(`read config: gunzip `+h.opts.ConfigFile+`: gzip: invalid header: the configuration last rendered is served`))
		require.NoError(t, h.r.Ready())
		truncated := gz(t, "a: 2\n")
		cfg.Set(t, map[string]string{"prometheus.yaml.gz": truncated[:len(truncated)-4]})
		h.logs.waitErr(t, regexp.QuoteMeta(`read config: gunzip `+h.opts.ConfigFile+`: unexpected EOF (keeping the previous config)`))
		require.Equal(t, "a: 1\n", readFile(h.out))
		require.Len(t, h.ep.reloads(), 1)

		cfg.Set(t, map[string]string{"prometheus.yaml.gz": gz(t, "a: 3\n")})
		h.reloaded(t, 2, "a: 3\n|")
		eventually(t, "not degraded", func() bool { return h.r.Degraded() == nil })
	})

	t.Run("config missing at start", func(t *testing.T) {
		h := newHarness(t)
		h.start(t)
		h.logs.waitErr(t, regexp.QuoteMeta(`read config: open `+h.opts.ConfigFile+`: no such file or directory`))
		require.Empty(t, h.ep.reloads())
		require.Positive(t, testutil.ToFloat64(h.r.m.appliesFailed))

		projector.Open(t, h.cfgDir).Set(t, map[string]string{"prometheus.yaml.gz": "a: 1\n"})
		h.reloaded(t, 1, "a: 1\n|")
	})

	t.Run("read-only output dir", func(t *testing.T) {
		h := newHarness(t)
		cfg := projector.Open(t, h.cfgDir)
		cfg.Set(t, map[string]string{"prometheus.yaml.gz": "a: 1\n"})
		h.start(t)
		h.reloaded(t, 1, "a: 1\n|")

		restore := readOnly(t, filepath.Dir(h.out))
		cfg.Set(t, map[string]string{"prometheus.yaml.gz": "a: 2\n"})
		cause := "read-only file system"
		if os.Geteuid() != 0 {
			cause = "permission denied"
		}
		h.logs.waitErr(t, regexp.QuoteMeta(`write `+h.out+`: open `+filepath.Dir(h.out)+`/.prometheus.env.yaml.tmp`)+`[0-9]+: `+cause+regexp.QuoteMeta(` (keeping the previous config)`))
		require.Equal(t, "a: 1\n", readFile(h.out))
		require.Len(t, h.ep.reloads(), 1)

		restore()
		h.reloaded(t, 2, "a: 2\n|")
	})

	t.Run("endpoint down", func(t *testing.T) {
		h := newHarness(t)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		h.opts.Trigger = &HTTPTrigger{URL: mustURL(t, "http://"+addr+"/-/reload"), Timeout: time.Second}
		cfg := projector.Open(t, h.cfgDir)
		cfg.Set(t, map[string]string{"prometheus.yaml.gz": "a: 1\n"})
		h.start(t)
		u := "http://" + addr + "/-/reload"
		h.logs.waitErr(t, regexp.QuoteMeta(`reload `+u+`: Post "`+u+`": dial tcp `+addr+`: connect: connection refused`))

		// A change while the endpoint is down is not lost.
		cfg.Set(t, map[string]string{"prometheus.yaml.gz": "a: 2\n"})
		eventually(t, "output", func() bool { return readFile(h.out) == "a: 2\n" })
		l, err = net.Listen("tcp", addr)
		require.NoError(t, err)
		srv := httptest.NewUnstartedServer(h.ep.Config.Handler)
		srv.Listener = l
		srv.Start()
		t.Cleanup(srv.Close)
		h.reloaded(t, 1, "a: 2\n|")
		require.Positive(t, testutil.ToFloat64(h.r.m.reloadsFailed))
		// The endpoint records the call before the reloader has its answer.
		eventually(t, "success recorded", func() bool { return testutil.ToFloat64(h.r.m.lastSuccess) == 1 })
	})

	t.Run("endpoint answers 500", func(t *testing.T) {
		h := newHarness(t)
		cfg := projector.Open(t, h.cfgDir)
		cfg.Set(t, map[string]string{"prometheus.yaml.gz": "a: 1\n"})
		h.start(t)
		h.reloaded(t, 1, "a: 1\n|")

		h.ep.answer(http.StatusInternalServerError, `failed to reload config: couldn't load configuration (--config.file="x"): bad`+"\n")
		cfg.Set(t, map[string]string{"prometheus.yaml.gz": "a: 2\n"})
		h.logs.waitErr(t, regexp.QuoteMeta(`reload `+h.ep.URL+`/-/reload: status 500: failed to reload config: couldn't load configuration (--config.file="x"): bad`))
		require.Zero(t, testutil.ToFloat64(h.r.m.lastSuccess))

		// Back to the state the process last accepted: still reloaded, since
		// the failed attempt may have changed what the process runs.
		cfg.Set(t, map[string]string{"prometheus.yaml.gz": "a: 1\n"})
		eventually(t, "output", func() bool { return readFile(h.out) == "a: 1\n" })
		h.ep.answer(http.StatusOK, "")
		h.reloaded(t, 2, "a: 1\n|")
	})

	t.Run("endpoint hangs", func(t *testing.T) {
		h := newHarness(t)
		h.opts.Trigger = h.ep.trigger(100 * time.Millisecond)
		h.ep.answer(0, "")
		projector.Open(t, h.cfgDir).Set(t, map[string]string{"prometheus.yaml.gz": "a: 1\n"})
		h.start(t)
		h.logs.waitErr(t, regexp.QuoteMeta(`reload `+h.ep.URL+`/-/reload: no response within 100ms`))
		h.ep.answer(http.StatusOK, "")
		h.reloaded(t, 1, "a: 1\n|")
	})

	t.Run("signal target absent", func(t *testing.T) {
		h := newHarness(t)
		h.opts.Trigger = &SignalTrigger{ProcessName: "podreload-absent"}
		projector.Open(t, h.cfgDir).Set(t, map[string]string{"prometheus.yaml.gz": "a: 1\n"})
		h.start(t)
		h.logs.waitErr(t, regexp.QuoteMeta(`reload process "podreload-absent": no such process (does the pod share its process namespace?)`))
		require.Equal(t, "a: 1\n", readFile(h.out))
		require.Positive(t, testutil.ToFloat64(h.r.m.reloadsFailed))
	})
}

func TestRetriesBound(t *testing.T) {
	h := newHarness(t)
	h.opts.Retries = 2
	h.ep.answer(http.StatusInternalServerError, "no")
	cfg := projector.Open(t, h.cfgDir)
	cfg.Set(t, map[string]string{"prometheus.yaml.gz": "a: 1\n"})
	h.start(t)
	h.logs.waitErr(t, regexp.QuoteMeta(`reload `+h.ep.URL+`/-/reload: status 500: no`))
	// Given up after three attempts; that nothing more happens then is
	// TestSchedule's.
	eventually(t, "the retries given up", func() bool {
		return strings.Contains(h.logs.String(), `"msg":"apply failed, waiting for the next change"`)
	})
	require.Equal(t, 3.0, testutil.ToFloat64(h.r.m.reloadsFailed))

	h.ep.answer(http.StatusOK, "")
	cfg.Set(t, map[string]string{"prometheus.yaml.gz": "a: 2\n"})
	h.reloaded(t, 1, "a: 2\n|")
}
