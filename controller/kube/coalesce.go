package kube

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Coalescing the events of an object into renders (a server of the kinds
// that run Prometheus, say), as the config-reloader
// coalesces file events into reloads (its delay): every render of a
// server writes its config Secret, the rule ConfigMaps that changed and
// its status, each a full write to etcd, an event to every watcher and,
// downstream, a reload of every replica. Rendering once per event, or
// once per queue pass, wrote them about 25 times each in a burst of 2,000
// creates (docs/benchmarks.md, BenchmarkScale). The numbers:
//
//   - An event quietGap (100 ms) or more after the server's last event and
//     the end of its last render renders at once, the rules included: a
//     single edit is written as fast as before (< 100 ms), and so are
//     edits a few hundred milliseconds apart (make bench's pipeline edits
//     every 250 ms). The first event of a burst cannot be told from a
//     single edit: it renders at once too.
//   - Otherwise the render waits until the server's events have been quiet
//     for quietGap, so that it comes 0.1 s after the last create
//     of a burst plus one render (about 0.2 s for 2,000 objects): the 0.5 s
//     from the last create to convergence is kept. A burst's creates come
//     a few milliseconds apart (2,000 in 6 to 10 s from 16 clients); 100 ms
//     is also longer than the API server's usual pauses on a loaded host.
//   - A burst that never pauses is rendered at its bound after its first
//     unrendered event, so that progress is written: maxWait (3 s) the
//     first time, then twice the last bound, up to maxBound (12 s), until
//     a render comes at a quiet gap. A 2,000-object burst of 6 to 9 s
//     renders 3 times (the first event, once at the bound, once after the
//     last), one of 10 to 21 s 4 times.
//   - A render at the bound holds the rule ConfigMaps' changes back (it
//     writes the configuration, with the rule files as written before, and
//     the status saying so; holdRules): the render after the last event
//     writes them, each rule ConfigMap once. The rules of 1,000
//     PrometheusRules (600 KB) fill about 12 ConfigMaps (package rulefiles); had
//     each render at the bound written those that gained files, each would
//     be written once more per bound. A burst of 2,000 objects then changes
//     about 19 objects: 3 config Secrets, 3 statuses, the rule ConfigMap
//     of the first event and the dozen of the last render. In a burst that
//     never pauses, a render at the bound writes the rules too once the
//     last render that wrote them is maxRuleHold (30 s) old.
const (
	QuietGap    = 100 * time.Millisecond
	MaxWait     = 3 * time.Second
	maxBound    = 12 * time.Second
	maxRuleHold = 30 * time.Second
)

// Coalescer decides, each time the work queue hands a server's key to the
// Reconciler, whether to render now or to come back later. The queue holds
// one entry per key: an event makes it ready at once, and the wait asked
// for (RequeueAfter) makes it wait until due; a call before due is an
// event, one at or after due the wait's end.
type Coalescer struct {
	now  func() time.Time
	mu   sync.Mutex
	keys map[types.NamespacedName]*window
}

// window is what the Coalescer knows about a key.
type window struct {
	// first and last are the times of the first and last events not
	// rendered yet; first is zero when there is none.
	first, last time.Time
	// due is the end of the wait asked for, zero when none is.
	due time.Time
	// done is the end of the last render.
	done time.Time
	// bounds counts the renders at the bound since the last at a quiet
	// gap or at once: the next bound is maxWait doubled as many times,
	// up to maxBound.
	bounds int
	// rules is the end of the last render that did not hold the rules
	// back, zero before the first.
	rules time.Time
	// holding is set while a render that holds the rules back is under
	// way.
	holding bool
	// failed is set when the last render failed: the work queue retries
	// it with its backoff, which a wait asked for would reset.
	failed bool
}

// bound is how long after the first event not rendered yet the render
// comes at the latest.
func (w *window) bound() time.Duration {
	b := MaxWait
	for i := 0; i < w.bounds && b < maxBound; i++ {
		b *= 2
	}
	return min(b, maxBound)
}

// NewCoalescer returns a Coalescer on the clock now.
func NewCoalescer(now func() time.Time) *Coalescer {
	return &Coalescer{now: now, keys: map[types.NamespacedName]*window{}}
}

// Wait returns how long key's render waits, 0 to render now; and for a
// render now, whether it holds the rules' changes back: a render at the
// bound, while events still come, less than maxRuleHold after the end of
// the last render that wrote the rules.
func (c *Coalescer) Wait(key types.NamespacedName) (wait time.Duration, holdRules bool) {
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
		w.first, w.due, w.bounds, w.holding = time.Time{}, time.Time{}, 0, false
		return 0, false
	case w.first.IsZero() && now.Sub(w.last) >= QuietGap && now.Sub(w.done) >= QuietGap:
		w.last, w.due, w.bounds, w.holding = now, time.Time{}, 0, false
		return 0, false
	case w.first.IsZero():
		w.first, w.last = now, now
	case now.Before(w.due):
		w.last = now
	}
	at := w.last.Add(QuietGap)
	if bound := w.first.Add(w.bound()); bound.Before(at) {
		at = bound
	}
	if now.Before(at) {
		w.due = at
		return at.Sub(now), false
	}
	w.first, w.due, w.holding = time.Time{}, time.Time{}, false
	if now.Before(w.last.Add(QuietGap)) {
		// At the bound: the events go on.
		w.bounds++
		w.holding = !w.rules.IsZero() && now.Sub(w.rules) < maxRuleHold
	} else {
		w.bounds = 0
	}
	return 0, w.holding
}

// Rendered records the end of a render of key, failed or not.
func (c *Coalescer) Rendered(key types.NamespacedName, failed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w := c.keys[key]; w != nil {
		w.done, w.failed = c.now(), failed
		if !failed && !w.holding {
			w.rules = w.done
		}
		w.holding = false
	}
}

// Forget drops what is known about key.
func (c *Coalescer) Forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.keys, key)
}
