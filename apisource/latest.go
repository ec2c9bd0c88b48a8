package apisource

import (
	"context"
	"sync"
	"time"
)

// latestWriter writes values to the API server in the background, the
// latest value winning: set never blocks, only the latest value set waits
// to be written, and a failed write is retried with backoff until it
// succeeds or a newer value replaces it. The Reporter and the StateSecret
// write through one.
type latestWriter[T any] struct {
	// write writes one value; run never calls it twice at once.
	write func(ctx context.Context, v T) error
	// failed logs and counts a failed write, the attempt-th in a row,
	// retried after wait.
	failed func(err error, attempt int, wait time.Duration)

	notify chan struct{}

	mu      sync.Mutex
	pending T
	has     bool // whether pending waits to be written
}

func newLatestWriter[T any](write func(context.Context, T) error, failed func(err error, attempt int, wait time.Duration)) *latestWriter[T] {
	return &latestWriter[T]{write: write, failed: failed, notify: make(chan struct{}, 1)}
}

// set replaces the value waiting to be written with v.
func (w *latestWriter[T]) set(v T) {
	w.mu.Lock()
	w.pending, w.has = v, true
	w.mu.Unlock()
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// take returns the value waiting to be written, if any, and clears it.
func (w *latestWriter[T]) take() (T, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.pending, w.has
	var zero T
	w.pending, w.has = zero, false
	return v, ok
}

// run writes the values set until ctx is done.
func (w *latestWriter[T]) run(ctx context.Context) error {
	var (
		failures int
		retry    <-chan time.Time
	)
	timer := time.NewTimer(0)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.notify:
			if retry != nil {
				continue // The retry writes the latest value.
			}
		case <-retry:
			retry = nil
		}
		next, ok := w.take()
		if !ok {
			continue
		}
		err := w.write(ctx, next)
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
			failures = 0
			continue
		}
		w.mu.Lock()
		if !w.has { // Nothing newer: this one is retried.
			w.pending, w.has = next, true
		}
		w.mu.Unlock()
		failures++
		wait := backoff(failures)
		w.failed(err, failures, wait)
		timer.Reset(wait)
		retry = timer.C
	}
}
