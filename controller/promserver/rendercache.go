package promserver

import (
	"maps"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podreload/podreload/controller/configsecret"
	"github.com/podreload/podreload/controller/promcfg"
	"github.com/podreload/podreload/controller/rulefiles"
)

const (
	// LabelRuleFiles marks the rule file ConfigMaps of a server; its value is
	// the server name.
	LabelRuleFiles = "podreload.dev/rulefiles"
	// KindPrometheusRule is the Kind of rejected PrometheusRules.
	KindPrometheusRule = "PrometheusRule"
)

// RuleCache is what a PrometheusServer's renders keep from one to the
// next, so give each its own: its rule files (rulefiles.Cache), the
// gzipped configuration of the last render and its gzipped parts when it
// was split (configsecret.Cache), and the rule ConfigMaps last written
// (rulefiles.Written), which a render holding the rules' changes back
// keeps. The zero value is ready; it is safe for concurrent use.
type RuleCache struct {
	rules   rulefiles.Cache
	parts   configsecret.Cache
	written rulefiles.Written[rulesWrittenFor]
}

// rulesWrittenFor is the server, and the version of its spec, that rule
// ConfigMaps were written for.
type rulesWrittenFor struct {
	uid        types.UID
	generation int64
	layout     bool
}

func writtenFor(server Target) rulesWrittenFor {
	return rulesWrittenFor{uid: server.UID, generation: server.Generation, layout: server.Layout.Operator()}
}

// Render turns the PrometheusRules selected for server into its rule
// file ConfigMaps (rulefiles.Cache.Render, with ruleShards and the label
// spec.enforcedNamespaceLabel sets on each), and returns those left out.
func (c *RuleCache) Render(server Target, rules []*monitoringv1.PrometheusRule) ([]*corev1.ConfigMap, []promcfg.Rejection) {
	in := make([]rulefiles.Rule, len(rules))
	for i, r := range rules {
		in[i].Rule = r
		if r != nil {
			in[i].Enforced = promcfg.EnforcedLabel(&server.Spec, KindPrometheusRule, r.Namespace, r.Name)
		}
	}
	shards, left := c.rules.Render(RuleShards(server), in)
	var rejected []promcfg.Rejection
	for _, l := range left {
		rejected = append(rejected, promcfg.Rejection{Kind: KindPrometheusRule, Namespace: l.Namespace, Name: l.Name, Reason: l.Reason})
	}
	return shards, rejected
}

// RuleShards names and labels the rule file ConfigMaps of server:
// <server>-rulefiles-<i>, or prometheus-<name>-rulefiles-<i> in
// prometheus-operator's layout.
func RuleShards(server Target) rulefiles.Shards {
	l := SelectorLabels(server)
	prefix := server.Name + "-rulefiles-"
	if server.Layout.Operator() {
		l, prefix = operatorObjectLabels(server), operatorName(server)+"-rulefiles-"
	}
	maps.Copy(l, ruleFilesLabels(server))
	return rulefiles.Shards{Namespace: server.Namespace, Prefix: prefix, Labels: l, Plain: server.Layout.Operator(), Volume: !APISource(server)}
}

// RuleShardName is the name of the i-th rule file ConfigMap of server.
func RuleShardName(server Target, i int) string {
	return RuleShards(server).Name(i)
}
