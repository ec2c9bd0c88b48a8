package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/version"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/podreload/podreload/internal/testenv/testlog"
	"github.com/podreload/podreload/reloader"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestInitMode passes every prometheus-config-reloader flag: --watch-interval=0
// renders once and exits 0.
func TestInitMode(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
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
		stderr       string // in the output, whatever the exit code; a regular expression for exit code 0
	}{
		{"expands", "replica: $(MY_POD)\nshard: $(STATEFULSET_ORDINAL_NUMBER)\nregion: $(REGION)\n", []string{"--reload-method=http"}, 0,
			"replica: prometheus-main-7\nshard: 7\nregion: eu\n", ""},
		{"strict undefined keeps output", "a: $(NOPE)\n", []string{"--config-envsubst-strict"}, 1,
			"replica: prometheus-main-7\nshard: 7\nregion: eu\n", `line 1: environment variable \"NOPE\" is not set`},
		// prometheus-config-reloader leaves the reference verbatim, counts it and warns.
		{"undefined tolerated by default", "a: $(MY_POD)\nb: $(NOPE)\nc: $(ALSO_NOPE) $(NOPE)\n", nil, 0,
			"a: prometheus-main-7\nb: $(NOPE)\nc: $(ALSO_NOPE) $(NOPE)\n",
			`"level":"WARN",.*"msg":"environment variables not set: references left verbatim",.*"undefined":"NOPE \(line 2\), ALSO_NOPE \(line 3\), NOPE \(line 3\)"`},
		{"tolerant undefined", "a: $(NOPE)\n", []string{"--no-config-envsubst-strict"}, 0, "a: $(NOPE)\n",
			`"undefined":"NOPE \(line 1\)"`},
		{"unknown flag", "", []string{"--no-such-flag"}, 2, "a: $(NOPE)\n", "config-reloader: unknown long flag '--no-such-flag'\n"},
		{"bad reload method", "", []string{"--reload-method=carrier-pigeon"}, 2, "a: $(NOPE)\n",
			"config-reloader: enum value must be one of http,signal,command, got 'carrier-pigeon'\n"},
		// Every ratio prometheus-config-reloader accepts: 0 (its default) and
		// below set no limit, above 1 counts as 1.
		{"memlimit ratio 0", "", []string{"--auto-gomemlimit-ratio=0"}, 0, "a: $(NOPE)\n", `"msg":"go memory limit not set","ratio":0}`},
		{"memlimit ratio default", "", nil, 0, "a: $(NOPE)\n", `"msg":"go memory limit not set","ratio":0}`},
		{"memlimit ratio negative", "", []string{"--auto-gomemlimit-ratio=-1"}, 0, "a: $(NOPE)\n", `"msg":"go memory limit not set","ratio":-1}`},
		{"memlimit ratio above 1", "", []string{"--auto-gomemlimit-ratio=2"}, 0, "a: $(NOPE)\n", `"msg":"go memory limit set","limit_bytes":[1-9][0-9]*,"ratio":2,`},
		{"bad memlimit ratio", "", []string{"--auto-gomemlimit-ratio=half"}, 2, "a: $(NOPE)\n", "config-reloader: strconv.ParseFloat: parsing \"half\": invalid syntax\n"},
		{"bad signal", "", []string{"--reload-method=signal", "--reload-signal=NOPE"}, 2, "a: $(NOPE)\n",
			"config-reloader: --reload-signal: unknown signal \"NOPE\"\n"},
		{"command without command", "", []string{"--reload-method=command"}, 2, "a: $(NOPE)\n",
			"config-reloader: --reload-method=command needs --reload-command\n"},
		{"reload TLS flags", "b: 1\n", []string{"--reload-tls-ca-file=", "--reload-tls-cert-file=",
			"--reload-tls-key-file=", "--reload-tls-server-name=prometheus", "--reload-tls-insecure-skip-verify"}, 0, "b: 1\n",
			`"msg":"reload TLS","mode":"none: not an https URL"`},
		{"signal by pid file", "b: 1\n", []string{"--reload-method=signal", "--pid-file=/run/x.pid", "--reload-signal=USR1"}, 0, "b: 1\n", ""},
		{"bad report pod", "", []string{"--report-pod=prom-0"}, 2, "b: 1\n", "config-reloader: --report-pod=prom-0: want NAMESPACE/NAME\n"},
		{"report pod", "c: 1\n", []string{"--report-pod=ns/prom-0", "--api-server=https://127.0.0.1:1", "--api-ca-file="}, 0, "c: 1\n", ""},
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
			require.Equal(t, tc.code, run(t.Context(), args, io.Discard, &stderr), stderr.String())
			if tc.code == 0 {
				require.Regexp(t, tc.stderr, stderr.String())
			} else {
				require.Contains(t, stderr.String(), tc.stderr)
			}
			b, err := os.ReadFile(out)
			require.NoError(t, err)
			require.Equal(t, tc.output, string(b))
		})
	}
}

// TestSidecarMetrics runs the sidecar against a reload endpoint and scrapes
// its metrics for prometheus-config-reloader's names and labels.
func TestSidecarMetrics(t *testing.T) {
	reloads := make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reloads <- struct{}{} }))
	defer srv.Close()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "prometheus.yaml"), filepath.Join(dir, "prometheus.env.yaml")
	require.NoError(t, os.WriteFile(in, []byte("a: $(NOPE)\nb: $(ALSO_NOPE)\n"), 0o644))
	addr := freeAddr(t)

	ctx, cancel := context.WithCancel(t.Context())
	var stderr bytes.Buffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"--config-file=" + in, "--config-envsubst-file=" + out,
			"--reload-url=" + srv.URL + "/-/reload", "--listen-address=" + addr}, io.Discard, &stderr)
	}()
	defer func() {
		cancel()
		require.Equal(t, 0, <-done, stderr.String())
	}()
	select {
	case <-reloads:
	case <-time.After(10 * time.Second):
		t.Fatal("no reload within 10s")
	}

	want := []string{
		"reloader_config_environment_variable_expansion_errors 2\n",
		"reloader_reloads_total 1\n",
		`reloader_info{method="http"} 1` + "\n",
		"# TYPE config_reloader_build_info gauge\n",
		"# TYPE prometheus_config_reloader_build_info gauge\n",
	}
	var body string
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		body = scrape(t, client, "http://"+addr+"/metrics")
		if containsAll(body, want) {
			break
		}
		<-time.After(20 * time.Millisecond)
	}
	for _, w := range want {
		require.Contains(t, body, w)
	}
}

func scrape(t *testing.T, client *http.Client, url string) string {
	resp, err := client.Get(url)
	if err != nil {
		return "" // Not listening yet.
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// TestLogLevel checks every --log-level prometheus-config-reloader accepts,
// with a render that logs at debug, info and warn.
func TestLogLevel(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	dir := t.TempDir()
	in := filepath.Join(dir, "prometheus.yaml")
	require.NoError(t, os.WriteFile(in, []byte("a: $(NOPE)\n"), 0o644))
	const (
		debugMsg = "go memory limit not set"
		infoMsg  = "starting"
		warnMsg  = "environment variables not set: references left verbatim"
	)
	for _, tc := range []struct {
		level string
		want  []string
	}{
		{"all", []string{debugMsg, infoMsg, warnMsg}},
		{"debug", []string{debugMsg, infoMsg, warnMsg}},
		{"info", []string{infoMsg, warnMsg}},
		{"warn", []string{warnMsg}},
		{"error", nil},
		{"none", nil},
		{"NONE", nil},
	} {
		t.Run(tc.level, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(t.Context(), []string{"--config-file=" + in, "--config-envsubst-file=" + filepath.Join(dir, "out.yaml"),
				"--watch-interval=0", "--log-format=json", "--log-level=" + tc.level}, io.Discard, &stderr)
			require.Equal(t, 0, code, stderr.String())
			var got []string
			for _, msg := range []string{debugMsg, infoMsg, warnMsg} {
				if strings.Contains(stderr.String(), `"msg":"`+msg+`"`) {
					got = append(got, msg)
				}
			}
			require.Equal(t, tc.want, got, stderr.String())
			if tc.want == nil {
				require.Empty(t, stderr.String())
			}
		})
	}
	var stderr bytes.Buffer
	require.Equal(t, 2, run(t.Context(), []string{"--config-file=" + in, "--log-level=trace"}, io.Discard, &stderr))
	require.Equal(t, "config-reloader: unrecognized log level trace\n", stderr.String())
}

// TestVersion checks that --version and --short-version print to stdout, as
// prometheus-config-reloader's do, and exit 0 without doing anything else.
func TestVersion(t *testing.T) {
	defer func(v string) { version.Version = v }(version.Version)
	version.Version = "1.2.3"
	for _, tc := range []struct {
		flag string
		want string
	}{
		{"--short-version", "1.2.3\n"},
		{"--version", "config-reloader, version 1.2.3 (branch: "},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			require.Equal(t, 0, run(t.Context(), []string{tc.flag, "--config-file=/nonexistent", "--watch-interval=0"}, &stdout, &stderr))
			require.True(t, strings.HasPrefix(stdout.String(), tc.want), stdout.String())
			require.Empty(t, stderr.String())
		})
	}
}

// TestReloadTLS checks that the --reload-tls-* flags apply to the reload URL
// and to the runtime information URL, against httptest's self-signed
// certificate (valid for example.com, 127.0.0.1 and ::1). Signals are
// SIGCONT to this process, which it survives.
func TestReloadTLS(t *testing.T) {
	var calls atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/-/reload", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("/api/v1/status/runtimeinfo", func(w http.ResponseWriter, _ *http.Request) {
		loaded := time.Now().Add(-time.Minute) // Before the signal on the first call, after it later.
		if calls.Add(1)%2 == 0 {
			loaded = time.Now()
		}
		fmt.Fprintf(w, `{"status":"success","data":{"reloadConfigSuccess":true,"lastConfigTime":%q}}`, loaded.Format(time.RFC3339Nano))
	})
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	dir := t.TempDir()
	ca, pidFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "pid")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	require.NoError(t, os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o600))
	reloadURL, err := url.Parse(srv.URL + "/-/reload")
	require.NoError(t, err)
	runtimeInfoURL, err := url.Parse(srv.URL + "/api/v1/status/runtimeinfo")
	require.NoError(t, err)

	for _, tc := range []struct {
		name   string
		method string
		tls    reloader.TLS
		mode   string
		err    string
	}{
		{"http, loopback", "http", reloader.TLS{}, "server certificate not verified: loopback host and no CA file", ""},
		{"http, CA and server name", "http", reloader.TLS{CAFile: ca, ServerName: "example.com"}, "server certificate verified with CA file " + ca, ""},
		{"http, server name mismatch", "http", reloader.TLS{CAFile: ca, ServerName: "prometheus.monitoring.svc"},
			"server certificate verified with CA file " + ca, "not prometheus.monitoring.svc"},
		{"signal, loopback", "signal", reloader.TLS{}, "server certificate not verified: loopback host and no CA file", ""},
		{"signal, CA and server name", "signal", reloader.TLS{CAFile: ca, ServerName: "example.com"}, "server certificate verified with CA file " + ca, ""},
		{"signal, server name mismatch", "signal", reloader.TLS{CAFile: ca, ServerName: "prometheus.monitoring.svc"},
			"server certificate verified with CA file " + ca, "not prometheus.monitoring.svc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trigger, mode, err := newTrigger(config{
				method: tc.method, reloadURL: reloadURL, runtimeInfoURL: runtimeInfoURL,
				pidFile: pidFile, signal: "CONT", reloadTimeout: 5 * time.Second, tls: tc.tls,
			})
			require.NoError(t, err)
			require.Equal(t, tc.mode, mode)
			err = trigger.Reload(t.Context())
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
		})
	}
}

// TestURLFlagsHideSecrets starts config-reloader with each URL flag holding
// a password and a query token, where the flag cannot be used: the error
// says which flag and what is wrong, and shows neither secret, nor the
// piece of a password that url.Parse quotes (a password with a "/" makes
// the part before it the port).
func TestURLFlagsHideSecrets(t *testing.T) {
	const (
		password = "pa55w0rd"
		token    = "t0ken"
		slashed  = "s3cr/et" // url.Parse quotes ":s3cr" as the port
	)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.yaml")
	secret := "--config-secret=ns/cfg"
	for _, tc := range []struct {
		name string
		args []string
		err  string
	}{
		{"reload URL does not parse", []string{"--reload-url=http://admin:" + password + "@[::1/-/reload?t=" + token},
			"config-reloader: --reload-url (not shown, it may hold a secret): missing ']' in host\n"},
		{"reload URL with a slashed password", []string{"--reload-url=http://admin:" + slashed + "@prometheus:9090/-/reload?t=" + token},
			"config-reloader: --reload-url (not shown, it may hold a secret): invalid port after host\n"},
		{"reload URL not http", []string{"--reload-url=ftp://admin:" + password + "@prometheus/?t=" + token},
			`config-reloader: --reload-url "ftp://admin:xxxxx@prometheus/?t=xxxxx": want an http or https URL with a host` + "\n"},
		{"reload URL whose TLS setup fails", []string{"--reload-url=https://admin:" + password + "@prometheus:9090/-/reload?t=" + token,
			"--reload-tls-ca-file=" + filepath.Join(dir, "missing.crt")},
			"config-reloader: tls for https://admin:xxxxx@prometheus:9090/-/reload?t=xxxxx: unable to read CA cert: unable to read file " + filepath.Join(dir, "missing.crt")},
		{"runtime info URL does not parse", []string{"--reload-method=signal", "--runtimeinfo-url=http://admin:" + password + "@[::1/api?t=" + token},
			"config-reloader: --runtimeinfo-url (not shown, it may hold a secret): missing ']' in host\n"},
		{"runtime info URL with a slashed password", []string{"--reload-method=signal", "--runtimeinfo-url=http://admin:" + slashed + "@prometheus/api?t=" + token},
			"config-reloader: --runtimeinfo-url (not shown, it may hold a secret): invalid port after host\n"},
		{"runtime info URL whose TLS setup fails", []string{"--reload-method=signal",
			"--runtimeinfo-url=https://admin:" + password + "@prometheus:9090/api?t=" + token, "--reload-tls-ca-file=" + filepath.Join(dir, "missing.crt")},
			"config-reloader: tls for https://admin:xxxxx@prometheus:9090/api?t=xxxxx: unable to read CA cert: unable to read file " + filepath.Join(dir, "missing.crt")},
		{"API server does not parse", []string{secret, "--api-server=https://admin:" + password + "@[::1?t=" + token},
			"config-reloader: --api-server (not shown, it may hold a secret): missing ']' in host\n"},
		{"API server not http", []string{secret, "--api-server=ftp://admin:" + password + "@kubernetes/?t=" + token},
			`config-reloader: --api-server "ftp://admin:xxxxx@kubernetes/?t=xxxxx": want an http or https URL with a host` + "\n"},
		{"no reload URL", []string{"--reload-url="}, "config-reloader: --reload-method=http needs --reload-url\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			args := append([]string{"--config-envsubst-file=" + out, "--watch-interval=0", "--api-ca-file=", "--api-token-file="}, tc.args...)
			if !slices.Contains(args, secret) {
				args = append(args, "--config-file="+filepath.Join(dir, "in.yaml"))
			}
			require.Equal(t, 2, run(t.Context(), args, io.Discard, &stderr), stderr.String())
			require.Contains(t, stderr.String(), tc.err)
			for _, s := range []string{password, token, "s3cr", "et@"} {
				require.NotContains(t, stderr.String(), s)
			}
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
			go func() { code <- run(t.Context(), args, io.Discard, &stderr) }()
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
		code <- run(t.Context(), []string{"--config-file=" + in, "--config-envsubst-file=" + out, "--watch-interval=0"}, io.Discard, &stderr)
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
	var stderr testlog.Buffer
	go func() {
		code <- run(ctx, []string{"--config-file=" + in, "--config-envsubst-file=" + out, "--watched-dir=" + rules,
			"--reload-url=" + prom.URL + "/-/reload", "--listen-address=" + addr, "--retry-interval=50ms", "--log-format=json",
			"--state-dir=" + filepath.Join(dir, "state")}, io.Discard, &stderr)
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
	// The web server is an actor of its own: it may start after the refusal.
	waitFor("web server", func() bool { return !strings.Contains(get("/-/ready"), "connection refused") })
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
	require.FileExists(t, filepath.Join(dir, "state", "accepted.tar"))

	// A pipe in the watched dir: left out, the pod ready but degraded, as for the configuration.
	pipe := filepath.Join(rules, "b.yaml")
	require.NoError(t, syscall.Mkfifo(pipe, 0o644))
	config := "read config: open " + in + ": not a regular file (named pipe): the configuration last rendered is served\n"
	want := "200 ready, degraded: 1 input files left out: " + pipe + ": open " + pipe + ": not a regular file (named pipe); the rest is applied\n" + config
	waitFor("degraded", func() bool { return get("/-/ready") == want })
	require.NoError(t, os.Remove(pipe))
	waitFor("the config only", func() bool { return get("/-/ready") == "200 ready, degraded: "+config })

	cancel()
	select {
	case c := <-code:
		require.Equal(t, 0, c, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("run has not returned 10s after being told to stop")
	}
}

// TestIssue31Flags: --config-allow-empty and --state-dir reach the
// reloader's options; by default the state is kept beside the output.
func TestIssue31Flags(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		allowEmpty bool
		stateDir   string
	}{
		{nil, false, ""},
		{[]string{"--config-allow-empty", "--state-dir=/prometheus/reloader"}, true, "/prometheus/reloader"},
	} {
		cfg := config{log: promslog.Config{Level: promslog.NewLevel(), Format: promslog.NewFormat()}}
		a, _ := newApp(&cfg)
		_, err := a.Parse(append([]string{"--config-file=in", "--config-envsubst-file=out/p.yaml"}, tc.args...))
		require.NoError(t, err)
		opts := reloaderOptions(cfg, nil, nil, nil, nil, nil)
		require.Equal(t, tc.allowEmpty, opts.AllowEmptyConfig)
		require.Equal(t, tc.stateDir, opts.StateDir)
		require.True(t, opts.KeepAccepted)
	}
}

// TestRulesInputDirFlags renders rule file volumes into --rules-dir once
// (the init container of the volume source): gzipped files gunzipped, one
// that cannot be left out with an error naming its path; and refuses the
// combinations that make no sense.
func TestRulesInputDirFlags(t *testing.T) {
	dir := t.TempDir()
	in, out, rules := filepath.Join(dir, "prometheus.yaml"), filepath.Join(dir, "out", "prometheus.env.yaml"), filepath.Join(dir, "rules")
	cm0, cm1 := filepath.Join(dir, "in", "cm-0"), filepath.Join(dir, "in", "cm-1")
	require.NoError(t, os.MkdirAll(cm0, 0o755))
	require.NoError(t, os.WriteFile(in, []byte("a: 1\n"), 0o644))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write([]byte("groups: []\n"))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(filepath.Join(cm0, "a.yaml.gz"), gz.Bytes(), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(cm0, "bad.yaml.gz"), []byte("junk"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(cm0, "plain.yaml"), []byte("p"), 0o644))

	base := []string{"--config-file=" + in, "--config-envsubst-file=" + out, "--watch-interval=0", "--log-format=json"}
	var stderr bytes.Buffer
	args := append(base, "--rules-dir="+rules, "--rules-input-dir="+cm0, "--rules-input-dir="+cm1)
	require.Equal(t, 0, run(t.Context(), args, io.Discard, &stderr), stderr.String())
	require.Contains(t, stderr.String(), `"msg":"rule files left out","component":"reloader","err":"`+filepath.Join(cm0, "bad.yaml.gz")+`: gunzip: not gzipped (no gzip magic bytes) (left out: no good version yet)"`)
	for name, want := range map[string]string{"cm-0/a.yaml": "groups: []\n", "cm-0/plain.yaml": "p"} {
		b, err := os.ReadFile(filepath.Join(rules, name))
		require.NoError(t, err)
		require.Equal(t, want, string(b))
	}
	entries, err := os.ReadDir(filepath.Join(rules, "cm-0"))
	require.NoError(t, err)
	require.Len(t, entries, 2)
	require.NoDirExists(t, filepath.Join(rules, "cm-1"))

	for _, tc := range []struct {
		extra []string
		err   string
	}{
		{[]string{"--rules-input-dir=" + cm0}, "config-reloader: --rules-input-dir needs --rules-dir\n"},
		{[]string{"--rules-input-dir=" + cm0, "--rules-dir=" + rules, "--config-secret=ns/cfg"},
			"config-reloader: --rules-input-dir reads rule files from volumes; with --config-secret they are ConfigMaps\n"},
		{[]string{"--rules-dir=" + rules}, "config-reloader: --rules-configmap-selector and --rules-dir need --config-secret (or --rules-dir, --rules-input-dir)\n"},
	} {
		var stderr bytes.Buffer
		require.Equal(t, 2, run(t.Context(), append(base, tc.extra...), io.Discard, &stderr))
		require.Equal(t, tc.err, stderr.String())
	}
}
