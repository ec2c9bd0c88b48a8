package kube

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
)

// TestCoalescer drives the coalescer as the work queue does, on a clock
// of its own: each event hands the key over at once, each wait asked for
// hands it over when it ends, and a render takes renderTime, during which
// events wait for it. It checks when the renders start, and which of them
// hold the rules' changes back.
func TestCoalescer(t *testing.T) {
	const renderTime = 200 * time.Millisecond
	key := types.NamespacedName{Namespace: "ns", Name: "main"}
	tests := []struct {
		name string
		// events are the times of the events, from 0.
		events []time.Duration
		// renders are when the renders start.
		renders []time.Duration
		// held are the renders that hold the rules back.
		held []time.Duration
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
			name:   "a long burst renders at the bound after its first unrendered event, holding the rules back",
			events: every(5*time.Millisecond, 0, 7*time.Second),
			// At once; then the first unrendered event at 200 ms, its
			// render at the bound, 3.2 s, until 3.4 s, holding the rules
			// back; the next bound is 6 s after 3.4 s, later than the
			// last event, at 6.995 s, rendered 100 ms later with the
			// rules.
			renders: []time.Duration{0, 3200 * time.Millisecond, 7095 * time.Millisecond},
			held:    []time.Duration{3200 * time.Millisecond},
		},
		{
			name:   "the bound doubles up to maxBound while the burst goes on, and holds the rules back up to maxRuleHold",
			events: every(5*time.Millisecond, 0, 40*time.Second),
			// Bounds of 3, 6, 12 and 12 s from the end of the render
			// before; at 33.8 s the last render with the rules ended
			// 33.6 s before, more than maxRuleHold: the rules too.
			renders: []time.Duration{0, 3200 * time.Millisecond, 9400 * time.Millisecond, 21600 * time.Millisecond,
				33800 * time.Millisecond, 40095 * time.Millisecond},
			held: []time.Duration{3200 * time.Millisecond, 9400 * time.Millisecond, 21600 * time.Millisecond},
		},
		{
			name: "a quiet gap ends the burst: the next one starts at maxWait again",
			events: append(every(5*time.Millisecond, 0, 7*time.Second),
				every(5*time.Millisecond, 7500*time.Millisecond, 11*time.Second)...),
			// As above until 7.095 s, then at once at 7.5 s; the first
			// unrendered event at 7.7 s, its bound at 10.7 s.
			renders: []time.Duration{0, 3200 * time.Millisecond, 7095 * time.Millisecond, 7500 * time.Millisecond,
				10700 * time.Millisecond, 11095 * time.Millisecond},
			held: []time.Duration{3200 * time.Millisecond, 10700 * time.Millisecond},
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
			c := NewCoalescer(func() time.Time { return time.Unix(0, 0).Add(now) })
			var renders, held []time.Duration
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
				wait, hold := c.Wait(key)
				if wait > 0 {
					assert.False(t, hold, "a wait holds nothing")
					due = now + wait
					continue
				}
				renders = append(renders, now)
				if hold {
					held = append(held, now)
				}
				now += renderTime
				c.Rendered(key, false)
				if len(events) > 0 && events[0] < now {
					due = now // Events during the render hand it over at its end.
				}
			}
			assert.Equal(t, tc.renders, renders)
			assert.Equal(t, tc.held, held, "renders holding the rules back")
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
	c := NewCoalescer(func() time.Time { return now })
	wait := func() time.Duration {
		d, hold := c.Wait(key)
		assert.False(t, hold)
		return d
	}
	assert.Zero(t, wait())
	c.Rendered(key, true)
	now = now.Add(5 * time.Millisecond)
	assert.Zero(t, wait(), "the retry of a failed render")
	c.Rendered(key, false)
	now = now.Add(5 * time.Millisecond)
	assert.Equal(t, QuietGap, wait(), "an event right after a render")
}

// TestCoalescerHoldFailed: a render at the bound that failed is retried
// with the rules.
func TestCoalescerHoldFailed(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "main"}
	now := time.Unix(0, 0)
	c := NewCoalescer(func() time.Time { return now })
	_, hold := c.Wait(key)
	assert.False(t, hold, "at once")
	c.Rendered(key, false)
	for now = now.Add(QuietGap / 2); ; now = now.Add(QuietGap / 2) {
		if d, hold := c.Wait(key); d == 0 {
			assert.True(t, hold, "at the bound")
			break
		}
	}
	c.Rendered(key, true)
	now = now.Add(QuietGap / 2)
	d, hold := c.Wait(key)
	assert.Zero(t, d)
	assert.False(t, hold, "the retry of a failed render at the bound")
}
