package rulefiles

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestEnforceRules checks that every selector of every rule's expression
// gets the matcher tenant="team-a", in place of the rule's own, that
// every rule gets the label, and that the input is left untouched.
func TestEnforceRules(t *testing.T) {
	exprs := []string{
		`up == 0`,
		`sum by (job) (rate(http_requests_total{tenant="team-b",code=~"5.."}[5m])) / on (job) sum by (job) (rate(http_requests_total[5m] offset 1h)) > 0.1`,
		`absent_over_time(heartbeat{tenant=~".+"}[10m:1m])`,
		`vector(1)`,
	}
	r := &monitoringv1.PrometheusRule{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "alerts"}}
	g := monitoringv1.RuleGroup{Name: "g"}
	for i, e := range exprs {
		g.Rules = append(g.Rules, monitoringv1.Rule{Alert: "A" + string(rune('0'+i)), Expr: intstr.FromString(e), Labels: map[string]string{"tenant": "team-b", "severity": "page"}})
	}
	g.Rules = append(g.Rules, monitoringv1.Rule{Record: "job:up:sum", Expr: intstr.FromString("sum by (job) (up)")})
	r.Spec.Groups = []monitoringv1.RuleGroup{g}
	before := r.DeepCopy()

	got := enforceRules(r, "tenant")
	require.Equal(t, before, r, "the input is untouched")

	selectors := 0
	for _, rule := range got.Spec.Groups[0].Rules {
		require.Equal(t, "team-a", rule.Labels["tenant"], rule.Expr.String())
		expr, err := parser.ParseExpr(rule.Expr.String())
		require.NoError(t, err)
		parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
			if vs, ok := node.(*parser.VectorSelector); ok {
				selectors++
				var on []*labels.Matcher
				for _, m := range vs.LabelMatchers {
					if m.Name == "tenant" {
						on = append(on, m)
					}
				}
				require.Len(t, on, 1, vs.String())
				require.Equal(t, labels.MatchEqual, on[0].Type, vs.String())
				require.Equal(t, "team-a", on[0].Value, vs.String())
			}
			return nil
		})
	}
	require.Equal(t, 5, selectors, "up, http_requests_total twice, heartbeat, up")
	require.Equal(t, "page", got.Spec.Groups[0].Rules[0].Labels["severity"])

	require.Same(t, r, enforceRules(r, ""))
}
