package reloader

import (
	"math/rand/v2"
	"time"
)

// schedule decides when Run applies, and owns the timer Run waits on. Its
// clock is the time package's, so tests drive it with testing/synctest.
type schedule struct {
	quietWindow, delay, retryInterval time.Duration
	retries                           int
	randN                             func(n int64) int64 // the backoff's jitter: rand.Int64N
	timer                             *time.Timer

	due       time.Time // when the timer fires; zero once it has
	windowEnd time.Time // changes before this coalesce into a trailing apply
	settling  time.Time // when a half-updated volume was first seen
	pending   time.Time // when the first change not yet applied was seen
	retryAt   time.Time // when the pending retry is due; zero without one
	attempt   int       // consecutive failures of the same input
	lastInput uint64    // the input of the last apply
}

// newSchedule returns a schedule for opts, as New completed them, with the
// first apply due at once.
func newSchedule(opts Options) *schedule {
	return &schedule{
		quietWindow:   opts.QuietWindow,
		delay:         opts.DelayInterval,
		retryInterval: opts.RetryInterval,
		retries:       opts.Retries,
		randN:         rand.Int64N,
		timer:         time.NewTimer(0),
		due:           time.Now(),
	}
}

// C receives when an apply is due.
func (s *schedule) C() <-chan time.Time { return s.timer.C }

func (s *schedule) stop() { s.timer.Stop() }

func (s *schedule) dueAt(at time.Time) {
	s.due = at
	s.timer.Reset(time.Until(at))
}

// changeSeen schedules the apply of a change seen now.
func (s *schedule) changeSeen() {
	now := time.Now()
	if s.pending.IsZero() {
		s.pending = now
	}
	s.dueAt(s.applyAt(now))
	s.windowEnd = now.Add(s.quietWindow)
}

// tick is the safety net's periodic check: an apply now, unless one is due.
func (s *schedule) tick() {
	if s.due.IsZero() {
		s.dueAt(time.Now())
	}
}

// applying records that the apply C announced starts. It returns whether
// the apply waits for half-updated volumes to settle (not once they have
// looked half-updated for settleTimeout), and whether it is the retry a
// failure scheduled: content the process rejected is sent again only then.
func (s *schedule) applying() (consistent, retry bool) {
	now := time.Now()
	s.due = time.Time{}
	if retry = !s.retryAt.IsZero() && !now.Before(s.retryAt); retry {
		s.retryAt = time.Time{}
	}
	return s.settling.IsZero() || now.Sub(s.settling) < settleTimeout, retry
}

// unsettled records that the apply found a volume half-updated: it runs
// again after a quiet window.
func (s *schedule) unsettled() {
	now := time.Now()
	if s.settling.IsZero() {
		s.settling = now
	}
	s.dueAt(now.Add(s.quietWindow))
}

// applied records that the apply of input, which ended as res, succeeded:
// it reloaded the process or found nothing to reload.
func (s *schedule) applied(input uint64, res result) {
	s.finished(time.Now(), input, res)
	s.attempt, s.retryAt = 0, time.Time{}
}

// applyFailed records that the apply of input, which ended as res (a
// reload the process accepted, refused or did not answer, or none),
// failed, and schedules a retry. It returns the retry's number and the
// wait before it, or 0 and 0 once the retries are used up: then only the
// next change or safety tick applies again.
func (s *schedule) applyFailed(input uint64, res result) (attempt int, wait time.Duration) {
	now := time.Now()
	s.finished(now, input, res)
	s.retryAt = time.Time{}
	if s.retries >= 0 && s.attempt >= s.retries {
		s.attempt = 0
		return 0, 0
	}
	wait = backoff(s.retryInterval, s.attempt, s.randN)
	s.attempt++
	s.retryAt = now.Add(wait)
	s.dueAt(s.retryAt)
	return s.attempt, wait
}

// held records that an apply other than the retry found the content the
// process rejected, still waiting for its retry: the retry stays due when
// it was.
func (s *schedule) held() {
	s.pending, s.settling = time.Time{}, time.Time{}
	if !s.retryAt.IsZero() {
		s.dueAt(s.retryAt)
	}
}

// finished records the end, at now, of an apply that read input and ended
// as res.
func (s *schedule) finished(now time.Time, input uint64, res result) {
	s.pending, s.settling = time.Time{}, time.Time{}
	if res == resultReloaded || input != s.lastInput {
		// A success, or new content: tried again from the first
		// interval, whatever failed before.
		s.attempt = 0
	}
	s.lastInput = input
	if res.requested() {
		// The next request waits for a quiet window, whatever the
		// answer to this one: a change seen while it was under way
		// is not sent in the same instant.
		s.windowEnd = now.Add(s.quietWindow)
	}
}

// applyAt returns when to apply a change seen at now.
func (s *schedule) applyAt(now time.Time) time.Time {
	var at time.Time
	switch {
	case s.delay > 0:
		at = now.Add(s.delay)
	case now.Before(s.windowEnd) && s.settling.IsZero():
		at = now.Add(s.quietWindow)
	default:
		// The first change after a quiet period, or the next step of a
		// half-done kubelet update. A newer change also supersedes a
		// pending retry.
		return now
	}
	// However often changes come, the first one waits at most this long.
	latest := s.pending.Add(max(10*s.quietWindow, 2*s.delay))
	if at.After(latest) {
		return latest
	}
	return at
}

// backoff returns the wait before retry number attempt: exponential from
// first, capped, with up to 20% jitter either way, drawn with randN, which
// returns a number in [0, n) as rand.Int64N does.
func backoff(first time.Duration, attempt int, randN func(n int64) int64) time.Duration {
	d := first
	for range attempt {
		if d >= maxRetryInterval/2 {
			d = maxRetryInterval
			break
		}
		d *= 2
	}
	d = max(d, first) // A first interval above the cap is kept.
	jitter := time.Duration(randN(int64(d)/5*2+1)) - d/5
	return d + jitter
}
