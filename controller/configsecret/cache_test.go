package configsecret

import (
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCacheGzip: the same content is compressed once while renders keep
// using it (Rotate), again once a render did not; its SHA-256 is the
// content's; an error when it does not fit the limit; a nil Cache
// compresses every time.
func TestCacheGzip(t *testing.T) {
	var c Cache
	a, b := []byte("global: {}\n"), []byte("scrape_configs: []\n")
	gz, sum, err := c.Gzip(1<<20, a, b)
	require.NoError(t, err)
	require.Equal(t, sha256.Sum256([]byte("global: {}\nscrape_configs: []\n")), sum)
	c.Rotate()
	again, againSum, err := c.Gzip(1<<20, a, b)
	require.NoError(t, err)
	require.Equal(t, sum, againSum)
	require.Same(t, &gz[0], &again[0], "compressed again")
	c.Rotate()
	c.Rotate() // A render that did not use it: dropped.
	third, _, err := c.Gzip(1<<20, a, b)
	require.NoError(t, err)
	require.Equal(t, gz, third)
	require.NotSame(t, &gz[0], &third[0], "kept by a render that did not use it")

	_, _, err = c.Gzip(10, a, b)
	var tooLarge *SizeError
	require.True(t, errors.As(err, &tooLarge), "%v", err)

	var none *Cache
	x, xSum, err := none.Gzip(1<<20, a, b)
	require.NoError(t, err)
	require.Equal(t, sum, xSum)
	y, _, err := none.Gzip(1<<20, a, b)
	require.NoError(t, err)
	require.NotSame(t, &x[0], &y[0])
}
