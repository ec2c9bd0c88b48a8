package promfixture

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// ShardRules returns the rule files of a rule file ConfigMap, by name, as
// a config-reloader writes them: each binaryData key X.yaml.gz gunzipped
// into X.yaml. The controller writes no plain data key.
func ShardRules(t testing.TB, cm *corev1.ConfigMap) map[string]string {
	t.Helper()
	require.Empty(t, cm.Data, "%s: plain data keys", cm.Name)
	files := map[string]string{}
	for key, gz := range cm.BinaryData {
		name, ok := strings.CutSuffix(key, ".gz")
		require.True(t, ok, "%s: binaryData key %s not .gz", cm.Name, key)
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		require.NoError(t, err, "%s: %s", cm.Name, key)
		b, err := io.ReadAll(zr)
		require.NoError(t, err, "%s: %s", cm.Name, key)
		files[name] = string(b)
	}
	return files
}

// CheckRules runs the real promtool on every file of shards, gunzipped.
func CheckRules(t testing.TB, shards []*corev1.ConfigMap) {
	t.Helper()
	promtool, err := toolbin.Path("promtool")
	require.NoError(t, err)
	dir := t.TempDir()
	args := []string{"check", "rules"}
	for _, cm := range shards {
		require.NoError(t, os.Mkdir(filepath.Join(dir, cm.Name), 0o755))
		for name, content := range ShardRules(t, cm) {
			path := filepath.Join(dir, cm.Name, name)
			require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
			args = append(args, path)
		}
	}
	if len(args) == 2 {
		return
	}
	out, err := exec.CommandContext(t.Context(), promtool, args...).CombinedOutput()
	require.NoError(t, err, "promtool check rules:\n%s", out)
}

// NoisyRule is a valid PrometheusRule padded with a label of n random
// letters and digits (the same for the same name), which gzip does not
// compress below some 0.75 bytes a letter.
func NoisyRule(name string, n int) *monitoringv1.PrometheusRule {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	rng := rand.New(rand.NewPCG(uint64(crc32.ChecksumIEEE([]byte(name))), 1))
	pad := make([]byte, n)
	for i := range pad {
		pad[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return &monitoringv1.PrometheusRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, UID: types.UID("uid-" + name)},
		Spec: monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{
			Name:  name,
			Rules: []monitoringv1.Rule{{Record: "padded", Expr: intstr.FromString("up == 0"), Labels: map[string]string{"pad": string(pad)}}},
		}}},
	}
}

// BenchRules returns n PrometheusRules spread over 50 namespaces, each of
// one group of 5 recording and 5 alerting rules with the usual labels and
// annotations.
func BenchRules(n int) []*monitoringv1.PrometheusRule {
	rules := make([]*monitoringv1.PrometheusRule, 0, n)
	for i := range n {
		r := &monitoringv1.PrometheusRule{ObjectMeta: metav1.ObjectMeta{
			Namespace:       fmt.Sprintf("team-%02d", i%50),
			Name:            fmt.Sprintf("rules-%04d", i),
			UID:             types.UID(fmt.Sprintf("uid-%04d", i)),
			ResourceVersion: "1",
		}}
		g := monitoringv1.RuleGroup{Name: "service.rules", Interval: ptr.To(monitoringv1.Duration("1m"))}
		for j := range 5 {
			g.Rules = append(g.Rules,
				monitoringv1.Rule{
					Record: fmt.Sprintf("job:http_requests_%d:rate5m", j),
					Expr:   intstr.FromString(fmt.Sprintf(`sum by (job, code) (rate(http_requests_total{service="svc-%d", handler!~"/health.*"}[5m]))`, i)),
				},
				monitoringv1.Rule{
					Alert:  fmt.Sprintf("HighErrorRate%d", j),
					Expr:   intstr.FromString(fmt.Sprintf(`sum(rate(http_requests_total{service="svc-%d",code=~"5.."}[5m])) / sum(rate(http_requests_total{service="svc-%d"}[5m])) > 0.0%d`, i, i, j+1)),
					For:    ptr.To(monitoringv1.Duration("10m")),
					Labels: map[string]string{"severity": "warning", "team": fmt.Sprintf("team-%02d", i%50)},
					Annotations: map[string]string{
						"summary":     "{{ $labels.job }} returns errors for {{ $value | humanizePercentage }} of requests",
						"runbook_url": "https://runbooks.example.com/http#high-error-rate",
					},
				},
			)
		}
		r.Spec.Groups = []monitoringv1.RuleGroup{g}
		rules = append(rules, r)
	}
	return rules
}
