package apisource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"strconv"
	"time"
)

// object is what is read of a Secret or a ConfigMap: a Secret's data is
// base64, a ConfigMap's data is text and its binaryData base64.
type object struct {
	Metadata   metadata          `json:"metadata"`
	Data       map[string]string `json:"data"`
	BinaryData map[string]string `json:"binaryData"`
}

type metadata struct {
	Name            string `json:"name"`
	ResourceVersion string `json:"resourceVersion"`
}

type objectList struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
		Continue        string `json:"continue"`
	} `json:"metadata"`
	Items []object `json:"items"`
}

// event is a watch event, its object decoded in place (not copied
// aside to be decoded again: a Secret is up to 1 MiB): a Secret or a
// ConfigMap, a BOOKMARK's metadata, or an ERROR's Status.
type event struct {
	Type   string `json:"type"`
	Object struct {
		object
		apiStatus
	} `json:"object"`
}

// store receives what a watcher reads.
type store interface {
	// replace sets the whole content, from a list.
	replace(items []object)
	// apply applies a watch event: ADDED, MODIFIED or DELETED.
	apply(typ string, obj object)
}

const (
	// listPage bounds the objects of one list response: 500 rule
	// ConfigMaps of a few KiB each are a few MiB to decode at once.
	listPage = 100
	// watchTimeout is the shortest a watch asks the server to last; each
	// asks for up to twice as long, so that many sidecars do not all
	// come back at once.
	watchTimeout = 5 * time.Minute
	// firstRetry and maxRetry bound the backoff after a failure.
	firstRetry = 200 * time.Millisecond
	maxRetry   = 30 * time.Second
)

// watcher lists and watches one kind of object in one namespace.
type watcher struct {
	c         *client
	logger    *slog.Logger
	resource  string     // secrets, configmaps
	healthKey string     // what the health of this watcher is recorded under
	path      string     // /api/v1/namespaces/NS/RESOURCE
	selector  url.Values // fieldSelector or labelSelector
	what      string     // names what is watched in errors
	store     store
	m         kindMetrics
	health    *health
	rv        string    // where the next watch starts; empty: list first
	connected time.Time // when the last watch was established; zero before
}

// run lists and watches until ctx is done. Failures in a row are retried
// with backoff; a watch that held (it received an event or lasted over a
// second) ends an outage, so the next one is retried from the first step.
func (w *watcher) run(ctx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		w.connected = time.Time{}
		events, err := w.once(ctx)
		held := !w.connected.IsZero() && (events > 0 || time.Since(w.connected) > time.Second)
		switch {
		case ctx.Err() != nil:
			return
		case gone(err):
			// Too old to resume: list again, at once.
			w.m.relists.Inc()
			w.logger.Info("watch expired, listing again", "watching", w.what, "err", err)
			w.rv = ""
			continue
		case err == nil && held:
			// The server ended the watch: resume it.
			failures = 0
			continue
		case err == nil:
			err = errors.New("the API server ended the watch at once")
		}
		if held {
			// The watch held, then broke: an outage starts.
			failures = 0
		}
		failures++
		w.m.errors.Inc()
		w.m.connected.Set(0)
		w.health.failed(w.healthKey, err)
		wait := backoff(failures)
		w.logger.Warn("API source", "watching", w.what, "err", err, "attempt", failures, "retry_in", wait.Round(time.Millisecond))
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}

// backoff returns the wait after the failure number n: doubling from
// firstRetry up to maxRetry, with up to 20% jitter either way.
func backoff(n int) time.Duration {
	d := firstRetry
	for i := 1; i < n && d < maxRetry; i++ {
		d *= 2
	}
	d = min(d, maxRetry)
	return d + time.Duration(rand.Int64N(int64(d)/5*2+1)) - d/5
}

// once lists when it must, then watches until the watch ends, and returns
// how many events it received.
func (w *watcher) once(ctx context.Context) (int, error) {
	if w.rv == "" {
		if err := w.list(ctx); err != nil {
			return 0, fmt.Errorf("list %s: %w", w.what, err)
		}
	}
	n, err := w.watch(ctx)
	if err != nil {
		return n, fmt.Errorf("watch %s: %w", w.what, err)
	}
	return n, nil
}

// list reads every object, a page at a time, and replaces the store's.
func (w *watcher) list(ctx context.Context) error {
	var items []object
	q := clone(w.selector)
	q.Set("limit", strconv.Itoa(listPage))
	for {
		resp, err := w.c.get(ctx, w.path, q)
		if err != nil {
			return err
		}
		var page objectList
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("decode: %w", err)
		}
		items = append(items, page.Items...)
		if page.Metadata.Continue == "" {
			w.store.replace(items)
			w.rv = page.Metadata.ResourceVersion
			w.m.connected.Set(1)
			w.health.ok(w.healthKey)
			return nil
		}
		q.Set("continue", page.Metadata.Continue)
	}
}

// watch watches from w.rv until the server ends the watch or it fails.
func (w *watcher) watch(ctx context.Context) (int, error) {
	q := clone(w.selector)
	q.Set("watch", "1")
	q.Set("resourceVersion", w.rv)
	q.Set("allowWatchBookmarks", "true")
	q.Set("timeoutSeconds", strconv.Itoa(int((watchTimeout+rand.N(watchTimeout))/time.Second)))
	resp, err := w.c.get(ctx, w.path, q)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	w.connected = time.Now()
	w.m.connected.Set(1)
	w.health.ok(w.healthKey)
	dec := json.NewDecoder(resp.Body)
	for n := 0; ; n++ {
		var ev event
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, err
		}
		w.m.events.WithLabelValues(ev.Type).Inc()
		switch ev.Type {
		case "ADDED", "MODIFIED", "DELETED":
			w.store.apply(ev.Type, ev.Object.object)
			w.rv = ev.Object.Metadata.ResourceVersion
		case "BOOKMARK":
			w.rv = ev.Object.Metadata.ResourceVersion
		case "ERROR":
			st := ev.Object.apiStatus
			return n, &StatusError{Code: st.Code, Reason: st.Reason, Message: st.Message}
		}
	}
}

func clone(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}
