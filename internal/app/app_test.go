package app

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	oklog "github.com/oklog/run"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/podreload/podreload/internal/tune"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNewRegistry(t *testing.T) {
	for _, tc := range []struct {
		program string
		aliases []string
		want    []string
	}{
		{"rules-reloader", nil, []string{"rules_reloader_build_info"}},
		{"config-reloader", []string{"prometheus-config-reloader"}, []string{"config_reloader_build_info", "prometheus_config_reloader_build_info"}},
	} {
		t.Run(tc.program, func(t *testing.T) {
			mfs, err := NewRegistry(tc.program, tc.aliases...).Gather()
			require.NoError(t, err)
			var got []string
			for _, mf := range mfs {
				if strings.HasSuffix(mf.GetName(), "_build_info") {
					got = append(got, mf.GetName())
				}
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestServer(t *testing.T) {
	reg := NewRegistry("config-reloader")
	ready, degraded := false, false
	srv := NewServer(nil, reg, "127.0.0.1:0", "", "", func() error {
		switch {
		case !ready:
			return errors.New("not ready: no reload has succeeded yet")
		case degraded:
			return &DegradedError{Err: errors.New("API server unreachable")}
		}
		return nil
	})
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		srv.srv.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	for _, tc := range []struct {
		path            string
		ready, degraded bool
		status          int
		body            string
	}{
		{"/healthz", false, false, 200, `{"status":"up"}`},
		{"/-/ready", false, false, 503, "not ready: no reload has succeeded yet\n"},
		{"/-/ready", true, false, 200, "ready\n"},
		{"/-/ready", true, true, 200, "ready, degraded: API server unreachable\n"},
	} {
		ready, degraded = tc.ready, tc.degraded
		status, body := get(tc.path)
		require.Equal(t, tc.status, status, tc.path)
		require.Equal(t, tc.body, body, tc.path)
	}
	status, body := get("/metrics")
	require.Equal(t, 200, status)
	for _, name := range []string{"config_reloader_build_info", "go_goroutines", "process_start_time_seconds"} {
		require.Contains(t, body, name)
	}
}

// TestRun checks the exit code and the log line for each way a run group
// ends.
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		code int
		log  string
	}{
		{"actor ends", nil, 0, ""},
		{"context canceled", context.Canceled, 0, `level=INFO msg=stopping reason="context canceled"`},
		{"actor fails", errors.New("boom"), 1, "level=ERROR msg=run err=boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{
				ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
					if a.Key == slog.TimeKey {
						return slog.Attr{}
					}
					return a
				},
			}))
			var g oklog.Group
			g.Add(func() error { return tc.err }, func(error) {})
			require.Equal(t, tc.code, Run(t.Context(), logger, &g))
			require.Equal(t, tc.log, strings.TrimSpace(out.String()))
		})
	}
}

func TestReadiness(t *testing.T) {
	notReady := errors.New("not ready: no reload has succeeded yet")
	missing := errors.New("secret ns/cfg not found: waiting for it")
	unreachable := errors.New("API server unreachable for configmaps since T: connection refused")
	none := func() error { return nil }
	is := func(err error) func() error { return func() error { return err } }
	for _, tc := range []struct {
		name     string
		ready    func() error
		degraded []func() error
		want     string
		isDegr   bool
	}{
		{"ready", none, []func() error{none}, "", false},
		{"not ready wins", is(notReady), []func() error{is(missing)}, notReady.Error(), false},
		{"degraded, every cause", none, []func() error{is(missing), none, is(unreachable)},
			"degraded: " + missing.Error() + "\n" + unreachable.Error(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Readiness(tc.ready, tc.degraded...)()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.want)
			require.Equal(t, tc.isDegr, errors.As(err, new(*DegradedError)))
		})
	}
}

// TestSidecarRun: the first actor to end ends every other one, and the
// exit code is Run's.
func TestSidecarRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		code int
	}{
		{"actor ends", nil, 0},
		{"actor fails", errors.New("boom"), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logger := slog.New(slog.DiscardHandler)
			s := &Sidecar{Registry: NewRegistry("rules-reloader"), Trimmer: tune.NewTrimmer(logger, time.Hour), logger: logger}
			stopped := make(chan struct{})
			s.Add(func(ctx context.Context) error {
				<-ctx.Done()
				close(stopped)
				return nil
			})
			s.Add(func(context.Context) error { return tc.err })
			s.Serve("127.0.0.1:0", "", "", func() error { return nil })
			require.Equal(t, tc.code, s.Run(t.Context()))
			select {
			case <-stopped:
			default:
				t.Fatal("an actor still runs after Run returned")
			}
		})
	}
}
