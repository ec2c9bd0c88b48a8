package reloader

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// noJitter makes backoff return its exponential step exactly.
func noJitter(n int64) int64 { return n / 2 }

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
