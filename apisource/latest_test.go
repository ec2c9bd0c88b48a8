package apisource

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// The latest value wins: set never waits for a write, a value replaced
// before its write is never written, and a failed write is told and
// retried after the backoff, with the value set meanwhile if any.
func TestLatestWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls, results := make(chan int), make(chan error)
		var (
			mu       sync.Mutex
			failures []string        // "attempt: err"
			waits    []time.Duration // the backoff of each failure
		)
		w := newLatestWriter(
			func(_ context.Context, v int) error {
				calls <- v
				return <-results
			},
			func(err error, attempt int, wait time.Duration) {
				mu.Lock()
				defer mu.Unlock()
				failures = append(failures, fmt.Sprintf("%d: %v", attempt, err))
				waits = append(waits, wait)
			})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- w.run(ctx) }()
		noWrite := func(why string) {
			t.Helper()
			synctest.Wait()
			select {
			case v := <-calls:
				t.Fatalf("wrote %d %s", v, why)
			default:
			}
		}
		// retried waits for the write of want after the n-th failure, and
		// checks it came after the backoff told, within 20% of step.
		retried := func(want, n int, failedAt time.Time, step time.Duration) {
			t.Helper()
			require.Equal(t, want, <-calls)
			elapsed := time.Since(failedAt)
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, waits, n)
			require.Equal(t, waits[n-1], elapsed, "the retry comes after the wait told")
			require.True(t, elapsed >= step*4/5 && elapsed <= step*6/5, "retry %d after %s, want %s ± 20%%", n, elapsed, step)
		}

		w.set(1)
		require.Equal(t, 1, <-calls)
		w.set(2) // While 1 is written: neither waits.
		w.set(3)
		results <- nil
		require.Equal(t, 3, <-calls, "the latest value, 2 never written")

		w.set(4) // While 3 is written, and fails.
		failedAt := time.Now()
		results <- errors.New("etcd down")
		noWrite("before the retry")
		retried(4, 1, failedAt, firstRetry) // The value set during the write, not 3.

		failedAt = time.Now()
		results <- errors.New("etcd still down")
		noWrite("before the retry")
		w.set(5)
		noWrite("before the retry")
		retried(5, 2, failedAt, 2*firstRetry) // The value set during the backoff.

		failedAt = time.Now()
		results <- errors.New("etcd down for good")
		retried(5, 3, failedAt, 4*firstRetry) // Nothing newer: the same value.
		results <- nil
		noWrite("with nothing set")
		mu.Lock()
		require.Equal(t, []string{"1: etcd down", "2: etcd still down", "3: etcd down for good"}, failures)
		mu.Unlock()

		// After a success, the backoff starts again from its first step;
		// a write that ends with ctx is neither told nor retried.
		w.set(6)
		require.Equal(t, 6, <-calls)
		failedAt = time.Now()
		results <- errors.New("etcd down again")
		retried(6, 4, failedAt, firstRetry)
		cancel()
		results <- context.Canceled
		require.NoError(t, <-done)
		mu.Lock()
		require.Len(t, failures, 4)
		mu.Unlock()
	})
}
