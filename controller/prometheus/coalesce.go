package prometheus

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Coalescing the events of a server into renders, as the config-reloader
// coalesces file events into reloads (its delay): every render of a
// server writes its config Secret, the rule ConfigMaps that changed and
// its status, each a full write to etcd, an event to every watcher and,
// downstream, a reload of every replica. Rendering once per event, or
// once per queue pass, wrote them about 25 times each in a burst of 2,000
// creates (docs/benchmarks.md, BenchmarkScale). The numbers:
//
//   - An event quietGap (100 ms) or more after the server's last event and
//     the end of its last render renders at once: a single edit is written
//     as fast as before (< 100 ms), and so are edits a few hundred
//     milliseconds apart (make bench's pipeline edits every 250 ms).
//   - Otherwise the render waits until the server's events have been quiet
//     for quietGap, so that it comes 0.1 s after the last create
//     of a burst plus one render (about 0.2 s for 2,000 objects): the 0.5 s
//     from the last create to convergence is kept. A burst's creates come
//     a few milliseconds apart (2,000 in 6 to 10 s from 16 clients); 100 ms
//     is also longer than the API server's usual pauses on a loaded host.
//   - A burst that never pauses is rendered at most every maxWait (3 s)
//     after its first unrendered event, so that progress is written: a
//     2,000-object burst of 7 s renders 4 times (the first event, twice at
//     the bound, once after the last), about 16 object changes (4 config
//     Secrets, 4 statuses, the rule ConfigMaps created and changed), under
//     the 20 prometheus-operator's operator needs; 10 s, 5 times.
const (
	quietGap = 100 * time.Millisecond
	maxWait  = 3 * time.Second
)

// coalescer decides, each time the work queue hands a server's key to the
// Reconciler, whether to render now or to come back later. The queue holds
// one entry per key: an event makes it ready at once, and the wait asked
// for (RequeueAfter) makes it wait until due; a call before due is an
// event, one at or after due the wait's end.
type coalescer struct {
	now  func() time.Time
	mu   sync.Mutex
	keys map[types.NamespacedName]*window
}

// window is what the coalescer knows about a key.
type window struct {
	// first and last are the times of the first and last events not
	// rendered yet; first is zero when there is none.
	first, last time.Time
	// due is the end of the wait asked for, zero when none is.
	due time.Time
	// done is the end of the last render.
	done time.Time
	// failed is set when the last render failed: the work queue retries
	// it with its backoff, which a wait asked for would reset.
	failed bool
}

func newCoalescer(now func() time.Time) *coalescer {
	return &coalescer{now: now, keys: map[types.NamespacedName]*window{}}
}

// wait returns how long key's render waits, 0 to render now.
func (c *coalescer) wait(key types.NamespacedName) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	w := c.keys[key]
	if w == nil {
		w = &window{}
		c.keys[key] = w
	}
	switch {
	case w.failed:
		w.first, w.due = time.Time{}, time.Time{}
		return 0
	case w.first.IsZero() && now.Sub(w.last) >= quietGap && now.Sub(w.done) >= quietGap:
		w.last, w.due = now, time.Time{}
		return 0
	case w.first.IsZero():
		w.first, w.last = now, now
	case now.Before(w.due):
		w.last = now
	}
	at := w.last.Add(quietGap)
	if bound := w.first.Add(maxWait); bound.Before(at) {
		at = bound
	}
	if now.Before(at) {
		w.due = at
		return at.Sub(now)
	}
	w.first, w.due = time.Time{}, time.Time{}
	return 0
}

// rendered records the end of a render of key, failed or not.
func (c *coalescer) rendered(key types.NamespacedName, failed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w := c.keys[key]; w != nil {
		w.done, w.failed = c.now(), failed
	}
}

// forget drops what is known about key.
func (c *coalescer) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.keys, key)
}
