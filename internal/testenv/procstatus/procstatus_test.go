package procstatus

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMiB(t *testing.T) {
	rss, anon, peak := MiB(t, os.Getpid())
	require.Positive(t, rss)
	require.Positive(t, anon)
	require.LessOrEqual(t, anon, rss)
	require.GreaterOrEqual(t, peak, rss)
}
