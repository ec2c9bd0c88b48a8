package reloader

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHTTPTriggerRedacts: the password and the query values of a reload URL
// reach the endpoint but appear neither in the trigger's name (used in logs
// and metric labels) nor in its errors, whether the endpoint answers with an
// error or cannot be reached.
func TestHTTPTriggerRedacts(t *testing.T) {
	const secrets = "pa55word t0ken s1gnature"
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, password, _ := r.BasicAuth()
		got = append(got, user+":"+password+" "+r.URL.RawQuery)
		http.Error(w, "reload failed", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct {
		name, url, want, err string
	}{
		{"error status", "http://admin:pa55word@" + host + "/-/reload?token=t0ken&sig=s1gnature&empty=",
			"http://admin:xxxxx@" + host + "/-/reload?token=xxxxx&sig=xxxxx&empty=",
			"reload http://admin:xxxxx@" + host + "/-/reload?token=xxxxx&sig=xxxxx&empty=: status 500: reload failed"},
		{"unreachable", "http://admin:pa55word@127.0.0.1:1/-/reload?token=t0ken",
			"http://admin:xxxxx@127.0.0.1:1/-/reload?token=xxxxx",
			`reload http://admin:xxxxx@127.0.0.1:1/-/reload?token=xxxxx: Post "http://admin:xxxxx@127.0.0.1:1/-/reload?token=xxxxx": dial tcp 127.0.0.1:1: connect: connection refused`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &HTTPTrigger{URL: mustURL(t, tc.url)}
			require.Equal(t, tc.want, tr.String())
			err := tr.Reload(t.Context())
			require.EqualError(t, err, tc.err)
			for _, s := range strings.Fields(secrets) {
				require.NotContains(t, tr.String()+err.Error(), s)
			}
		})
	}
	require.Equal(t, []string{"admin:pa55word token=t0ken&sig=s1gnature&empty="}, got, "what the endpoint received")
}

// TestSignalTriggerRedacts: a token in the runtime information URL appears
// in no error of a signal reload, whether the URL answers with an error or
// cannot be reached.
func TestSignalTriggerRedacts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	// This process, which is never signalled: the runtime information
	// check fails first.
	pidFile := filepath.Join(t.TempDir(), "pid")
	require.NoError(t, os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o644))
	for _, u := range []string{
		srv.URL + "/api/v1/status/runtimeinfo?token=t0ken",
		"http://admin:pa55word@127.0.0.1:1/api/v1/status/runtimeinfo?token=t0ken",
	} {
		tr := &SignalTrigger{PIDFile: pidFile, RuntimeInfoURL: mustURL(t, u)}
		err := tr.Reload(t.Context())
		require.ErrorContains(t, err, "process not ready")
		require.NotContains(t, err.Error()+tr.String(), "t0ken")
		require.NotContains(t, err.Error()+tr.String(), "pa55word")
	}
}
