package reloader

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGunzipAllBomb gunzips content over the limit (a gzip bomb) without
// holding it, and tells a trailer that claims too much from a bomb.
func TestGunzipAllBomb(t *testing.T) {
	const limit = 1 << 20
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, err := zw.Write(b)
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		return buf.Bytes()
	}
	bomb := gz(make([]byte, 64<<20))
	lying := gz([]byte("a: 1\n"))
	binary.LittleEndian.PutUint32(lying[len(lying)-4:], 64<<20) // The trailer claims 64 MiB.
	within := gz(make([]byte, limit))

	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := gunzipAll(bomb, limit)
	runtime.ReadMemStats(&after)
	require.EqualError(t, err, "larger than 1 MiB")
	// The gzip reader and the copy's buffer: not the MiB up to the limit.
	t.Logf("a bomb of %d KiB allocated %d KiB", len(bomb)>>10, (after.TotalAlloc-before.TotalAlloc)>>10)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(limit/4), "bytes allocated")

	_, err = gunzipAll(lying, limit)
	require.ErrorIs(t, err, gzip.ErrChecksum)
	b, err := gunzipAll(within, limit)
	require.NoError(t, err)
	require.Len(t, b, limit)
}
