package collect

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
