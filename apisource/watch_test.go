package apisource

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// flakyAPI is an API server that goes down and comes back: down, it
// refuses connections and breaks the watch in progress. It records when
// each request arrives.
type flakyAPI struct {
	mu       sync.Mutex
	up       bool
	atOnce   bool           // up, but ending every watch at once
	watch    *io.PipeWriter // the watch in progress, if any
	requests []time.Time
}

func (f *flakyAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, time.Now())
	if !f.up {
		return nil, errors.New("dial tcp 10.0.0.1:443: connect: connection refused")
	}
	ok := func(body io.ReadCloser) *http.Response {
		return &http.Response{StatusCode: http.StatusOK, Body: body, Request: req, Header: http.Header{}}
	}
	if req.URL.Query().Get("watch") == "" {
		return ok(io.NopCloser(strings.NewReader(`{"metadata":{"resourceVersion":"1"},"items":[]}`))), nil
	}
	if f.atOnce {
		return ok(io.NopCloser(strings.NewReader(""))), nil
	}
	pr, pw := io.Pipe()
	f.watch = pw
	context.AfterFunc(req.Context(), func() { _ = pw.CloseWithError(req.Context().Err()) })
	return ok(pr), nil
}

// set brings the server up or down.
func (f *flakyAPI) set(up bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.up = up
	if !up && f.watch != nil {
		_ = f.watch.CloseWithError(errors.New("read tcp 10.0.0.2:51234->10.0.0.1:443: read: connection reset by peer"))
		f.watch = nil
	}
}

// firstAfter returns the first request after t.
func (f *flakyAPI) firstAfter(t time.Time) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.requests {
		if r.After(t) {
			return r
		}
	}
	return time.Time{}
}

type nopStore struct{}

func (nopStore) replace([]object)     {}
func (nopStore) apply(string, object) {}

// TestWatchBackoffResets takes the API server down four times, for long
// enough each time that the backoff reaches its cap, and back up for a
// minute in between: after each outage's first failure, the watcher waits
// the first step again (200 ms, with jitter), not the step its previous
// outage reached.
func TestWatchBackoffResets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &flakyAPI{up: true}
		stop := runWatcher(t, api)
		for outage := 1; outage <= 4; outage++ {
			time.Sleep(time.Minute) // Up, watching.
			synctest.Wait()
			start := time.Now()
			api.set(false)
			time.Sleep(2 * maxRetry) // Down: the backoff reaches its cap.
			api.set(true)
			synctest.Wait()
			// The first retry after the watch broke.
			wait := api.firstAfter(start).Sub(start)
			require.True(t, wait >= firstRetry*4/5 && wait <= firstRetry*6/5,
				"outage %d: first retry after %s, want %s ± 20%%", outage, wait, firstRetry)
		}
		stop()
	})
}

// TestWatchEndedAtOnceBacksOff has the API server accept every watch and
// end it at once: that is no watch that held, and the retries back off.
func TestWatchEndedAtOnceBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &flakyAPI{up: true, atOnce: true}
		stop := runWatcher(t, api)
		time.Sleep(time.Minute)
		stop()
		api.mu.Lock()
		defer api.mu.Unlock()
		// A list, then watches: 200 ms, 400 ms, ... 25.6 s, 30 s apart,
		// with jitter: a dozen in a minute, where no backoff would make
		// thousands.
		require.Less(t, len(api.requests), 15, "requests in a minute")
		last := api.requests[len(api.requests)-1].Sub(api.requests[len(api.requests)-2])
		// The last wait in the minute is the 25.6 s step or the 30 s
		// one, each ±20 % (so at least 20.48 s: maxRetry*4/5 failed one
		// run in three); a backoff started again would wait 200 ms.
		require.Greater(t, last, maxRetry*2/3, "the last wait")
	})
}

// runWatcher runs a watcher of the Secret ns/cfg through api until stop
// is called.
func runWatcher(t *testing.T, api *flakyAPI) (stop func()) {
	server, err := url.Parse("https://10.0.0.1:443")
	require.NoError(t, err)
	g := func(name string) prometheus.Gauge { return prometheus.NewGauge(prometheus.GaugeOpts{Name: name}) }
	c := func(name string) prometheus.Counter { return prometheus.NewCounter(prometheus.CounterOpts{Name: name}) }
	w := &watcher{
		c: &client{server: server, http: &http.Client{Transport: api}}, logger: slog.New(slog.DiscardHandler), resource: "secrets", healthKey: "secrets",
		path: "/api/v1/namespaces/ns/secrets", selector: url.Values{}, what: "secret ns/cfg", store: nopStore{},
		m: kindMetrics{connected: g("connected"), errors: c("errors"), relists: c("relists"),
			events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "events"}, []string{"type"})},
		health: &health{since: map[string]time.Time{}, errs: map[string]error{}},
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}
