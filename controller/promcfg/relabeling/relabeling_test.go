package relabeling

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	yaml "go.yaml.in/yaml/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRule(t *testing.T) {
	var ch Checker
	out, err := ch.Rule("spec.relabelings[0]", &monitoringv1.RelabelConfig{
		SourceLabels: []monitoringv1.LabelName{"__meta_kubernetes_pod_name"}, TargetLabel: "pod", Action: "Replace",
	})
	require.NoError(t, err)
	require.Equal(t, yaml.MapSlice{
		{Key: "source_labels", Value: []string{"__meta_kubernetes_pod_name"}},
		{Key: "target_label", Value: "pod"},
		{Key: "action", Value: "replace"},
	}, out)

	for _, c := range []struct {
		rc   monitoringv1.RelabelConfig
		want string
	}{
		{monitoringv1.RelabelConfig{Action: "rename"}, `p.action: unknown action "rename"`},
		{monitoringv1.RelabelConfig{Regex: "(", TargetLabel: "x"}, "p.regex: error parsing regexp: missing closing ): `^(?s:()$`"},
		{monitoringv1.RelabelConfig{Action: "hashmod", TargetLabel: "x"}, "p: relabel configuration for hashmod requires non-zero modulus"},
		{monitoringv1.RelabelConfig{Modulus: -1}, "p.modulus: -1 is negative"},
	} {
		_, err := ch.Rule("p", &c.rc)
		require.EqualError(t, err, c.want)
	}
}

// A regular expression is compiled once, its error too.
func TestRegexpOnce(t *testing.T) {
	var ch Checker
	_, err1 := ch.Regexp("(")
	_, err2 := ch.Regexp("(")
	require.Error(t, err1)
	require.Same(t, err1, err2)
	require.Len(t, ch.regexps, 1)
}

func TestSelector(t *testing.T) {
	got := Selector(&metav1.LabelSelector{
		MatchLabels:      map[string]string{"app.kubernetes.io/name": "x"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpDoesNotExist}},
	}, "__meta_kubernetes_service")
	require.Equal(t, []yaml.MapSlice{
		Keep([]string{"__meta_kubernetes_service_label_app_kubernetes_io_name", "__meta_kubernetes_service_labelpresent_app_kubernetes_io_name"}, "(x);true"),
		Drop([]string{"__meta_kubernetes_service_labelpresent_tier"}, "true"),
	}, got)
}

func TestAppendSharding(t *testing.T) {
	require.Empty(t, AppendSharding(nil, 1, "__address__"), "one shard keeps every target")
	rs := AppendSharding(nil, 3, "__param_target")
	require.Len(t, rs, 3)
	require.Equal(t, []string{"__param_target", "__tmp_hash"}, rs[0][0].Value)
	require.Equal(t, int64(3), rs[1][2].Value)
	require.Equal(t, "$(SHARD);|.+;.+", rs[2][1].Value)
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
