package prometheus

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podreload/podreload/api/v1alpha1"
)

// The rule files of a server in prometheus-operator's layout are what
// prometheus-operator writes (pkg/operator/rules.go, server/rules.go):
// plain YAML in the data of ConfigMaps prometheus-<name>-rulefiles-<i>
// labelled prometheus-name=<name>, so that the pods of either side read
// them during a roll and prometheus-operator, after a hand-back, finds
// them and deletes only those it does not want.

const (
	// labelPrometheusName marks the rule file ConfigMaps of a Prometheus
	// (pkg/prometheus/common.go LabelPrometheusName).
	labelPrometheusName = "prometheus-name"
	// operatorRuleVolumes is the least number of rule ConfigMaps a pod of
	// prometheus-operator mounts, and its configuration names
	// (server/rules.go AppendConfigMapNames).
	operatorRuleVolumes = 3
)

// ruleFilesLabels select the rule file ConfigMaps of server: the
// reloaders' (API source) and the controller's.
func ruleFilesLabels(server *v1alpha1.PrometheusServer) map[string]string {
	if operatorLayout(server) {
		return map[string]string{labelPrometheusName: server.Name}
	}
	return map[string]string{LabelRuleFiles: server.Name}
}

// plainRuleShard is the i-th rule file ConfigMap of server in
// prometheus-operator's layout, empty.
func plainRuleShard(server *v1alpha1.PrometheusServer, i int) *corev1.ConfigMap {
	l := operatorObjectLabels()
	maps.Copy(l, ruleFilesLabels(server))
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: ruleShardName(server, i), Namespace: server.Namespace, Labels: l},
		Data:       map[string]string{},
	}
}

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
// rule file ConfigMaps of server as prometheus-operator does
// (makeConfigMapsFromRules): in name order, into the last ConfigMap while
// its values stay within maxShardBytes, else into a new one. There is
// always one ConfigMap, empty when there is no file.
func packPlainShards(server *v1alpha1.PrometheusServer, files []ruleResult) []*corev1.ConfigMap {
	files = slices.SortedFunc(slices.Values(files), func(a, b ruleResult) int { return strings.Compare(a.name, b.name) })
	shards := []*corev1.ConfigMap{plainRuleShard(server, 0)}
	used := 0
	for _, f := range files {
		if used+len(f.plain) > maxShardBytes {
			shards = append(shards, plainRuleShard(server, len(shards)))
			used = 0
		}
		shards[len(shards)-1].Data[f.name] = f.plain
		used += len(f.plain)
	}
	return shards
}

// operatorRuleFilesGlobs are the rule_files entries of a server in
// prometheus-operator's layout, for shards rule file ConfigMaps: none
// without spec.ruleSelector, else one per ConfigMap name the pods mount,
// at least operatorRuleVolumes, absolute, as prometheus-operator writes
// them (promcfg.go appendRuleFiles), so that the pods of either side find
// the files. The reloaders write each ConfigMap into the directory of its
// name under rulesMountPath, where prometheus-operator's pods mount it.
func operatorRuleFilesGlobs(server *v1alpha1.PrometheusServer, shards int) []string {
	if server.Spec.RuleSelector == nil {
		return nil
	}
	n := max(operatorRuleVolumes, shards)
	if !apiSource(server) {
		n = ruleVolumes(shards) // The volumes the pods mount.
	}
	globs := make([]string, n)
	for i := range globs {
		globs[i] = ruleDir(server, i) + "/*.yaml"
	}
	return globs
}
