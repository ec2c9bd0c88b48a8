package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLinksNoSidecarEngine: the controller binary links none of the
// sidecars' engine; what both sides need is in contract/ and internal/.
func TestLinksNoSidecarEngine(t *testing.T) {
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "the go command lists the binary's packages: put the Go toolchain on PATH")
	out, err := exec.CommandContext(t.Context(), goBin, "list", "-deps", ".").Output()
	require.NoError(t, err, "go list -deps")
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/podreload/podreload/controller", "the list is the controller's")
	for _, engine := range []string{
		"github.com/podreload/podreload/reloader",
		"github.com/podreload/podreload/apisource",
		"github.com/podreload/podreload/envsubst",
	} {
		require.NotContains(t, deps, engine, "the controller links %s", engine)
	}
}
