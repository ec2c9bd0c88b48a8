package compat

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
)

func TestSemverTolerant(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"v3.5.0", "3.5.0", true},
		{" v3.5 ", "3.5.0", true},
		{"2", "2.0.0", true},
		{"v2.045.01", "2.45.1", true},
		{"v3.0.0-rc.0", "3.0.0-rc.0", true},
		{"v2.45.0+build", "2.45.0+build", true},
		{"v3.5-rc.0", "3.5-rc.0", false},
		{"latest", "latest", false},
		{"", "", false},
		{"v3.x.0", "3.x.0", false},
	} {
		got, ok := SemverTolerant(tc.in)
		require.Equal(t, tc.ok, ok, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
}

func TestCommandLine(t *testing.T) {
	require.Equal(t, []string{"--web.enable-lifecycle", "--log.level=debug"},
		CommandLine([]monitoringv1.Argument{{Name: "web.enable-lifecycle"}, {Name: "log.level", Value: "debug"}}))
	require.Empty(t, CommandLine(nil))
}
