package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

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
