package reloader

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// promStatus is what a fakeProm reports of its loads.
type promStatus struct {
	success     bool
	lastSuccess float64 // Unix seconds, as /metrics has it
	lastFailure time.Time
}

// fakeProm answers as Prometheus does at its runtime information,
// /metrics and notifications, with before until the first query of
// /metrics or the notifications after the first one of each, after
// then; without notifications it answers them 404 (Prometheus 2), and
// without metrics /metrics too.
func fakeProm(t *testing.T, before, after promStatus, metrics, notifications bool) *httptest.Server {
	var mu sync.Mutex
	seen := map[string]int{}
	status := func(path string) promStatus {
		mu.Lock()
		defer mu.Unlock()
		seen[path]++
		if seen[path] > 1 {
			return after
		}
		return before
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/prom/api/v1/status/runtimeinfo", func(w http.ResponseWriter, r *http.Request) {
		st := status(r.URL.Path)
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{
			"reloadConfigSuccess": st.success, "lastConfigTime": time.Unix(int64(st.lastSuccess), 0).UTC().Format(time.RFC3339),
		}})
	})
	if metrics {
		mux.HandleFunc("/prom/metrics", func(w http.ResponseWriter, r *http.Request) {
			st := status(r.URL.Path)
			success := 0
			if st.success {
				success = 1
			}
			fmt.Fprintf(w, "# HELP x\nprometheus_config_last_reload_success_timestamp_seconds %g\nprometheus_config_last_reload_successful %d\nzz 1\n", st.lastSuccess, success)
		})
	}
	if notifications {
		mux.HandleFunc("/prom/api/v1/notifications", func(w http.ResponseWriter, r *http.Request) {
			st := status(r.URL.Path)
			data := []map[string]any{{"text": "Prometheus is starting", "date": time.Unix(1, 0), "active": true}}
			if !st.lastFailure.IsZero() {
				data = append(data, map[string]any{"text": reloadFailedNotice, "date": st.lastFailure, "active": true})
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": data})
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestSignalConfirmation signals a process whose load status changes
// after the signal: a failure after a failure is told at once where the
// process dates its failures, a success within the second of the last one
// through /metrics.
func TestSignalConfirmation(t *testing.T) {
	name := fmt.Sprintf("podreload-probe-%d", os.Getpid())
	target(t, name)
	now := float64(time.Now().UnixNano()) / 1e9
	failedAt := time.Now().Add(-time.Minute)
	ok := promStatus{success: true, lastSuccess: now - 60}
	failed := promStatus{success: false, lastSuccess: now - 60, lastFailure: failedAt}
	failedAgain := promStatus{success: false, lastSuccess: now - 60, lastFailure: failedAt.Add(time.Millisecond)}
	okAgain := promStatus{success: true, lastSuccess: now - 59.9} // In the same second.
	for _, tc := range []struct {
		name                   string
		before, after          promStatus
		metrics, notifications bool
		timeout                time.Duration
		err                    string
		rejected               bool
	}{
		{name: "failed after a success", before: ok, after: failed, metrics: true, notifications: true, timeout: time.Minute,
			err: "process reports that the reload failed", rejected: true},
		{name: "failed after a failure", before: failed, after: failedAgain, metrics: true, notifications: true, timeout: time.Minute,
			err: "process reports that the reload failed", rejected: true},
		{name: "succeeded after a failure", before: failed, after: okAgain, metrics: true, notifications: true, timeout: time.Minute},
		{name: "succeeded within the second", before: ok, after: okAgain, metrics: true, notifications: true, timeout: time.Minute},
		{name: "no load after a failure", before: failed, after: failed, metrics: true, notifications: true, timeout: 200 * time.Millisecond,
			err: "process has not reloaded since the signal"},
		{name: "failed after a failure, without notifications", before: failed, after: failedAgain, metrics: true, timeout: 200 * time.Millisecond,
			err: "process has not reported a successful reload since the signal, and reports that its last reload failed"},
		{name: "failed after a failure, runtime information only", before: failed, after: failedAgain, notifications: true, timeout: time.Minute,
			err: "process reports that the reload failed", rejected: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeProm(t, tc.before, tc.after, tc.metrics, tc.notifications)
			u := mustURL(t, srv.URL+"/prom/api/v1/status/runtimeinfo")
			tr := &SignalTrigger{ProcessName: name, Signal: syscall.SIGCONT, RuntimeInfoURL: u, Timeout: tc.timeout}
			err := tr.Reload(t.Context())
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, `reload process "`+name+`": confirm through `+u.String()+`: `+tc.err)
			require.Equal(t, tc.rejected, errors.As(err, new(*RejectedError)))
		})
	}
}
