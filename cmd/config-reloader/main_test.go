package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestInitMode passes every prometheus-config-reloader flag: --watch-interval=0
// renders once and exits 0.
func TestInitMode(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in", "prometheus.yaml")
	out := filepath.Join(dir, "out", "prometheus.env.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(in), 0o755))
	t.Setenv("MY_POD", "prometheus-main-7")
	t.Setenv("REGION", "eu")

	for _, tc := range []struct {
		name, config string
		extra        []string
		code         int
		output       string
		stderr       string // for exit code 2
	}{
		{"expands", "replica: $(MY_POD)\nshard: $(STATEFULSET_ORDINAL_NUMBER)\nregion: $(REGION)\n", []string{"--reload-method=http"}, 0,
			"replica: prometheus-main-7\nshard: 7\nregion: eu\n", ""},
		{"strict undefined keeps output", "a: $(NOPE)\n", nil, 1, "replica: prometheus-main-7\nshard: 7\nregion: eu\n", ""},
		{"tolerant undefined", "a: $(NOPE)\n", []string{"--no-config-envsubst-strict"}, 0, "a: $(NOPE)\n", ""},
		{"unknown flag", "", []string{"--no-such-flag"}, 2, "a: $(NOPE)\n", "config-reloader: unknown long flag '--no-such-flag'\n"},
		{"bad reload method", "", []string{"--reload-method=carrier-pigeon"}, 2, "a: $(NOPE)\n",
			"config-reloader: enum value must be one of http,signal,command, got 'carrier-pigeon'\n"},
		{"bad memlimit ratio", "", []string{"--auto-gomemlimit-ratio=2"}, 2, "a: $(NOPE)\n", "--auto-gomemlimit-ratio must be in (0, 1]"},
		{"bad signal", "", []string{"--reload-method=signal", "--reload-signal=NOPE"}, 2, "a: $(NOPE)\n",
			"config-reloader: --reload-signal: unknown signal \"NOPE\"\n"},
		{"command without command", "", []string{"--reload-method=command"}, 2, "a: $(NOPE)\n",
			"config-reloader: --reload-method=command needs --reload-command\n"},
		{"signal by pid file", "b: 1\n", []string{"--reload-method=signal", "--pid-file=/run/x.pid", "--reload-signal=USR1"}, 0, "b: 1\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.config != "" {
				require.NoError(t, os.WriteFile(in, []byte(tc.config), 0o644))
			}
			args := append([]string{
				"--config-file=" + in, "--config-envsubst-file=" + out, "--watched-dir=" + dir,
				"--watched-dir=" + filepath.Join(dir, "in"), "--watch-interval=0", "--delay-interval=1s",
				"--retry-interval=1s", "--reload-timeout=5s", "--reload-url=http://127.0.0.1:9090/-/reload",
				"--process-executable-name=prometheus",
				"--runtimeinfo-url=http://127.0.0.1:9090/api/v1/status/runtimeinfo",
				"--statefulset-ordinal-from-envvar=MY_POD", "--listen-address=127.0.0.1:0", "--web-config-file=",
				"--log-format=json", "--log-level=debug",
			}, tc.extra...)
			var stderr bytes.Buffer
			require.Equal(t, tc.code, run(t.Context(), args, &stderr), stderr.String())
			if tc.code == 2 {
				require.Contains(t, stderr.String(), tc.stderr)
			}
			b, err := os.ReadFile(out)
			require.NoError(t, err)
			require.Equal(t, tc.output, string(b))
		})
	}
}

// TestInitModeRefuses runs the init-container mode on inputs it must refuse
// at once, keeping the previous output: it exits 1 without waiting on them.
func TestInitModeRefuses(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "prometheus.yaml.gz")
	out := filepath.Join(dir, "prometheus.env.yaml")
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	_, err := zw.Write(make([]byte, 1<<20))
	require.NoError(t, err)
	require.NoError(t, zw.Close())

	for _, tc := range []struct {
		name  string
		input func(t *testing.T)
		extra []string
		code  int
		err   string
	}{
		{"named pipe", func(t *testing.T) { require.NoError(t, syscall.Mkfifo(in, 0o644)) }, nil, 1,
			"read config: open " + in + ": not a regular file (named pipe)"},
		{"gzip bomb", func(t *testing.T) { require.NoError(t, os.WriteFile(in, bomb.Bytes(), 0o644)) },
			[]string{"--config-max-size=512KiB"}, 1, "read config: gunzip " + in + ": larger than 512 KiB"},
		{"plain file too large", func(t *testing.T) { require.NoError(t, os.WriteFile(in, make([]byte, 1<<20), 0o644)) },
			[]string{"--config-max-size=512KiB"}, 1, "read config: read " + in + ": larger than 512 KiB"},
		{"bomb within a larger bound", func(t *testing.T) { require.NoError(t, os.WriteFile(in, bomb.Bytes(), 0o644)) },
			[]string{"--config-max-size=2MiB"}, 0, ""},
		{"bound not positive", func(t *testing.T) {}, []string{"--config-max-size=0"}, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.RemoveAll(in))
			tc.input(t)
			require.NoError(t, os.WriteFile(out, []byte("old\n"), 0o644))
			args := append([]string{"--config-file=" + in, "--config-envsubst-file=" + out, "--watch-interval=0", "--log-format=json"}, tc.extra...)
			var stderr bytes.Buffer
			code := make(chan int, 1)
			go func() { code <- run(t.Context(), args, &stderr) }()
			select {
			case c := <-code:
				require.Equal(t, tc.code, c, stderr.String())
			case <-time.After(10 * time.Second):
				t.Fatalf("run has not returned after 10s")
			}
			if tc.err != "" {
				var rec struct{ Msg, Err string }
				require.NoError(t, json.Unmarshal(bytes.TrimSpace(lastLine(stderr.Bytes())), &rec))
				require.Equal(t, "render config", rec.Msg)
				require.Equal(t, tc.err, rec.Err)
			}
			if tc.code != 0 {
				b, err := os.ReadFile(out)
				require.NoError(t, err)
				require.Equal(t, "old\n", string(b))
			}
		})
	}
}

// TestInitModeNamedPipeOutput renders over a named pipe at the output path:
// the rename replaces it, nothing waits for a reader.
func TestInitModeNamedPipeOutput(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "prometheus.yaml"), filepath.Join(dir, "prometheus.env.yaml")
	require.NoError(t, os.WriteFile(in, []byte("a: 1\n"), 0o644))
	require.NoError(t, syscall.Mkfifo(out, 0o644))
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run(t.Context(), []string{"--config-file=" + in, "--config-envsubst-file=" + out, "--watch-interval=0"}, &stderr)
	}()
	select {
	case c := <-code:
		require.Equal(t, 0, c, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("run has not returned after 10s")
	}
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "a: 1\n", string(b))
}

// lastLine returns the last line of b.
func lastLine(b []byte) []byte {
	b = bytes.TrimRight(b, "\n")
	return b[bytes.LastIndexByte(b, '\n')+1:]
}

// TestNamedPipeKeepsServing starts the sidecar on a config file that is a
// named pipe: it keeps serving and reloading, and stops when told to.
func TestNamedPipeKeepsServing(t *testing.T) {
	dir := t.TempDir()
	in, out, rules := filepath.Join(dir, "prometheus.yaml"), filepath.Join(dir, "out", "prometheus.env.yaml"), filepath.Join(dir, "rules")
	require.NoError(t, os.MkdirAll(rules, 0o755))
	require.NoError(t, syscall.Mkfifo(in, 0o644))
	var reloads atomic.Int32
	prom := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reloads.Add(1) }))
	defer prom.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	code := make(chan int, 1)
	var stderr lockedBuffer
	go func() {
		code <- run(ctx, []string{"--config-file=" + in, "--config-envsubst-file=" + out, "--watched-dir=" + rules,
			"--reload-url=" + prom.URL + "/-/reload", "--listen-address=" + addr, "--retry-interval=50ms", "--log-format=json"}, &stderr)
	}()
	get := func(path string) string {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, b)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			require.True(t, time.Now().Before(deadline), "timed out waiting for %s; log:\n%s", what, stderr.String())
		}
	}

	waitFor("refusal logged", func() bool {
		return strings.Contains(stderr.String(), `"err":"read config: open `+in+`: not a regular file (named pipe)"`)
	})
	require.Equal(t, "503 not ready: no reload has succeeded yet\n", get("/-/ready"))
	require.NoError(t, os.Remove(in))
	require.NoError(t, os.WriteFile(in, []byte("a: 1\n"), 0o644))
	waitFor("ready", func() bool { return get("/-/ready") == "200 ready\n" })
	require.EqualValues(t, 1, reloads.Load())

	// A pipe again: rules changes are still reloaded, with the last good config.
	require.NoError(t, os.Remove(in))
	require.NoError(t, syscall.Mkfifo(in, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(rules, "a.yaml"), []byte("a1"), 0o644))
	waitFor("rules reloaded", func() bool { return reloads.Load() >= 2 })
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "a: 1\n", string(b))

	cancel()
	select {
	case c := <-code:
		require.Equal(t, 0, c, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("run has not returned 10s after being told to stop")
	}
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
