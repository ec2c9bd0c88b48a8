package prometheus

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Read through flag.Lookup by golden, so that no package variable holds it.
	flag.Bool("update", false, "rewrite the golden files in testdata/")
	goleak.VerifyTestMain(m,
		// controller-runtime's metadata informers (the controller watches
		// Secrets' metadata) wrap their watches with apimachinery's
		// watch.Filter, whose goroutine can stay blocked sending an event
		// nobody reads once the informer stopped.
		goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop"))
}

// golden compares got with the file path, or rewrites the file with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./controller/prometheus/ -update to create it")
	require.Equal(t, string(want), string(got), "run go test ./controller/prometheus/ -update to accept the change")
}
