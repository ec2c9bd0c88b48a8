package contract

import (
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGzip(t *testing.T) {
	for name, in := range map[string][]byte{
		"empty":      {},
		"nil":        nil,
		"repetitive": []byte(strings.Repeat("- job_name: serviceMonitor/ns/app/0\n", 1000)),
	} {
		t.Run(name, func(t *testing.T) {
			gz := Gzip(in)
			require.Equal(t, gz, Gzip(in), "the same bytes for the same input")
			require.True(t, bytes.HasPrefix(gz, []byte{0x1f, 0x8b}), "gzip magic bytes")
			zr, err := gzip.NewReader(bytes.NewReader(gz))
			require.NoError(t, err)
			require.Empty(t, zr.Name)
			require.True(t, zr.ModTime.IsZero(), "no time in the header")
			out, err := io.ReadAll(zr)
			require.NoError(t, err)
			require.Equal(t, string(in), string(out))
		})
	}
	big := []byte(strings.Repeat("a", 1<<16))
	require.Less(t, len(Gzip(big)), 1<<8, "the best compression")
}
