// Package wait waits in tests for a condition, with a deadline: the one
// way tests that drive real processes wait.
package wait

import (
	"testing"
	"time"
)

// Until calls cond every interval until it returns nil, and fails t with
// what and cond's last error after timeout, or when t's context ends.
func Until(t testing.TB, timeout, interval time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not done after %s: %v", what, timeout, err)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: %v", what, t.Context().Err())
		case <-time.After(interval):
		}
	}
}
