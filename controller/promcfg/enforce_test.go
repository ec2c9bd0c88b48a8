package promcfg

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/api/v1alpha1"
)

// TestEnforcedLabel checks which objects spec.enforcedNamespaceLabel
// applies to: all but those spec.excludedFromEnforcement spares.
func TestEnforcedLabel(t *testing.T) {
	spec := &v1alpha1.PrometheusServerSpec{
		EnforcedNamespaceLabel:  "tenant",
		ExcludedFromEnforcement: []monitoringv1.ObjectReference{{Resource: "prometheusrules", Namespace: "team-a", Name: "spared"}},
	}
	require.Equal(t, "tenant", EnforcedLabel(spec, "PrometheusRule", "team-a", "alerts"))
	require.Empty(t, EnforcedLabel(spec, "PrometheusRule", "team-a", "spared"), "excluded by name")
	require.Equal(t, "tenant", EnforcedLabel(spec, "PrometheusRule", "team-b", "spared"), "another namespace")
	require.Equal(t, "tenant", EnforcedLabel(spec, "ServiceMonitor", "team-a", "spared"), "another kind")
	require.Empty(t, EnforcedLabel(&v1alpha1.PrometheusServerSpec{}, "PrometheusRule", "team-a", "alerts"), "no label")
}
