package amconfig

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// TestOperatorWholeFailures checks the deliberate difference of
// docs/prometheus-operator-alertmanager.md ("one AlertmanagerConfig left
// out where prometheus-operator fails the whole configuration"): for each
// case under testdata/whole-failures, prometheus-operator v0.93.1
// generates no configuration because of one AlertmanagerConfig (bin/opconfig
// exits 1 naming it), while Generate leaves out that one only, with the
// reason given here, and renders the others as prometheus-operator renders
// the case without it.
func TestOperatorWholeFailures(t *testing.T) {
	opconfig, err := toolbin.Path("opconfig")
	require.NoError(t, err)
	want := map[string]struct {
		culprit types.NamespacedName
		reason  string
	}{
		"telegram-empty-token": {
			culprit: types.NamespacedName{Namespace: "team-a", Name: "tg"},
			reason:  `receiver "ops": telegramConfigs[0]: botToken: key "token" of secret team-a/tg is empty`,
		},
	}
	cases, err := filepath.Glob(filepath.Join("testdata", "whole-failures", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, cases, len(want))
	for _, path := range cases {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			require.Contains(t, want, name)
			w := want[name]
			stderr := operatorFails(t, opconfig, path, "prometheus-operator generates a configuration: the case no longer shows a difference")
			require.Contains(t, stderr, "AlertmanagerConfig "+w.culprit.String()+":")

			res, err := Generate(t.Context(), caseInput(t, path))
			require.NoError(t, err)
			require.Equal(t, []LeftOut{{Config: w.culprit, Reason: w.reason}}, res.LeftOut)

			without := withoutConfig(t, path, w.culprit)
			cmd := exec.CommandContext(t.Context(), opconfig, "--alertmanager", without)
			var stderrRest bytes.Buffer
			cmd.Stderr = &stderrRest
			rest, err := cmd.Output()
			require.NoError(t, err, stderrRest.String())
			require.Empty(t, diffConfigs(t, rest, res.Config))
		})
	}
}

// withoutConfig writes the case at path without the document of the
// AlertmanagerConfig c and returns the copy's path.
func withoutConfig(t *testing.T, path string, c types.NamespacedName) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var kept []string
	removed := false
	for _, doc := range strings.Split(string(data), "\n---\n") {
		if strings.Contains(doc, "kind: AlertmanagerConfig\n") &&
			strings.Contains(doc, "\n  name: "+c.Name+"\n  namespace: "+c.Namespace+"\n") {
			removed = true
			continue
		}
		kept = append(kept, doc)
	}
	require.True(t, removed, "%s has no AlertmanagerConfig %s", path, c)
	out := filepath.Join(t.TempDir(), filepath.Base(path))
	require.NoError(t, os.WriteFile(out, []byte(strings.Join(kept, "\n---\n")), 0o600))
	return out
}
