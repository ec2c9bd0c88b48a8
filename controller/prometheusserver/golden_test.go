package prometheusserver

import (
	"flag"
	"testing"

	"go.uber.org/goleak"

	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/goldenfile"
)

func TestMain(m *testing.M) {
	// Read through flag.Lookup by golden, so that no package variable holds it.
	flag.Bool("update", false, "rewrite the golden files in testdata/")
	goleak.VerifyTestMain(m, controlplane.InformerLeaks()...)
}

// golden compares got with the file path, or rewrites the file with -update.
func golden(t *testing.T, path string, got []byte) { goldenfile.Check(t, path, got) }
