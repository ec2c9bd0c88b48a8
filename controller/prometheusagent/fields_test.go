package prometheusagent

import (
	"reflect"
	"strings"
	"testing"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/goldenfile"
)

// TestFieldsCoverTheSpec fails when a field of the pinned
// PrometheusAgentSpec has no row, or a row names no field.
func TestFieldsCoverTheSpec(t *testing.T) {
	require.NoError(t, takeover.CheckTable(reflect.TypeFor[monitoringv1alpha1.PrometheusAgentSpec](), fields()))
}

// TestFieldMatrix checks docs/prometheus-operator-agent.md is the
// rendering of the table (-update rewrites it).
func TestFieldMatrix(t *testing.T) {
	goldenfile.Check(t, "../../docs/prometheus-operator-agent.md", []byte(fieldMatrix()))
}

// fieldMatrix renders docs/prometheus-operator-agent.md from fields.
func fieldMatrix() string {
	var b strings.Builder
	b.WriteString(`# prometheus-operator's PrometheusAgent fields in a takeover

<!-- Generated from controller/prometheusagent/fields.go by
     go test ./controller/prometheusagent/ -run TestFieldMatrix -update -->

What podreload does with each field of a ` + "`monitoring.coreos.com/v1alpha1` `PrometheusAgent`" + `
(prometheus-operator's types at v0.95.2, go.mod) when it takes the object
over ([takeover.md](takeover.md)). An agent renders as prometheus-operator's
agent controller renders it: the StatefulSets ` + "`prom-agent-<name>`" + ` (and
` + "`-shard-<n>`" + `) under the governing Service ` + "`prometheus-agent-operated`" + `,
Prometheus in agent mode (` + "`--agent`, `--storage.agent.path`" + `), and the
configuration prometheus-operator's GenerateAgentConfiguration writes (no
rules, no alerting). The fields the agent shares with a ` + "`Prometheus`" + ` (its
CommonPrometheusFields) mean the same as in
[prometheus-operator.md](prometheus-operator.md):

` + takeover.Legend + `
A path with ` + "`[]`" + ` classifies the items of a list field by field; a row
covers the field and everything under it. A test walks the Go types and
fails when a field has no row. A ` + "`version`" + ` that is not a version is
refused too, as for a Prometheus.

`)
	b.WriteString(takeover.Matrix(fields()))
	return b.String()
}

// TestConvertRefused: DaemonSet mode and a version that is not one are
// refused, by path; StatefulSet mode, set or not, is not.
func TestConvertRefused(t *testing.T) {
	for _, c := range []struct {
		mode    string
		version string
		want    []string
	}{
		{"", "", nil},
		{"StatefulSet", "v3.5", nil},
		{"DaemonSet", "", []string{"mode"}},
		{"DaemonSet", "latest", []string{"mode", "version"}},
	} {
		a := &monitoringv1alpha1.PrometheusAgent{}
		if c.mode != "" {
			a.Spec.Mode = (*monitoringv1alpha1.PrometheusAgentMode)(&c.mode)
		}
		a.Spec.Version = c.version
		_, unsupported := FromAgent(a)
		require.Equal(t, c.want, unsupported, "mode %q version %q", c.mode, c.version)
	}
}

// TestConvertMajorVersion: an agent of a Prometheus other than 2 or 3 is
// refused with its version, as prometheus-operator's generator refuses it.
func TestConvertMajorVersion(t *testing.T) {
	a := &monitoringv1alpha1.PrometheusAgent{}
	a.Spec.Version = "v1.8.2"
	_, unsupported := FromAgent(a)
	require.Equal(t, []string{"spec.version: Prometheus v1.8.2, and prometheus-operator renders Prometheus 2 and 3 only"}, unsupported)
	a.Spec.Version = "v2.32.0"
	_, unsupported = FromAgent(a)
	require.Empty(t, unsupported)
}
