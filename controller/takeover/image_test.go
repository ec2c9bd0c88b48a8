package takeover

import (
	"cmp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCompare: versions ordered as semver orders them.
func TestCompare(t *testing.T) {
	ordered := []string{"0.9.0", "0.28.1", "0.30.0-rc.0", "0.30.0-rc.1", "0.30.0-rc.10", "0.30.0-rc.x", "0.30.0", "0.34.0", "1.0.0"}
	for i, a := range ordered {
		for j, b := range ordered {
			require.Equal(t, cmp.Compare(i, j), Compare(a, b), "%s vs %s", a, b)
		}
	}
	require.Zero(t, Compare("0.34.0+build", "0.34.0"))
}

// TestNotOlder: the default version unless the running image's tag is a
// newer version.
func TestNotOlder(t *testing.T) {
	for _, tc := range []struct{ running, want string }{
		{"", "v0.34.0"},
		{"quay.io/prometheus/alertmanager:v0.33.1", "v0.34.0"},
		{"quay.io/prometheus/alertmanager:v0.34.0", "v0.34.0"},
		{"quay.io/prometheus/alertmanager:v0.35.0", "v0.35.0"},
		{"registry:5000/alertmanager:v0.35.1@sha256:0123", "v0.35.1"},
		{"registry:5000/alertmanager@sha256:0123", "v0.34.0"},
		{"quay.io/prometheus/alertmanager:latest", "v0.34.0"},
		{"quay.io/prometheus/alertmanager:v0.35.0-rc.0", "v0.35.0-rc.0"},
	} {
		require.Equal(t, tc.want, NotOlder("v0.34.0", tc.running), tc.running)
	}
}
