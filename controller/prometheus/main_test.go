package prometheus

import (
	"flag"
	"testing"

	"go.uber.org/goleak"

	"github.com/podreload/podreload/internal/testenv/controlplane"
)

func TestMain(m *testing.M) {
	// Read through flag.Lookup by goldenfile, so that no package variable holds it.
	flag.Bool("update", false, "rewrite the golden files (the field matrix of docs/prometheus-operator.md)")
	goleak.VerifyTestMain(m, controlplane.InformerLeaks()...)
}
