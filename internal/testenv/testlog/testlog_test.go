package testlog

import (
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBuffer(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() { fmt.Fprintf(&b, "%d\n", i) })
	}
	wg.Wait()
	require.Len(t, b.String(), 8)
}

// fakeTB records what is written to its output and runs its cleanups
// when told.
type fakeTB struct {
	testing.TB
	out      Buffer
	cleanups []func()
}

func (f *fakeTB) Output() io.Writer { return &f.out }
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }

// end runs the cleanups, last registered first, as testing does.
func (f *fakeTB) end() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

// TestOutput: what is written while the test runs and while its cleanups
// run reaches its output; what is written after is dropped.
func TestOutput(t *testing.T) {
	tb := &fakeTB{TB: t}
	w := Output(tb)
	tb.Cleanup(func() { _, _ = io.WriteString(w, "stopping\n") })
	_, err := io.WriteString(w, "running\n")
	require.NoError(t, err)
	tb.end()
	n, err := io.WriteString(w, "after\n")
	require.NoError(t, err)
	require.Equal(t, 6, n)
	require.Equal(t, "running\nstopping\n", tb.out.String())
}
