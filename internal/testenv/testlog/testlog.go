// Package testlog holds helpers for tests only: a log buffer that
// goroutines write to while the test reads it, and a writer to a test's
// output that outlives no test.
package testlog

import (
	"bytes"
	"io"
	"sync"
	"testing"
)

// Buffer is a bytes.Buffer safe for writers and a reader at once.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Output returns a writer to t's output that drops what is written once t
// has ended and its cleanups have run. Libraries may log from goroutines
// that outlive the call that stopped them (controller-runtime's manager
// stops its warm-up runnables in a goroutine Start does not wait for), and
// a write to the output of a test that has ended is a data race.
func Output(t testing.TB) io.Writer {
	w := &gated{w: t.Output()}
	// Registered first, so that it runs after every other cleanup of t:
	// what is logged while stopping is still shown.
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.w = nil
	})
	return w
}

type gated struct {
	mu sync.Mutex
	w  io.Writer
}

func (g *gated) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.w == nil {
		return len(p), nil
	}
	return g.w.Write(p)
}
