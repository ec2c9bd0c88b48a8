package reloader

import (
	"cmp"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// noJitter makes backoff return its exponential step exactly.
func noJitter(n int64) int64 { return n / 2 }

// drive runs s as Run does, inside a synctest bubble: a change is seen at
// each of the offsets from now in changes, and each apply ends as end says,
// given the apply's number, how many changes were seen before it, whether
// it waits for volumes to settle and whether it is a retry. Once nothing has happened for an
// hour, drive returns the offsets at which applies started.
func drive(s *schedule, changes []time.Duration, end func(n, seen int, consistent, retry bool) (result, error)) []time.Duration {
	start := time.Now()
	var applies []time.Duration
	seen := 0
	for {
		var change <-chan time.Time
		if seen < len(changes) {
			change = time.After(time.Until(start.Add(changes[seen])))
		}
		select {
		case <-change:
			seen++
			s.changeSeen()
		case <-s.C():
			consistent, retry := s.applying()
			res, err := end(len(applies), seen, consistent, retry)
			applies = append(applies, time.Since(start))
			input := uint64(seen) // The input changes with every change.
			switch {
			case res == resultSettling:
				s.unsettled()
			case res == resultHeld:
				s.held()
			case err == nil && res != resultRejected:
				s.applied(input, res)
			default:
				s.applyFailed(input, res)
			}
		case <-time.After(time.Hour):
			if seen == len(changes) {
				return applies
			}
		}
	}
}

// ms returns durations of n milliseconds.
func ms(n ...int) []time.Duration {
	d := make([]time.Duration, len(n))
	for i, v := range n {
		d[i] = time.Duration(v) * time.Millisecond
	}
	return d
}

// every returns the offsets from first to last, step apart.
func every(first, step, last int) []time.Duration {
	var d []time.Duration
	for v := first; v <= last; v += step {
		d = append(d, ms(v)...)
	}
	return d
}

func reload(int, int, bool, bool) (result, error) { return resultReloaded, nil }

func TestSchedule(t *testing.T) {
	for _, tc := range []struct {
		name                              string
		quietWindow, delay, retryInterval time.Duration
		retries                           int
		changes                           []time.Duration
		end                               func(n, seen int, consistent, retry bool) (result, error)
		want                              []time.Duration
	}{
		{
			name: "start: one apply at once, then nothing",
			end:  reload,
			want: ms(0),
		},
		{
			name:    "a kubelet swap: applied at once, then a trailing apply that finds nothing new, then nothing",
			changes: ms(1000, 1001, 1002),
			end: func(n, _ int, _, _ bool) (result, error) {
				if n == 2 {
					return resultUnchanged, nil
				}
				return resultReloaded, nil
			},
			want: ms(0, 1000, 1052),
		},
		{
			name:        "a burst of ten changes 20 ms apart: one apply at once, one trailing",
			quietWindow: 100 * time.Millisecond,
			changes:     every(1000, 20, 1180),
			end:         reload,
			want:        ms(0, 1000, 1280),
		},
		{
			name:        "a steady stream: applied at most ten windows after the first change held",
			quietWindow: 100 * time.Millisecond,
			changes:     every(1000, 30, 3970),
			end:         reload,
			want:        ms(0, 1000, 2030, 3050, 4070),
		},
		{
			name:    "delay interval: applied when changes stop, at most twice the delay after the first",
			delay:   300 * time.Millisecond,
			changes: append(ms(1000), every(2000, 70, 2560)...),
			end:     reload,
			want:    ms(0, 1300, 2600),
		},
		{
			name:          "retries bounded: three attempts, then nothing",
			retryInterval: 20 * time.Millisecond,
			retries:       2,
			end:           func(int, int, bool, bool) (result, error) { return resultUnchanged, errors.New("apply failed") },
			want:          ms(0, 20, 60),
		},
		{
			name:          "a change supersedes a pending retry, and the backoff starts again",
			retryInterval: time.Second,
			retries:       -1,
			changes:       ms(7500),
			end: func(n, _ int, _, _ bool) (result, error) {
				if n < 6 {
					return resultUnchanged, errors.New("apply failed")
				}
				return resultReloaded, nil
			},
			want: ms(0, 1000, 3000, 7000, 7500, 8500, 10500),
		},
		{
			name:          "a reload starts the backoff again, even when the apply fails",
			retryInterval: 20 * time.Millisecond,
			retries:       -1,
			end: func(n, _ int, _, _ bool) (result, error) {
				switch {
				case n == 3:
					return resultReloaded, errors.New("apply failed")
				case n < 5:
					return resultUnchanged, errors.New("apply failed")
				}
				return resultReloaded, nil
			},
			want: ms(0, 20, 60, 140, 160, 200),
		},
		{
			name:          "rejected content: tried again with the backoff until it is accepted (500, 500, 200)",
			retryInterval: 5 * time.Second,
			retries:       -1,
			end: func(n, _ int, _, retry bool) (result, error) {
				if n > 0 && !retry {
					return resultUnchanged, errors.New("not a retry")
				}
				if n < 2 {
					return resultRejected, errors.New("rejected")
				}
				return resultReloaded, nil
			},
			want: ms(0, 5000, 15000),
		},
		{
			name:          "rejected content seen again before its retry: held, the retry stays when it was",
			retryInterval: 5 * time.Second,
			retries:       -1,
			changes:       ms(1000, 7000),
			end: func(n, _ int, _, retry bool) (result, error) {
				switch {
				case !retry && n > 0:
					return resultHeld, nil // The same content announced again.
				case n < 4:
					return resultRejected, errors.New("rejected")
				}
				return resultReloaded, nil
			},
			// 0 rejected; 1000 held; 5000 the retry, rejected (drive
			// counts each change as new input: its backoff starts
			// again); 7000 held; 10000 the retry, accepted.
			want: ms(0, 1000, 5000, 7000, 10000),
		},
		{
			name:          "a change seen during a failed request waits for a quiet window after it: no two requests in the same instant",
			retryInterval: time.Second,
			retries:       -1,
			changes:       ms(1000, 1100),
			end: func(n, _ int, _, _ bool) (result, error) {
				if n == 1 {
					time.Sleep(200 * time.Millisecond) // The request takes its time.
					return resultFailed, errors.New("status 503")
				}
				return resultReloaded, nil
			},
			// Offsets at the end of each apply: 0 reloaded; 1000 to
			// 1200 failed; the change seen at 1100 is applied a
			// window after the failed request, not as it ends.
			want: ms(0, 1200, 1250),
		},
		{
			name: "a half-updated volume: applied as it is once it has looked so for a second",
			end: func(_, _ int, consistent, _ bool) (result, error) {
				if consistent {
					return resultSettling, nil
				}
				return resultReloaded, nil
			},
			want: every(0, 50, 1000),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newSchedule(Options{
					QuietWindow:   cmp.Or(tc.quietWindow, 50*time.Millisecond),
					DelayInterval: tc.delay,
					RetryInterval: tc.retryInterval,
					Retries:       tc.retries,
				})
				defer s.stop()
				s.randN = noJitter
				require.Equal(t, tc.want, drive(s, tc.changes, tc.end))
			})
		})
	}
}

func TestScheduleSafetyTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSchedule(Options{QuietWindow: DefaultQuietWindow, RetryInterval: time.Second, Retries: -1})
		defer s.stop()
		s.randN = noJitter
		start := time.Now()
		require.Equal(t, start, s.due, "the first apply is due at once")
		<-s.C()
		s.applying()
		s.applied(1, resultReloaded)
		require.Zero(t, s.due)

		time.Sleep(time.Minute) // Fake time: the bubble's clock jumps.
		s.tick()
		require.Equal(t, start.Add(time.Minute), s.due, "nothing due: the tick applies at once")
		<-s.C()
		s.applying()
		s.applyFailed(1, resultUnchanged)
		require.Equal(t, start.Add(time.Minute+time.Second), s.due)
		s.tick()
		require.Equal(t, start.Add(time.Minute+time.Second), s.due, "a retry due: the tick changes nothing")
	})
}

func TestApplyAt(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	at := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		name             string
		delay            time.Duration
		now, first, wEnd time.Time
		settling         bool
		want             time.Time
	}{
		{"first change after a quiet period", 0, at(0), at(0), time.Time{}, false, at(0)},
		{"change within the window", 0, at(50), at(0), at(100), false, at(150)},
		{"next step of a kubelet update", 0, at(50), at(0), at(100), true, at(50)},
		{"stream: the window is pushed forward", 0, at(800), at(0), at(850), false, at(900)},
		{"stream: bounded 1 s after the first change", 0, at(950), at(0), at(1000), false, at(1000)},
		{"stream: bound already passed", 0, at(1200), at(0), at(1250), false, at(1000)},
		{"delay interval", 300 * time.Millisecond, at(0), at(0), time.Time{}, false, at(300)},
		{"delay interval: bounded by ten windows", 300 * time.Millisecond, at(900), at(0), at(950), false, at(1000)},
		{"long delay interval: bounded by twice itself", 10 * time.Second, at(15000), at(0), at(15050), false, at(20000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &schedule{quietWindow: DefaultQuietWindow, delay: tc.delay, pending: tc.first, windowEnd: tc.wEnd}
			if tc.settling {
				s.settling = tc.first
			}
			require.Equal(t, tc.want, s.applyAt(tc.now))
		})
	}
}

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		name    string
		first   time.Duration
		attempt int
		want    time.Duration // without jitter
	}{
		{"first retry", 5 * time.Second, 0, 5 * time.Second},
		{"doubles", 5 * time.Second, 1, 10 * time.Second},
		{"doubles again", 5 * time.Second, 3, 40 * time.Second},
		{"capped", 5 * time.Second, 5, 2 * time.Minute},
		{"capped for good", 5 * time.Second, 1 << 30, 2 * time.Minute},
		{"first at the cap", 2 * time.Minute, 1, 2 * time.Minute},
		{"first above the cap", 5 * time.Minute, 3, 5 * time.Minute},
		{"short", 20 * time.Millisecond, 2, 80 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, j := range []struct {
				name  string
				randN func(n int64) int64
				want  time.Duration
			}{
				{"lowest", func(int64) int64 { return 0 }, tc.want - tc.want/5},
				{"middle", noJitter, tc.want},
				{"highest", func(n int64) int64 { return n - 1 }, tc.want + tc.want/5},
			} {
				var asked int64
				got := backoff(tc.first, tc.attempt, func(n int64) int64 { asked = n; return j.randN(n) })
				require.Equal(t, j.want, got, j.name)
				require.Equal(t, int64(tc.want/5*2+1), asked, "%s: the jitter's range", j.name)
			}
		})
	}
}
