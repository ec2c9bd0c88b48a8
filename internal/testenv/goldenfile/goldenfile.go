// Package goldenfile is for tests only: it compares an output with its
// golden file, or rewrites the file when the test binary runs with
// -update (a flag the package's TestMain defines, so that no package
// variable holds it).
package goldenfile

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Check compares got with the file path, or rewrites the file with
// -update.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run the test with -update to create it")
	require.Equal(t, string(want), string(got), "run the test with -update to accept the change")
}
