package prometheus

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
)

// TestCoalescer drives the coalescer as the work queue does, on a clock
// of its own: each event hands the key over at once, each wait asked for
// hands it over when it ends, and a render takes renderTime, during which
// events wait for it.
func TestCoalescer(t *testing.T) {
	const renderTime = 200 * time.Millisecond
	key := types.NamespacedName{Namespace: "ns", Name: "main"}
	tests := []struct {
		name string
		// events are the times of the events, from 0.
		events []time.Duration
		// renders are when the renders start.
		renders []time.Duration
	}{
		{
			name:    "a single edit renders at once",
			events:  []time.Duration{0},
			renders: []time.Duration{0},
		},
		{
			name:    "edits a few seconds apart render at once",
			events:  []time.Duration{0, 2 * time.Second, 5 * time.Second},
			renders: []time.Duration{0, 2 * time.Second, 5 * time.Second},
		},
		{
			name:   "an edit during a render waits for the quiet gap after it",
			events: []time.Duration{0, 50 * time.Millisecond},
			// The second event is handed over at the end of the first
			// render (200 ms), and waits 100 ms.
			renders: []time.Duration{0, 300 * time.Millisecond},
		},
		{
			name:   "events in a burst render once after the quiet gap",
			events: every(10*time.Millisecond, 0, time.Second),
			// At once for the first; the others, from 200 ms (the end
			// of the first render) to 990 ms, at 990 + 100 ms.
			renders: []time.Duration{0, 1090 * time.Millisecond},
		},
		{
			name:   "a long burst renders at most every maxWait after its first unrendered event",
			events: every(5*time.Millisecond, 0, 7*time.Second),
			// At once; then the first unrendered event at 200 ms, its
			// render at 3.2 s until 3.4 s; the next at 6.4 s until
			// 6.6 s; the last event at 6.995 s, rendered 100 ms later.
			renders: []time.Duration{0, 3200 * time.Millisecond, 6400 * time.Millisecond, 7095 * time.Millisecond},
		},
		{
			name: "an edit well after the last render renders at once",
			events: append(every(10*time.Millisecond, 0, 500*time.Millisecond),
				1800*time.Millisecond),
			// 0; the rest at 490 + 100 ms, until 790 ms; 1.8 s is more
			// than a second after it.
			renders: []time.Duration{0, 590 * time.Millisecond, 1800 * time.Millisecond},
		},
		{
			name:    "edits a little more than a render and the quiet gap apart render at once",
			events:  []time.Duration{0, 400 * time.Millisecond, 800 * time.Millisecond},
			renders: []time.Duration{0, 400 * time.Millisecond, 800 * time.Millisecond},
		},
		{
			name:   "an edit less than the quiet gap after the last render waits for the quiet gap",
			events: append(every(10*time.Millisecond, 0, 500*time.Millisecond), 850*time.Millisecond),
			// 590 until 790; 850 is 60 ms after.
			renders: []time.Duration{0, 590 * time.Millisecond, 950 * time.Millisecond},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var now time.Duration
			c := newCoalescer(func() time.Time { return time.Unix(0, 0).Add(now) })
			var renders []time.Duration
			events := tc.events
			// due is when the key is handed over next: the first event
			// not handed over yet, or the end of a wait; -1 when neither.
			due := time.Duration(-1)
			for len(events) > 0 || due >= 0 {
				// Hand the key over at the earlier of the next event and
				// the wait's end.
				next := due
				if len(events) > 0 && (next < 0 || events[0] < next) {
					next = events[0]
				}
				now = max(now, next)
				for len(events) > 0 && events[0] <= now {
					events = events[1:]
				}
				due = -1
				if wait := c.wait(key); wait > 0 {
					due = now + wait
					continue
				}
				renders = append(renders, now)
				now += renderTime
				c.rendered(key, false)
				if len(events) > 0 && events[0] < now {
					due = now // Events during the render hand it over at its end.
				}
			}
			assert.Equal(t, tc.renders, renders)
		})
	}
}

// every returns the times from start to end (excluded), step apart.
func every(step, start, end time.Duration) []time.Duration {
	var out []time.Duration
	for d := start; d < end; d += step {
		out = append(out, d)
	}
	return out
}

// TestCoalescerFailed: after a failed render the key renders as soon as
// it is handed over, so that the work queue's backoff governs the
// retries (a wait asked for would reset it), and coalesces again once a
// render succeeds.
func TestCoalescerFailed(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "main"}
	now := time.Unix(0, 0)
	c := newCoalescer(func() time.Time { return now })
	assert.Zero(t, c.wait(key))
	c.rendered(key, true)
	now = now.Add(5 * time.Millisecond)
	assert.Zero(t, c.wait(key), "the retry of a failed render")
	c.rendered(key, false)
	now = now.Add(5 * time.Millisecond)
	assert.Equal(t, quietGap, c.wait(key), "an event right after a render")
}
