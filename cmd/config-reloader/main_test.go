package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
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

// lastLine returns the last line of b.
func lastLine(b []byte) []byte {
	b = bytes.TrimRight(b, "\n")
	return b[bytes.LastIndexByte(b, '\n')+1:]
}
