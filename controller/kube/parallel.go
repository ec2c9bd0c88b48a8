package kube

import (
	"errors"
	"sync"
)

// MaxParallelWrites bounds the objects WriteAll writes at once: one after
// the other, each is a round trip (12 rule ConfigMaps for 1,000
// PrometheusRules, 22 parts of a configuration for the 20,000 endpoints
// of BenchmarkScale, some 150 for jobs that compress like real ones).
const MaxParallelWrites = 8

// WriteAll writes objs at once, MaxParallelWrites at most at a time, with
// write, and returns when all are written, the errors joined.
func WriteAll[T any](objs []T, write func(T) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	sem := make(chan struct{}, MaxParallelWrites)
	for _, o := range objs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := write(o); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
