package rulefiles

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The label spec.enforcedNamespaceLabel sets on rules, as prometheus-
// operator sets it (pkg/prometheus/promcfg.go and its namespace enforcer).

// enforceRules returns r with spec.enforcedNamespaceLabel enforced, label
// (Rule.Enforced), as prometheus-operator enforces it: a copy whose every
// rule has the label set to r's namespace, and a matcher label="namespace"
// in every selector of its expression, replacing one on the same label.
// An expression that does not parse is left as it is, for the rule checker
// to refuse. With no label, r itself.
func enforceRules(r *monitoringv1.PrometheusRule, label string) *monitoringv1.PrometheusRule {
	if label == "" {
		return r
	}
	r = r.DeepCopy()
	matcher := &labels.Matcher{Name: label, Type: labels.MatchEqual, Value: r.Namespace}
	for gi := range r.Spec.Groups {
		for ri := range r.Spec.Groups[gi].Rules {
			rule := &r.Spec.Groups[gi].Rules[ri]
			if rule.Labels == nil {
				rule.Labels = map[string]string{}
			}
			rule.Labels[label] = r.Namespace
			expr, err := parser.ParseExpr(rule.Expr.String())
			if err != nil {
				continue
			}
			parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
				if vs, ok := node.(*parser.VectorSelector); ok {
					vs.LabelMatchers = withMatcher(vs.LabelMatchers, matcher)
				}
				return nil
			})
			rule.Expr = intstr.FromString(expr.String())
		}
	}
	return r
}

// withMatcher is ms with m in place of the matchers on m's label, or after
// them when there is none.
func withMatcher(ms []*labels.Matcher, m *labels.Matcher) []*labels.Matcher {
	out := make([]*labels.Matcher, 0, len(ms)+1)
	for _, o := range ms {
		if o.Name != m.Name {
			out = append(out, o)
		}
	}
	return append(out, m)
}
