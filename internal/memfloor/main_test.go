package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestLinksWhatTheSidecarsLink checks that memfloor's floor covers every
// package the sidecars link apart from podreload's own.
func TestLinksWhatTheSidecarsLink(t *testing.T) {
	deps := func(pkgs ...string) []string {
		t.Helper()
		out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).Output()
		if err != nil {
			t.Fatalf("go list -deps %v: %v", pkgs, err)
		}
		return strings.Fields(string(out))
	}
	floor := deps(".")
	for _, p := range deps("../../cmd/config-reloader", "../../cmd/rules-reloader") {
		if !strings.HasPrefix(p, "github.com/podreload/") && !slices.Contains(floor, p) {
			t.Errorf("memfloor does not link %s: import it", p)
		}
	}
}
