package prometheusserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/internal/testenv/promfixture"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// mixinDir holds the alerts users install with `kubectl apply -k`.
const mixinDir = "../../deploy/mixin"

// runbookURL is where each alert's runbook_url points, followed by the
// anchor of its section.
const runbookURL = "https://github.com/podreload/podreload/blob/main/docs/runbooks.md#"

// TestMixinAlerts renders the mixin's PrometheusRule as the controller
// renders any PrometheusRule a server selects, with its rule checker, and
// runs the real promtool on the rule file: `check rules`, then `test
// rules` with the unit tests of deploy/mixin/testdata, which make each
// alert fire and not fire, and fail without the agents' selector.
func TestMixinAlerts(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(mixinDir, "alerts.yaml"))
	require.NoError(t, err)
	var r monitoringv1.PrometheusRule
	require.NoError(t, yaml.UnmarshalStrict(b, &r))
	tests, err := os.ReadFile(filepath.Join(mixinDir, "testdata", "alerts_test.yaml"))
	require.NoError(t, err)
	for _, args := range [][]string{
		{"check", "rules", "--lint=all", "--lint-fatal", "alerts.yaml"},
		{"test", "rules", "alerts_test.yaml"},
	} {
		out, err := promtool(t, &r, tests, args...)
		require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
	}

	// The server in the unit tests has the agents' trouble: without the
	// selector of agents, each of their alerts fires for it too.
	t.Run("the agents' alerts fire for agents alone", func(t *testing.T) {
		var n int
		for gi, g := range r.Spec.Groups {
			for ri, rule := range g.Rules {
				expr := rule.Expr.String()
				if !strings.Contains(expr, agentSelector) {
					continue
				}
				n++
				broken := r.DeepCopy()
				broken.Spec.Groups[gi].Rules[ri].Expr = intstr.FromString(strings.Replace(expr, agentSelector, "", 1))
				out, err := promtool(t, broken, tests, "test", "rules", "alerts_test.yaml")
				require.Error(t, err, "%s without %q: the unit tests pass", rule.Alert, agentSelector)
				require.Contains(t, string(out), rule.Alert, "%s without %q", rule.Alert, agentSelector)
			}
		}
		require.Equal(t, 3, n, "the agents' alerts")
	})

	t.Run("each alert fires and does not fire in the unit tests", func(t *testing.T) {
		var unit struct {
			Tests []struct {
				AlertRuleTest []struct {
					Alertname string `json:"alertname"`
					ExpAlerts []any  `json:"exp_alerts"`
				} `json:"alert_rule_test"`
			} `json:"tests"`
		}
		require.NoError(t, yaml.Unmarshal(tests, &unit))
		fires, quiet := map[string]bool{}, map[string]bool{}
		for _, tc := range unit.Tests {
			for _, a := range tc.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					fires[a.Alertname] = true
				} else {
					quiet[a.Alertname] = true
				}
			}
		}
		for _, a := range alerts(&r) {
			require.True(t, fires[a.Alert], "no unit test where %s fires", a.Alert)
			require.True(t, quiet[a.Alert], "no unit test where %s does not fire", a.Alert)
		}
	})

	t.Run("each alert has a severity, a summary, a description and a runbook", func(t *testing.T) {
		runbooks, err := os.ReadFile(filepath.Join("..", "..", "docs", "runbooks.md"))
		require.NoError(t, err)
		sections := map[string]bool{}
		for _, m := range regexp.MustCompile(`(?m)^## (\S+)$`).FindAllStringSubmatch(string(runbooks), -1) {
			sections[strings.ToLower(m[1])] = true
		}
		for _, a := range alerts(&r) {
			require.Contains(t, []string{"warning", "critical"}, a.Labels["severity"], a.Alert)
			require.NotEmpty(t, a.Annotations["summary"], a.Alert)
			require.NotEmpty(t, a.Annotations["description"], a.Alert)
			anchor, ok := strings.CutPrefix(a.Annotations["runbook_url"], runbookURL)
			require.True(t, ok, "%s: runbook_url %q is not in docs/runbooks.md", a.Alert, a.Annotations["runbook_url"])
			require.Equal(t, strings.ToLower(a.Alert), anchor, a.Alert)
			require.True(t, sections[anchor], "%s: docs/runbooks.md has no section ## %s", a.Alert, a.Alert)
		}
	})

	// What kube-prometheus ships (the prometheus-operator mixin): the same
	// name, expression, duration and labels, so that our sidecars page the
	// way prometheus-config-reloader did.
	t.Run("ConfigReloaderSidecarErrors as upstream", func(t *testing.T) {
		for _, a := range alerts(&r) {
			if a.Alert != "ConfigReloaderSidecarErrors" {
				continue
			}
			require.Equal(t, `max_over_time(reloader_last_reload_successful{namespace=~".+"}[5m]) == 0`, strings.TrimSpace(a.Expr.String()))
			require.Equal(t, monitoringv1.Duration("10m"), *a.For)
			require.Equal(t, map[string]string{"severity": "warning"}, a.Labels)
			require.Equal(t, "config-reloader sidecar has not had a successful reload for 10m", a.Annotations["summary"])
			return
		}
		t.Fatal("no alert ConfigReloaderSidecarErrors")
	})
}

// agentSelector ends the expression of each alert on the agents: it keeps
// the series of the targets that export prometheus_agent_active_series,
// which only Prometheus in agent mode does.
const agentSelector = "\nand on (job, instance) prometheus_agent_active_series"

// promtool renders r as the controller renders any PrometheusRule a server
// selects, with its rule checker, writes the rule file as alerts.yaml and
// tests as alerts_test.yaml, and runs the real promtool with args there.
func promtool(t *testing.T, r *monitoringv1.PrometheusRule, tests []byte, args ...string) ([]byte, error) {
	t.Helper()
	shards, rejected := new(promserver.RuleCache).Render(promserver.OwnTarget(testServer()), []*monitoringv1.PrometheusRule{r})
	require.Empty(t, rejected, "the controller's rule checker")
	require.Len(t, shards, 1)
	files := promfixture.ShardRules(t, shards[0])
	require.Len(t, files, 1)
	var file string
	for _, f := range files {
		file = f
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "alerts.yaml"), []byte(file), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o644))
	bin, err := toolbin.Path("promtool")
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}

// alerts returns the alerting rules of r.
func alerts(r *monitoringv1.PrometheusRule) []monitoringv1.Rule {
	var out []monitoringv1.Rule
	for _, g := range r.Spec.Groups {
		for _, rule := range g.Rules {
			if rule.Alert != "" {
				out = append(out, rule)
			}
		}
	}
	return out
}
