package promserver

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
func ruleFilesLabels(server Target) map[string]string {
	if server.Layout.Operator() {
		return map[string]string{labelPrometheusName: server.Name}
	}
	return map[string]string{LabelRuleFiles: server.Name}
}

// operatorRuleFilesGlobs are the rule_files entries of a server in
// prometheus-operator's layout, for shards rule file ConfigMaps: none
// without spec.ruleSelector, else one per ConfigMap name the pods mount,
// at least operatorRuleVolumes, absolute, as prometheus-operator writes
// them (promcfg.go appendRuleFiles), so that the pods of either side find
// the files. The reloaders write each ConfigMap into the directory of its
// name under rulesMountPath, where prometheus-operator's pods mount it.
func operatorRuleFilesGlobs(server Target, shards int) []string {
	if server.Spec.RuleSelector == nil {
		return nil
	}
	// With the volume source too (automountServiceAccountToken false):
	// the pods mount RuleVolumes(shards) of them, at least as many.
	n := max(operatorRuleVolumes, shards)
	globs := make([]string, n)
	for i := range globs {
		globs[i] = ruleDir(server, i) + "/*.yaml"
	}
	return globs
}
