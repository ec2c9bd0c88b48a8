package collect

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// target is what one watcher lists and watches: the objects of a
// resource in a namespace (all with ""), selected by label, or the one
// object name names.
type target struct {
	resource  Resource
	namespace string
	name      string
	selector  string // label selector, when name is empty
}

func (t target) String() string {
	ns := t.namespace
	if ns == "" {
		ns = "all namespaces"
	}
	if t.name != "" {
		return string(t.resource) + " " + t.name + " in " + ns
	}
	return string(t.resource) + "s " + t.selector + " in " + ns
}

// in reports whether key is one of the target's objects.
func (t target) in(key objectKey) bool {
	return key.resource == t.resource && (t.namespace == "" || key.namespace == t.namespace) && (t.name == "" || key.name == t.name)
}

func (t target) options() metav1.ListOptions {
	if t.name != "" {
		return metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", t.name).String()}
	}
	return metav1.ListOptions{LabelSelector: t.selector}
}

const (
	// listPage bounds the objects of one list answer.
	listPage = 100
	// firstRetry is the first wait after a failure; it doubles up to
	// ERROR_THROTTLE_SLEEP.
	firstRetry = 200 * time.Millisecond
)

// errSilent ends a watch that received nothing for WATCH_CLIENT_TIMEOUT.
var errSilent = errors.New("no event from the API server within the client timeout")

// watcher lists, then watches one target, resuming each watch where the
// last one stopped, listing again when the API server no longer has that
// point (410 Gone).
type watcher struct {
	c *Collector
	t target

	rv string // where the next watch starts; empty: list first

	mu        sync.Mutex
	downSince time.Time // zero while a watch or a list works
	synced    bool
}

func (w *watcher) request() *rest.Request {
	r := w.c.client.Get().Resource(w.t.resource.plural())
	if w.t.namespace != "" {
		r = r.Namespace(w.t.namespace)
	}
	return r
}

// list reads every object of the target, a page at a time, processes
// them, removes those of the store it no longer has, and reports
// whether files changed.
func (w *watcher) list(ctx context.Context) (bool, error) {
	opts := w.t.options()
	opts.Limit = listPage
	present := map[objectKey]bool{}
	changed := false
	for {
		var (
			meta  metav1.ListMeta
			items []runtime.Object
		)
		switch w.t.resource {
		case Secret:
			var l corev1.SecretList
			if err := w.request().VersionedParams(&opts, metav1.ParameterCodec).Do(ctx).Into(&l); err != nil {
				return changed, fmt.Errorf("list %s: %w", w.t, err)
			}
			meta = l.ListMeta
			for i := range l.Items {
				items = append(items, &l.Items[i])
			}
		default:
			var l corev1.ConfigMapList
			if err := w.request().VersionedParams(&opts, metav1.ParameterCodec).Do(ctx).Into(&l); err != nil {
				return changed, fmt.Errorf("list %s: %w", w.t, err)
			}
			meta = l.ListMeta
			for i := range l.Items {
				items = append(items, &l.Items[i])
			}
		}
		for _, obj := range items {
			key, ok := w.key(obj)
			if !ok {
				continue
			}
			present[key] = true
			changed = w.c.process(ctx, key, obj) || changed
		}
		if meta.Continue == "" {
			changed = w.c.store.replace(w.t.in, present) || changed
			w.rv = meta.ResourceVersion
			w.c.m.lists.Inc()
			return changed, nil
		}
		opts.Continue = meta.Continue
	}
}

func (w *watcher) key(obj runtime.Object) (objectKey, bool) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return objectKey{}, false
	}
	return objectKey{resource: w.t.resource, namespace: m.GetNamespace(), name: m.GetName()}, true
}

// watch watches from w.rv until the API server ends the watch, it fails
// or stays silent for the client timeout, and returns how many events
// it received.
func (w *watcher) watch(ctx context.Context) (int, error) {
	opts := w.t.options()
	opts.Watch = true
	opts.ResourceVersion = w.rv
	opts.AllowWatchBookmarks = true
	seconds := int64(w.c.opts.ServerTimeout / time.Second)
	opts.TimeoutSeconds = &seconds
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wi, err := w.request().VersionedParams(&opts, metav1.ParameterCodec).Watch(ctx)
	if err != nil {
		return 0, fmt.Errorf("watch %s: %w", w.t, err)
	}
	defer wi.Stop()
	w.up()
	w.c.m.watches.Inc()
	defer w.c.m.watches.Dec()
	silent := time.NewTimer(w.c.opts.ClientTimeout)
	defer silent.Stop()
	for n := 0; ; n++ {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return n, nil
		case <-silent.C:
			return n, errSilent
		case ev, ok = <-wi.ResultChan():
		}
		if !ok {
			return n, nil
		}
		silent.Reset(w.c.opts.ClientTimeout)
		w.c.m.watchEvents.WithLabelValues(string(ev.Type)).Inc()
		switch ev.Type {
		case watch.Added, watch.Modified, watch.Deleted:
			key, ok := w.key(ev.Object)
			if !ok {
				continue
			}
			var changed bool
			if ev.Type == watch.Deleted {
				changed = w.c.store.remove(key)
			} else {
				changed = w.c.process(ctx, key, ev.Object)
			}
			if changed {
				w.c.changed()
			}
			w.rv = ev.Object.(metav1.Object).GetResourceVersion()
		case watch.Bookmark:
			if m, ok := ev.Object.(metav1.Object); ok {
				w.rv = m.GetResourceVersion()
			}
		case watch.Error:
			return n, fmt.Errorf("watch %s: %w", w.t, apierrors.FromObject(ev.Object))
		}
	}
}

// run lists and watches until ctx is done. Failures in a row are retried
// with backoff, from firstRetry up to ERROR_THROTTLE_SLEEP; a watch that
// held (an event, or over a second) starts the count again.
func (w *watcher) run(ctx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		if w.rv == "" {
			changed, err := w.list(ctx)
			if changed {
				w.c.changed()
			}
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				failures++
				w.failed(ctx, err, failures, "error")
				continue
			}
			w.up()
			w.markSynced()
		}
		start := time.Now()
		n, err := w.watch(ctx)
		held := n > 0 || time.Since(start) > time.Second
		switch {
		case ctx.Err() != nil:
			return
		case expired(err):
			w.c.m.watchRestarts.WithLabelValues("expired").Inc()
			w.c.logger.Info("watch expired, listing again", "watching", w.t.String(), "err", err)
			w.rv = ""
			continue
		case err == nil && held:
			w.c.m.watchRestarts.WithLabelValues("ended").Inc()
			failures = 0
			continue
		case errors.Is(err, errSilent):
			// Nothing came, not even a bookmark: watch again at once. A
			// dead connection fails the next watch, with backoff.
			w.c.m.watchRestarts.WithLabelValues("silent").Inc()
			w.c.logger.Info("no event within the client timeout, watching again", "watching", w.t.String(), "timeout", w.c.opts.ClientTimeout)
			failures = 0
			continue
		case err == nil:
			err = errors.New("the API server ended the watch at once")
		}
		if held {
			failures = 0
		}
		failures++
		w.failed(ctx, err, failures, "error")
	}
}

// failed records the failures-th failure in a row and waits before the
// next attempt.
func (w *watcher) failed(ctx context.Context, err error, failures int, reason string) {
	w.down()
	w.c.m.watchRestarts.WithLabelValues(reason).Inc()
	wait := backoff(failures, w.c.opts.ErrorThrottle)
	w.c.logger.Warn("API server", "watching", w.t.String(), "err", err, "attempt", failures, "retry_in", wait.Round(time.Millisecond))
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// backoff returns the wait after the failure number n: doubling from
// firstRetry up to limit, with up to 20% jitter either way.
func backoff(n int, limit time.Duration) time.Duration {
	d := firstRetry
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	if d <= 0 {
		return 0
	}
	return d + time.Duration(rand.Int64N(int64(d)/5*2+1)) - d/5
}

func expired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

func (w *watcher) up() {
	w.mu.Lock()
	w.downSince = time.Time{}
	w.mu.Unlock()
}

func (w *watcher) down() {
	w.mu.Lock()
	if w.downSince.IsZero() {
		w.downSince = time.Now()
	}
	w.mu.Unlock()
}

func (w *watcher) markSynced() {
	w.mu.Lock()
	first := !w.synced
	w.synced = true
	w.mu.Unlock()
	if first {
		w.c.synced()
	}
}

// dead returns since when the watcher has had no working watch, if for
// longer than limit.
func (w *watcher) dead(now time.Time, limit time.Duration) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.downSince, !w.downSince.IsZero() && now.Sub(w.downSince) > limit
}
