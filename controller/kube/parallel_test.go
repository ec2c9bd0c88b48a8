package kube

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
)

// TestWriteAll: MaxParallelWrites objects are written at once, no more,
// then the others; every error is returned.
func TestWriteAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu      sync.Mutex
			started int
			written []int
			release = make(chan struct{})
			objs    = make([]int, 3*MaxParallelWrites)
			err     error
		)
		for i := range objs {
			objs[i] = i
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			err = WriteAll(objs, func(o int) error {
				mu.Lock()
				started++
				mu.Unlock()
				<-release
				mu.Lock()
				written = append(written, o)
				mu.Unlock()
				if o%10 == 0 {
					return errors.New("write " + strconv.Itoa(o))
				}
				return nil
			})
		}()
		synctest.Wait() // Every write started is held, WriteAll waits for a slot.
		mu.Lock()
		require.Equal(t, MaxParallelWrites, started)
		mu.Unlock()
		close(release)
		<-done
		lines := strings.Split(err.Error(), "\n")
		slices.Sort(lines)
		require.Equal(t, []string{"write 0", "write 10", "write 20"}, lines)
		require.ElementsMatch(t, objs, written)
	})
}
