package controller_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPureDeps lists, with go list -deps, every package the pure packages
// depend on, and fails on any of controller-runtime, client-go or the
// controller's packages other than the pure ones (the
// .golangci.yml depguard rule "pure" says the same of their own imports;
// this covers their dependencies too).
func TestPureDeps(t *testing.T) {
	// The controller's packages that import no client: what they render
	// from their inputs can be tested, and reused by any kind, without a
	// cluster.
	pure := []string{"./selector", "./compat", "./promyaml", "./configsecret", "./rulefiles", "./promcfg", "./promcfg/credential", "./promcfg/relabeling", "./promcfg/remote", "./promserver/thanos"}
	args := append([]string{"list", "-deps"}, pure...)
	out, err := exec.CommandContext(t.Context(), "go", args...).Output()
	require.NoError(t, err, "go list -deps")
	allowed := map[string]bool{}
	for _, p := range pure {
		allowed["github.com/podreload/podreload/controller/"+strings.TrimPrefix(p, "./")] = true
	}
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "k8s.io/apimachinery/pkg/apis/meta/v1", "the list holds the dependencies")
	var bad []string
	for _, d := range deps {
		switch {
		case strings.HasPrefix(d, "sigs.k8s.io/controller-runtime"), strings.HasPrefix(d, "k8s.io/client-go"),
			strings.HasPrefix(d, "github.com/podreload/podreload/controller") && !allowed[d]:
			bad = append(bad, d)
		}
	}
	require.Empty(t, bad, "what the pure packages must not depend on")
}
