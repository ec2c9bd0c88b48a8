package prometheusserver

import (
	"flag"
	"testing"

	"go.uber.org/goleak"

	"github.com/podreload/podreload/internal/testenv/goldenfile"
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
func golden(t *testing.T, path string, got []byte) { goldenfile.Check(t, path, got) }
