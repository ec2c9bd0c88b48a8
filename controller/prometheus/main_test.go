package prometheus

import (
	"flag"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Read through flag.Lookup by goldenfile, so that no package variable holds it.
	flag.Bool("update", false, "rewrite the golden files (the field matrix of docs/prometheus-operator.md)")
	goleak.VerifyTestMain(m,
		// controller-runtime's metadata informers wrap their watches with
		// apimachinery's watch.Filter, whose goroutine can stay blocked
		// sending an event nobody reads once the informer stopped.
		goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop"))
}
