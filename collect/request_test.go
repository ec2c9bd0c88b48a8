package collect

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// TestRequestRetries: answers 503 are retried up to REQ_RETRY_TOTAL, with
// urllib3's backoff; ENABLE_5XX takes them as they are.
func TestRequestRetries(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) <= 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	retry := Retry{Total: 5, Connect: 10, Read: 5, BackoffFactor: 0.001}
	r := newRequester(HTTP{Timeout: 5 * time.Second, Retry: retry})
	resp, err := r.do(t.Context(), "GET", srv.URL, nil, 100)
	require.NoError(t, err)
	require.Equal(t, "ok", string(resp.body))
	require.Equal(t, int32(3), calls.Load())

	calls.Store(0)
	r = newRequester(HTTP{Timeout: 5 * time.Second, Retry: Retry{Total: 1, BackoffFactor: 0.001}})
	_, err = r.do(t.Context(), "GET", srv.URL+"/?token=secret", nil, 100)
	require.EqualError(t, err, "GET "+srv.URL+"/?token=xxxxx: answered 503 (after 1 retries)")
	require.Equal(t, int32(2), calls.Load())

	calls.Store(0)
	r = newRequester(HTTP{Timeout: 5 * time.Second, Retry: retry, Accept5xx: true})
	resp, err = r.do(t.Context(), "GET", srv.URL, nil, 100)
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, resp.status)
	require.Equal(t, int32(1), calls.Load())
}

func TestRequestLimitsAndErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("x", 200)))
	}))
	t.Cleanup(srv.Close)
	r := newRequester(HTTP{Timeout: 5 * time.Second})
	_, err := r.do(t.Context(), "GET", srv.URL, nil, 100)
	require.EqualError(t, err, "GET "+srv.URL+": answer too large (over 100 bytes)")
	_, err = r.do(t.Context(), "GET", "ftp://user:pw@host/x", nil, 100)
	require.EqualError(t, err, "not an http(s) URL (not shown, it may hold a secret)")

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	r = newRequester(HTTP{Timeout: 5 * time.Second, Retry: Retry{Total: 5, Connect: 2, BackoffFactor: 0.001}})
	_, err = r.do(t.Context(), "POST", "http://u:pw@"+addr+"/reload", []byte("{}"), 100)
	require.ErrorContains(t, err, "POST http://u:xxxxx@"+addr+"/reload: dial tcp "+addr+": connect: connection refused (after 2 retries)")
	require.NotContains(t, err.Error(), "pw")
}

func TestBasicAuthEncoding(t *testing.T) {
	r := newRequester(HTTP{Username: "ü", Password: "p", Latin1: true})
	h, err := r.authorization()
	require.NoError(t, err)
	require.Equal(t, "Basic "+base64.StdEncoding.EncodeToString([]byte{0xfc, ':', 'p'}), h, "ü in latin1")
	r = newRequester(HTTP{Username: "€", Password: "p", Latin1: true})
	_, err = r.authorization()
	require.EqualError(t, err, "basic auth: the user name or password has a character that latin1 cannot encode; set REQ_BASIC_AUTH_ENCODING=utf-8")
	r = newRequester(HTTP{Username: "u"})
	h, err = r.authorization()
	require.NoError(t, err)
	require.Empty(t, h, "no password, no basic auth")
}

// TestNotifierOneReloadPerBurst: changes closer than quiet make one
// reload; one after makes another; a burst that does not stop is cut at
// maxDelay; a reload that fails is tried again until it works.
func TestNotifierOneReloadPerBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls, failures atomic.Int32
		n := newNotifier(discard(), newMetrics(prometheus.NewRegistry()), nil, Reload{})
		n.fire = func(context.Context) error {
			calls.Add(1)
			if failures.Load() > 0 {
				failures.Add(-1)
				return errors.New("refused")
			}
			return nil
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go func() { _ = n.run(ctx) }()
		for range 50 {
			n.changed()
			time.Sleep(10 * time.Millisecond)
		}
		synctest.Wait()
		require.Zero(t, calls.Load(), "still within the burst")
		time.Sleep(quiet)
		synctest.Wait()
		require.Equal(t, int32(1), calls.Load())
		n.changed()
		time.Sleep(quiet + time.Millisecond)
		synctest.Wait()
		require.Equal(t, int32(2), calls.Load())

		// A change every 100 ms for 12 s: cut every maxDelay.
		for range 120 {
			n.changed()
			time.Sleep(100 * time.Millisecond)
		}
		synctest.Wait()
		require.Equal(t, int32(4), calls.Load(), "two reloads in 12 s of changes")
		time.Sleep(quiet)
		synctest.Wait()
		require.Equal(t, int32(5), calls.Load())

		// Two failures: retried after 1 s, then 2 s.
		failures.Store(2)
		n.changed()
		time.Sleep(quiet + time.Millisecond)
		synctest.Wait()
		require.Equal(t, int32(6), calls.Load())
		time.Sleep(firstReloadRetry)
		synctest.Wait()
		require.Equal(t, int32(7), calls.Load())
		time.Sleep(2 * firstReloadRetry)
		synctest.Wait()
		require.Equal(t, int32(8), calls.Load())
		time.Sleep(time.Hour)
		synctest.Wait()
		require.Equal(t, int32(8), calls.Load(), "done once it worked")
	})
}

// TestBasicAuthFiles: REQ_USERNAME_FILE and REQ_PASSWORD_FILE (or their
// flags) are read, trimmed, at each request, over REQ_USERNAME and
// REQ_PASSWORD; a file that cannot be read leaves the variable's value.
func TestBasicAuthFiles(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("Authorization"))
	}))
	t.Cleanup(srv.Close)
	basic := func(user, password string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
	}
	dir := t.TempDir()
	user, password := filepath.Join(dir, "user"), filepath.Join(dir, "password")
	require.NoError(t, os.WriteFile(user, []byte("from-file\n"), 0o600))
	require.NoError(t, os.WriteFile(password, []byte(" secret-1 \n"), 0o600))
	r := newRequester(HTTP{Timeout: 5 * time.Second, Username: "admin", Password: "pw", UsernameFile: user, PasswordFile: password})
	_, err := r.do(t.Context(), "GET", srv.URL, nil, 100)
	require.NoError(t, err)
	require.Equal(t, basic("from-file", "secret-1"), got.Load())

	// Rotated: the next request reads it again.
	require.NoError(t, os.WriteFile(password, []byte("secret-2"), 0o600))
	_, err = r.do(t.Context(), "GET", srv.URL, nil, 100)
	require.NoError(t, err)
	require.Equal(t, basic("from-file", "secret-2"), got.Load())

	// Gone: the variables' values.
	require.NoError(t, os.Remove(user))
	require.NoError(t, os.Remove(password))
	_, err = r.do(t.Context(), "GET", srv.URL, nil, 100)
	require.NoError(t, err)
	require.Equal(t, basic("admin", "pw"), got.Load())
}

// TestSkipTLSVerify: REQ_SKIP_TLS_VERIFY reaches a server whose
// certificate no CA of the machine signed; without it the request fails.
func TestSkipTLSVerify(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	srv.StartTLS()
	t.Cleanup(srv.Close)
	r := newRequester(HTTP{Timeout: 5 * time.Second})
	_, err := r.do(t.Context(), "GET", srv.URL, nil, 100)
	require.ErrorContains(t, err, "tls: failed to verify certificate: x509: certificate signed by unknown authority")
	r = newRequester(HTTP{Timeout: 5 * time.Second, SkipTLSVerify: true})
	resp, err := r.do(t.Context(), "GET", srv.URL, nil, 100)
	require.NoError(t, err)
	require.Equal(t, "ok", string(resp.body))
}

// TestRequestTimeout: REQ_TIMEOUT ends a request the server does not
// answer; it is a read error, retried up to REQ_RETRY_READ.
func TestRequestTimeout(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		// Answered only when the test ends, or after a minute: the
		// timeout must end the request before.
		select {
		case <-release:
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
		_, _ = w.Write([]byte("late"))
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	r := newRequester(HTTP{Timeout: 100 * time.Millisecond, Retry: Retry{Total: 5, Read: 1, BackoffFactor: 0.001}})
	_, err := r.do(t.Context(), "GET", srv.URL, nil, 100)
	require.EqualError(t, err, "GET "+srv.URL+": context deadline exceeded (Client.Timeout exceeded while awaiting headers) (after 1 retries)")
	require.Equal(t, int32(2), calls.Load(), "the first try and one read retry")
}

// TestRequestReadRetries: a connection closed before the answer is a read
// error, retried up to REQ_RETRY_READ within REQ_RETRY_TOTAL.
func TestRequestReadRetries(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) <= 2 {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name    string
		retry   Retry
		calls   int32
		wantErr string
	}{
		{"within REQ_RETRY_READ", Retry{Total: 5, Read: 2, BackoffFactor: 0.001}, 3, ""},
		{"past REQ_RETRY_READ", Retry{Total: 5, Read: 1, BackoffFactor: 0.001}, 2, ": EOF (after 1 retries)"},
		{"past REQ_RETRY_TOTAL", Retry{Total: 1, Read: 5, BackoffFactor: 0.001}, 2, ": EOF (after 1 retries)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls.Store(0)
			r := newRequester(HTTP{Timeout: 5 * time.Second, Retry: tc.retry})
			// A new connection for each try: the closed one is not reused.
			r.client.Transport.(*http.Transport).DisableKeepAlives = true
			resp, err := r.do(t.Context(), "GET", srv.URL, nil, 100)
			if tc.wantErr == "" {
				require.NoError(t, err)
				require.Equal(t, "ok", string(resp.body))
			} else {
				require.EqualError(t, err, "GET "+srv.URL+tc.wantErr)
			}
			require.Equal(t, tc.calls, calls.Load())
		})
	}
}

// TestRetryWait: REQ_RETRY_BACKOFF_FACTOR's waits, urllib3's: none before
// the first retry, then factor × 2^(n−1) s, at most 120 s.
func TestRetryWait(t *testing.T) {
	r := Retry{BackoffFactor: 1.1}
	for n, want := range map[int]time.Duration{
		1: 0, 2: 2200 * time.Millisecond, 3: 4400 * time.Millisecond, 4: 8800 * time.Millisecond, 8: 120 * time.Second,
	} {
		require.InDelta(t, float64(want), float64(r.wait(n)), float64(time.Microsecond), "retry %d", n)
	}
	require.Zero(t, Retry{}.wait(3), "factor 0: no wait")
}

// TestBackoff: ERROR_THROTTLE_SLEEP bounds the waits after API errors,
// which double from firstRetry, each within 20 % of its step.
func TestBackoff(t *testing.T) {
	limit := 5 * time.Second
	for n, step := range map[int]time.Duration{
		1: 200 * time.Millisecond, 2: 400 * time.Millisecond, 3: 800 * time.Millisecond, 5: 3200 * time.Millisecond, 6: limit, 20: limit,
	} {
		for range 50 {
			d := backoff(n, limit)
			require.GreaterOrEqual(t, d, step-step/5, "failure %d", n)
			require.LessOrEqual(t, d, step+step/5, "failure %d", n)
		}
	}
	require.Zero(t, backoff(3, 0), "ERROR_THROTTLE_SLEEP=0: no wait")
}

// TestScriptExecutable: an executable SCRIPT is run as it is (its
// shebang's interpreter), one that is not with sh, which takes the
// shebang for a comment.
func TestScriptExecutable(t *testing.T) {
	touch, err := exec.LookPath("touch")
	require.NoError(t, err)
	for _, tc := range []struct {
		mode os.FileMode
		ran  bool
	}{{0o755, true}, {0o644, false}} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			marker, script := filepath.Join(dir, "ran"), filepath.Join(dir, "script")
			require.NoError(t, os.WriteFile(script, []byte("#!"+touch+" "+marker+"\n"), tc.mode))
			m := newMetrics(prometheus.NewRegistry())
			n := newNotifier(discard(), m, newRequester(HTTP{}), Reload{Script: script})
			require.NoError(t, n.reload(t.Context()))
			_, err := os.Stat(marker)
			require.Equal(t, tc.ran, err == nil, "run by its shebang: %v", err)
			require.Equal(t, 1.0, testutil.ToFloat64(m.scripts))
			require.Zero(t, testutil.ToFloat64(m.scriptsFailed))
		})
	}
}
