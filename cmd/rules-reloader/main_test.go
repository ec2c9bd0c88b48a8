package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/podreload/podreload/internal/testenv/projector"
	"github.com/podreload/podreload/internal/testenv/testlog"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// output is the log of a rules-reloader a test started.
type output struct{ testlog.Buffer }

// waitLog waits for a JSON log record whose msg is msg and whose err, if
// pattern is not empty, matches the anchored regexp pattern.
func (o *output) waitLog(t *testing.T, msg, pattern string) {
	t.Helper()
	re := regexp.MustCompile("^" + pattern + "$")
	eventually(t, fmt.Sprintf("log %q %s", msg, pattern), func() bool {
		for _, line := range strings.Split(o.String(), "\n") {
			var rec struct{ Msg, Err string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == msg && (pattern == "" || re.MatchString(rec.Err)) {
				return true
			}
		}
		return false
	})
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// start runs rules-reloader with args until the test ends.
func start(t *testing.T, args ...string) *output {
	t.Helper()
	out := &output{}
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	args = append([]string{"--log.format=json", "--retry-interval=20ms"}, args...)
	if !strings.Contains(strings.Join(args, " "), "web.listen-address") {
		args = append(args, "--web.listen-address=")
	}
	go func() { code <- run(ctx, args, out) }()
	t.Cleanup(func() {
		cancel()
		require.Equal(t, 0, <-code, "exit code; log:\n%s", out)
		if t.Failed() {
			t.Logf("rules-reloader log:\n%s", out)
		}
	})
	return out
}

// webhook records calls with what the volume held at that moment.
type webhook struct {
	*httptest.Server
	mu      sync.Mutex
	calls   []string
	headers []http.Header
	status  int
}

func newWebhook(t *testing.T, snapshot func() string) *webhook {
	w := &webhook{status: http.StatusOK}
	w.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.calls = append(w.calls, r.Method+" "+snapshot())
		w.headers = append(w.headers, r.Header.Clone())
		rw.WriteHeader(w.status)
		_, _ = io.WriteString(rw, "answer from the app")
	}))
	t.Cleanup(w.Close)
	return w
}

func (w *webhook) answer(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.status = status
}

func (w *webhook) seen() ([]string, []http.Header) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.calls...), append([]http.Header(nil), w.headers...)
}

func (w *webhook) waitCalls(t *testing.T, n int) []string {
	t.Helper()
	eventually(t, fmt.Sprintf("%d calls", n), func() bool { c, _ := w.seen(); return len(c) >= n })
	c, _ := w.seen()
	return c
}

// readDir renders a directory's visible files as "name=content;" pairs.
func readDir(dir string) string {
	entries, _ := os.ReadDir(dir)
	var b strings.Builder
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		c, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		b.WriteString(e.Name() + "=" + string(c) + ";")
	}
	return b.String()
}

func TestUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		err  string
	}{
		{"no volume dir", []string{"--webhook-url=http://127.0.0.1:9090/-/reload"}, "rules-reloader: required flag(s) '--volume-dir' not provided\n"},
		{"url without host", []string{"--webhook-url=/-/reload"}, `rules-reloader: --webhook-url "/-/reload": want an http or https URL with a host` + "\n"},
		{"nothing to reload", nil, "rules-reloader: nothing to reload: give --webhook-url, --process-executable-name, --pid-file or --reload-command\n"},
		{"bad signal", []string{"--pid-file=/run/app.pid", "--reload-signal=SIGNOPE"}, `rules-reloader: --reload-signal: unknown signal "SIGNOPE"` + "\n"},
		{"password file without user", []string{"--webhook-url=http://127.0.0.1/", "--webhook-password-file=/p"},
			"rules-reloader: --webhook-password-file needs a user name in --webhook-url http://127.0.0.1/\n"},
		{"bad scheme, secrets hidden", []string{"--webhook-url=ftp://admin:pa55@127.0.0.1/?token=t0ken"},
			`rules-reloader: --webhook-url "ftp://admin:xxxxx@127.0.0.1/?token=xxxxx": want an http or https URL with a host` + "\n"},
		{"url does not parse, secrets hidden", []string{"--webhook-url=http://admin:pa55@[::1/?token=t0ken"},
			"rules-reloader: --webhook-url (not shown, it may hold a secret): missing ']' in host\n"},
		{"url with a slashed password, no piece of it shown", []string{"--webhook-url=http://admin:s3cr/et@127.0.0.1/?token=t0ken"},
			"rules-reloader: --webhook-url (not shown, it may hold a secret): invalid port after host\n"},
		{"password file, query hidden", []string{"--webhook-url=http://127.0.0.1/?token=t0ken", "--webhook-password-file=/p"},
			"rules-reloader: --webhook-password-file needs a user name in --webhook-url http://127.0.0.1/?token=xxxxx\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			args := tc.args
			if tc.name != "no volume dir" {
				args = append(args, "--volume-dir="+dir)
			}
			require.Equal(t, 2, run(t.Context(), args, &stderr))
			require.Equal(t, tc.err, stderr.String())
		})
	}
}

// TestGoFlagSpellings: every configmap-reload flag, and ours, in each
// spelling Go's flag package accepts, for one run each: two volume dirs, two
// webhooks that answer 202 and one that answers 500, the method given twice
// (the last wins), a status code, retries, the metrics address and path.
func TestGoFlagSpellings(t *testing.T) {
	for _, tc := range []struct {
		name string
		flag func(name, value string) []string
	}{
		{"-name=value", func(n, v string) []string { return []string{"-" + n + "=" + v} }},
		{"--name=value", func(n, v string) []string { return []string{"--" + n + "=" + v} }},
		{"-name value", func(n, v string) []string { return []string{"-" + n, v} }},
		{"--name value", func(n, v string) []string { return []string{"--" + n, v} }},
		{"mixed, Go integer syntax", func(n, v string) []string {
			switch n {
			case "webhook-status-code":
				return []string{"-" + n, "0xca"} // 202
			case "webhook-retries":
				return []string{"-" + n + "=0b10"} // 2
			case "volume-dir", "webhook-method":
				return []string{"--" + n, v}
			}
			return []string{"-" + n + "=" + v}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			rules, alerts := filepath.Join(root, "rules"), filepath.Join(root, "alerts")
			require.NoError(t, os.Mkdir(rules, 0o755))
			require.NoError(t, os.Mkdir(alerts, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(rules, "r.yaml"), []byte("r"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(alerts, "a.yaml"), []byte("a"), 0o644))
			token := filepath.Join(root, "token")
			require.NoError(t, os.WriteFile(token, []byte("tok"), 0o600))
			snapshot := func() string { return readDir(rules) + "|" + readDir(alerts) }
			a, b, failing := newWebhook(t, snapshot), newWebhook(t, snapshot), newWebhook(t, snapshot)
			a.answer(http.StatusAccepted)
			b.answer(http.StatusAccepted)
			failing.answer(http.StatusInternalServerError)
			for _, w := range []*webhook{a, b, failing} {
				w.Start()
			}
			metricsAddr := freeAddr(t)
			var args []string
			for _, f := range [][2]string{
				{"volume-dir", rules}, {"volume-dir", alerts},
				{"webhook-url", a.URL + "/a"}, {"webhook-url", b.URL + "/b"}, {"webhook-url", failing.URL + "/failing"},
				{"webhook-method", "GET"}, {"webhook-method", "PUT"},
				{"webhook-status-code", "202"}, {"webhook-retries", "2"},
				{"web.listen-address", metricsAddr}, {"web.telemetry-path", "/m"},
				{"webhook-bearer-token-file", token},
			} {
				args = append(args, tc.flag(f[0], f[1])...)
			}
			out := start(t, args...)
			out.waitLog(t, "apply failed, waiting for the next change",
				regexp.QuoteMeta("reload "+failing.URL+"/failing: status 500, want 202: answer from the app"))
			for _, w := range []*webhook{a, b, failing} {
				calls, headers := w.seen()
				want := "PUT r.yaml=r;|a.yaml=a;"
				require.Equal(t, []string{want, want, want}, calls, "the first call and 2 retries")
				require.Equal(t, "Bearer tok", headers[0].Get("Authorization"))
			}
			resp, err := http.Get("http://" + metricsAddr + "/m")
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			require.Contains(t, string(body), fmt.Sprintf(`configmap_reload_success_reloads_total{webhook="%s/b"} 3`, b.URL))
			require.Contains(t, string(body), "reloader_watches 2")
		})
	}
}

// TestGoFlagUsage: help, version, booleans and usage errors in Go's spellings.
func TestGoFlagUsage(t *testing.T) {
	const usage = "usage: rules-reloader --volume-dir=VOLUME-DIR"
	for _, tc := range []struct {
		args []string
		code int
		out  string // The whole of stderr, or its start when it ends with "...".
	}{
		{[]string{"-h"}, 0, usage + "..."},
		{[]string{"-help"}, 0, usage + "..."},
		{[]string{"--help"}, 0, usage + "..."},
		{[]string{"-help=true"}, 0, usage + "..."},
		{[]string{"-version"}, 0, "rules-reloader, version ..."},
		{[]string{"--version=1"}, 0, "rules-reloader, version ..."},
		{[]string{"-version=false"}, 2, "rules-reloader: required flag(s) '--volume-dir' not provided\n"},
		{[]string{"-version=maybe"}, 2, `rules-reloader: --version: parse "maybe" as a boolean: invalid syntax` + "\n"},
		{[]string{"-nope=1"}, 2, "rules-reloader: unknown long flag '--nope'\n"},
		{[]string{"-n"}, 2, "rules-reloader: unknown short flag '-n'\n"},
		{[]string{"-volume-dir"}, 2, "rules-reloader: expected argument for flag '--volume-dir'\n"},
		{[]string{"-volume-dir=/x", "-webhook-retries=1.5"}, 2, `rules-reloader: --webhook-retries: parse "1.5" as an integer: invalid syntax` + "\n"},
		{[]string{"-volume-dir=/x", "-webhook-status-code", "99999999999999999999"}, 2,
			`rules-reloader: --webhook-status-code: parse "99999999999999999999" as an integer: value out of range` + "\n"},
		// As in Go, a flag's value is the next argument whatever it is.
		{[]string{"-volume-dir", "-webhook-url=http://127.0.0.1/"}, 2,
			"rules-reloader: nothing to reload: give --webhook-url, --process-executable-name, --pid-file or --reload-command\n"},
		// As in Go, flags end at the first argument that is not one.
		{[]string{"-volume-dir=/x", "extra", "-webhook-url=http://127.0.0.1/"}, 2, "rules-reloader: unexpected extra\n"},
		{[]string{"-volume-dir=/x", "--", "-webhook-url=http://127.0.0.1/"}, 2, "rules-reloader: unexpected -webhook-url=http://127.0.0.1/\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stderr bytes.Buffer
			require.Equal(t, tc.code, run(t.Context(), tc.args, &stderr), stderr.String())
			if prefix, ok := strings.CutSuffix(tc.out, "..."); ok {
				require.True(t, strings.HasPrefix(stderr.String(), prefix), stderr.String())
			} else {
				require.Equal(t, tc.out, stderr.String())
			}
		})
	}
}

func TestWebhooks(t *testing.T) {
	root := t.TempDir()
	rules, alerts := filepath.Join(root, "rules"), filepath.Join(root, "alerts")
	snapshot := func() string { return readDir(rules) + "|" + readDir(alerts) }
	a, b := newWebhook(t, snapshot), newWebhook(t, snapshot)
	a.Start()
	b.Start()
	pr, pa := projector.Open(t, rules), projector.Open(t, alerts)
	pr.Set(t, map[string]string{"r.yaml": "r0"})
	pa.Set(t, map[string]string{"a.yaml": "a0"})
	metricsAddr := freeAddr(t)
	start(t, "--volume-dir="+rules, "--volume-dir="+alerts, "--webhook-url="+a.URL+"/-/reload",
		"--webhook-url="+b.URL+"/reload", "--webhook-method=PUT", "--web.listen-address="+metricsAddr, "--web.telemetry-path=/m")
	first := a.waitCalls(t, 1)
	require.Equal(t, []string{"PUT r.yaml=r0;|a.yaml=a0;"}, first)

	// A burst over both volumes: at most two calls per webhook, the last
	// with the last state. The swaps follow each other as fast as they
	// can: paced at 20 ms, a loaded machine stretched one gap past the
	// 100 ms quiet window, and the burst rightly gave three calls (how a
	// burst is coalesced in time is reloader.TestSchedule's).
	for i := 1; i <= 10; i++ {
		if i%2 == 0 {
			pr.Set(t, map[string]string{"r.yaml": "r" + strconv.Itoa(i)})
		} else {
			pa.Set(t, map[string]string{"a.yaml": "a" + strconv.Itoa(i)})
		}
	}
	last := "PUT r.yaml=r10;|a.yaml=a9;"
	for _, w := range []*webhook{a, b} {
		eventually(t, "last state", func() bool { c, _ := w.seen(); return c[len(c)-1] == last })
	}
	// A change after the burst: a late extra call for the burst would come
	// before its call, so what precedes it is all the burst gave.
	pr.Set(t, map[string]string{"r.yaml": "r11"})
	sentinel := "PUT r.yaml=r11;|a.yaml=a9;"
	for _, w := range []*webhook{a, b} {
		eventually(t, "change after the burst", func() bool { c, _ := w.seen(); return c[len(c)-1] == sentinel })
		calls, _ := w.seen()
		require.LessOrEqual(t, len(calls), 4, "1 initial call, at most 2 for the burst, 1 after it: %q", calls)
	}

	// Bookkeeping entries and identical content: no call. The change after
	// them is the only call: one for them would come before it.
	n := len(a.waitCalls(t, 1))
	pr.Set(t, map[string]string{"r.yaml": "r11"})
	require.NoError(t, os.Mkdir(filepath.Join(rules, "..2026_11_21_00_00_00.1"), 0o755))
	pr.Set(t, map[string]string{"r.yaml": "r12"})
	n++
	for _, w := range []*webhook{a, b} {
		eventually(t, "change after the no-ops", func() bool { c, _ := w.seen(); return len(c) >= n })
		calls, _ := w.seen()
		require.Len(t, calls, n, "%q", calls)
		require.Equal(t, "PUT r.yaml=r12;|a.yaml=a9;", calls[n-1])
	}

	resp, err := http.Get("http://" + metricsAddr + "/m")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	require.NoError(t, resp.Body.Close())
	for _, want := range []string{
		fmt.Sprintf(`configmap_reload_requests_total{status_code="200",webhook="%s/-/reload"} %d`, a.URL, n),
		fmt.Sprintf(`configmap_reload_success_reloads_total{webhook="%s/reload"} %d`, b.URL, n),
		fmt.Sprintf(`configmap_reload_last_reload_error{webhook="%s/reload"} 0`, b.URL),
		`configmap_reload_watcher_errors_total 0`,
		fmt.Sprintf(`reloader_reloads_total %d`, n),
		`reloader_watches 2`,
	} {
		require.Contains(t, string(body), want)
	}
}

// TestSecretsStayHidden: the password and the token of webhook URLs reach
// the webhook, and appear in no log line (debug ones included), no error and
// no metric label, when the webhook answers with an error and when it cannot
// be reached.
func TestSecretsStayHidden(t *testing.T) {
	const password, token = "pa55-in-url", "t0ken-in-query"
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "r.yaml"), []byte("r"), 0o644))
	var mu sync.Mutex
	var seen []string
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		mu.Lock()
		seen = append(seen, user+":"+pass+" "+r.URL.RawQuery)
		mu.Unlock()
		http.Error(w, "reload failed", http.StatusInternalServerError)
	}))
	t.Cleanup(failing.Close)
	failingHost, down, metricsAddr := failing.Listener.Addr().String(), freeAddr(t), freeAddr(t)
	webhook := func(host string) string { return "http://admin:" + password + "@" + host + "/-/reload?token=" + token }
	shown := func(host string) string { return "http://admin:xxxxx@" + host + "/-/reload?token=xxxxx" }
	out := start(t, "--log.level=debug", "--volume-dir="+dir, "--webhook-url="+webhook(failingHost), "--webhook-url="+webhook(down),
		"--webhook-retries=1", "--web.listen-address="+metricsAddr)
	out.waitLog(t, "apply failed, waiting for the next change", regexp.QuoteMeta(
		"reload "+shown(failingHost)+": status 500, want 200: reload failed\n"+
			"reload "+shown(down)+`: Post "`+shown(down)+`": dial tcp `+down+": connect: connection refused"))

	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	for _, want := range []string{
		fmt.Sprintf(`configmap_reload_requests_total{status_code="500",webhook="%s"} 2`, shown(failingHost)),
		fmt.Sprintf(`configmap_reload_request_errors_total{reason="client_response",webhook="%s"} 2`, shown(failingHost)),
		fmt.Sprintf(`configmap_reload_request_errors_total{reason="client_request_do",webhook="%s"} 2`, shown(down)),
		fmt.Sprintf(`configmap_reload_last_reload_error{webhook="%s"} 1`, shown(down)),
	} {
		require.Contains(t, string(body), want)
	}
	for _, secret := range []string{password, token} {
		require.NotContains(t, string(body), secret, "metrics")
		require.NotContains(t, out.String(), secret, "logs")
	}
	mu.Lock()
	defer mu.Unlock()
	want := "admin:" + password + " token=" + token
	require.Equal(t, []string{want, want}, seen, "basic auth and query at the webhook, at the first call and the retry")
}

func TestInPlaceEdits(t *testing.T) {
	dir := t.TempDir()
	w := newWebhook(t, func() string { return readDir(dir) })
	w.Start()
	path := filepath.Join(dir, "nginx.conf")
	require.NoError(t, os.WriteFile(path, []byte("worker_processes 1;"), 0o644))
	start(t, "--volume-dir="+dir, "--webhook-url="+w.URL)
	w.waitCalls(t, 1)

	require.NoError(t, os.WriteFile(path, []byte("worker_processes 1;"), 0o644))
	// Then an edit: a call for the same content would come before its call.
	require.NoError(t, os.WriteFile(path, []byte("worker_processes 2;"), 0o644))
	eventually(t, "edit", func() bool { c, _ := w.seen(); return c[len(c)-1] == "POST nginx.conf=worker_processes 2;;" })
	calls, _ := w.seen()
	require.Len(t, calls, 2, "%q", calls)
}

func TestAuth(t *testing.T) {
	dir := t.TempDir()
	secrets := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(secrets, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	change := func(i int) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "r.yaml"), []byte(strconv.Itoa(i)), 0o644))
	}
	change(0)

	t.Run("basic auth from the URL", func(t *testing.T) {
		w := newWebhook(t, func() string { return "" })
		w.Start()
		start(t, "--volume-dir="+dir, "--webhook-url=http://admin:s3cret@"+w.Listener.Addr().String()+"/")
		w.waitCalls(t, 1)
		_, h := w.seen()
		require.Equal(t, "Basic YWRtaW46czNjcmV0", h[0].Get("Authorization"))
	})
	t.Run("password file", func(t *testing.T) {
		w := newWebhook(t, func() string { return "" })
		w.Start()
		start(t, "--volume-dir="+dir, "--webhook-url=http://admin@"+w.Listener.Addr().String()+"/",
			"--webhook-password-file="+write("password", "from-file\n"))
		w.waitCalls(t, 1)
		_, h := w.seen()
		require.Equal(t, "Basic YWRtaW46ZnJvbS1maWxl", h[0].Get("Authorization")) // admin:from-file
	})
	t.Run("rotated bearer token", func(t *testing.T) {
		w := newWebhook(t, func() string { return "" })
		w.Start()
		token := write("token", "first")
		start(t, "--volume-dir="+dir, "--webhook-url="+w.URL, "--webhook-bearer-token-file="+token)
		w.waitCalls(t, 1)
		write("token", "second")
		change(1)
		w.waitCalls(t, 2)
		_, h := w.seen()
		require.Equal(t, "Bearer first", h[0].Get("Authorization"))
		require.Equal(t, "Bearer second", h[1].Get("Authorization"))
	})
	t.Run("custom CA and client certificate", func(t *testing.T) {
		w := newWebhook(t, func() string { return "" })
		clientCert, clientKey, pool := clientCertificate(t)
		w.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
		w.StartTLS()
		ca := write("ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: w.Certificate().Raw})))
		start(t, "--volume-dir="+dir, "--webhook-url="+w.URL, "--webhook-ca-file="+ca,
			"--webhook-cert-file="+write("cert.pem", clientCert), "--webhook-key-file="+write("key.pem", clientKey))
		w.waitCalls(t, 1)
	})
}

// clientCertificate returns a self-signed client certificate, its key and a
// pool trusting it.
func clientCertificate(t *testing.T) (certPEM, keyPEM string, pool *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rules-reloader"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})), pool
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// TestBadInput: each failure is logged with its cause, the reloader keeps
// running, and the next change after the cause is fixed is applied.
func TestBadInput(t *testing.T) {
	t.Run("volume dir missing at start", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "later", "rules")
		w := newWebhook(t, func() string { return readDir(dir) })
		w.Start()
		out := start(t, "--volume-dir="+dir, "--webhook-url="+w.URL)
		out.waitLog(t, "watched dir is missing, waiting for it", "")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "r.yaml"), []byte("r"), 0o644))
		eventually(t, "call", func() bool { c, _ := w.seen(); return len(c) > 0 && c[len(c)-1] == "POST r.yaml=r;" })
	})

	dir := t.TempDir()
	change := func(i int) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "r.yaml"), []byte(strconv.Itoa(i)), 0o644))
	}
	change(0)
	t.Run("webhook down", func(t *testing.T) {
		addr := freeAddr(t)
		out := start(t, "--volume-dir="+dir, "--webhook-url=http://"+addr+"/-/reload")
		u := "http://" + addr + "/-/reload"
		out.waitLog(t, "apply failed", regexp.QuoteMeta(`reload `+u+`: Post "`+u+`": dial tcp `+addr+`: connect: connection refused`))
	})
	t.Run("unexpected status", func(t *testing.T) {
		w := newWebhook(t, func() string { return readDir(dir) })
		w.answer(http.StatusAccepted)
		w.Start()
		out := start(t, "--volume-dir="+dir, "--webhook-url="+w.URL, "--webhook-retries=0")
		out.waitLog(t, "apply failed, waiting for the next change", regexp.QuoteMeta(`reload `+w.URL+`: status 202, want 200: answer from the app`))
		w.answer(http.StatusOK)
		change(1)
		eventually(t, "recovered", func() bool { c, _ := w.seen(); return c[len(c)-1] == "POST r.yaml=1;" })
	})
	t.Run("pid file missing", func(t *testing.T) {
		pidFile := filepath.Join(t.TempDir(), "app.pid")
		out := start(t, "--volume-dir="+dir, "--pid-file="+pidFile)
		out.waitLog(t, "apply failed", regexp.QuoteMeta(`reload pid file `+pidFile+`: read pid file: open `+pidFile+`: no such file or directory`))
	})
	t.Run("pid file stale", func(t *testing.T) {
		done := exec.Command("true")
		require.NoError(t, done.Run())
		pidFile := filepath.Join(t.TempDir(), "app.pid")
		require.NoError(t, os.WriteFile(pidFile, []byte(strconv.Itoa(done.Process.Pid)), 0o644))
		out := start(t, "--volume-dir="+dir, "--pid-file="+pidFile, "--reload-signal=USR1")
		out.waitLog(t, "apply failed", regexp.QuoteMeta(fmt.Sprintf(`reload pid file %s: pid %d from %s: no such process`, pidFile, done.Process.Pid, pidFile)))
	})
	t.Run("command fails", func(t *testing.T) {
		out := start(t, "--volume-dir="+dir, "--reload-command=ls /no/such/dir")
		out.waitLog(t, "apply failed", regexp.QuoteMeta(`reload command "ls /no/such/dir": exit status 2: ls: cannot access '/no/such/dir': No such file or directory`))
	})
	t.Run("command hangs", func(t *testing.T) {
		out := start(t, "--volume-dir="+dir, "--reload-command=sleep 30", "--reload-timeout=100ms")
		out.waitLog(t, "apply failed", regexp.QuoteMeta(`reload command "sleep 30": no exit within 100ms`))
	})
}
