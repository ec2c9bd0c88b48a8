package rulefiles

import (
	"fmt"
	"slices"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
)

// The rule files of a server in prometheus-operator's layout are what
// prometheus-operator writes (pkg/operator/rules.go, server/rules.go):
// plain YAML in the data of its ConfigMaps, so that the pods of either
// side read them during a roll.

// plainRuleResult is the file of r, content, as prometheus-operator stores
// it: plain, under <namespace>-<name>-<uid>.yaml; or why r has none.
func plainRuleResult(r *monitoringv1.PrometheusRule, content string) ruleResult {
	name := fmt.Sprintf("%s-%s-%s.yaml", r.Namespace, r.Name, r.UID)
	switch {
	case len(content) > maxShardBytes:
		return ruleResult{reason: fmt.Sprintf("rule file is %d bytes, more than the %d bytes a ConfigMap shard holds", len(content), maxShardBytes)}
	case len(name) > maxKeyLength:
		return ruleResult{reason: fmt.Sprintf("rule file name %s is %d characters, more than the %d of a ConfigMap key", name, len(name), maxKeyLength)}
	}
	return ruleResult{name: name, plain: content}
}

// packPlainShards places files, plain and each at most maxShardBytes, into
// the rule file ConfigMaps s names as prometheus-operator does
// (makeConfigMapsFromRules): in name order, into the last ConfigMap while
// its values stay within maxShardBytes, else into a new one. There is
// always one ConfigMap, empty when there is no file.
func packPlainShards(s Shards, files []ruleResult) []*corev1.ConfigMap {
	files = slices.SortedFunc(slices.Values(files), func(a, b ruleResult) int { return strings.Compare(a.name, b.name) })
	shards := []*corev1.ConfigMap{s.ConfigMap(0)}
	used := 0
	for _, f := range files {
		if used+len(f.plain) > maxShardBytes {
			shards = append(shards, s.ConfigMap(len(shards)))
			used = 0
		}
		shards[len(shards)-1].Data[f.name] = f.plain
		used += len(f.plain)
	}
	return shards
}
