package promserver

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

	"github.com/podreload/podreload/api/v1alpha1"
)

// What prometheus-operator's layout of a PrometheusAgent
// (OperatorsAgentLayout) renders differently from a Prometheus's
// (pkg/prometheus/agent/statefulset.go, operator.go at v0.93.1): the
// prefix prom-agent- (pkg/prometheus/common.go Prefix), the application
// name prometheus-agent on every object and pod, no `prometheus` selector
// label, the governing Service prometheus-agent-operated, the mode label
// "agent", and the agent's flags. An agent has no rules, no alerting and
// no retention: its configuration is promcfg.Agent's.

const (
	// agentPrefix starts the names of prometheus-operator's objects for a
	// PrometheusAgent.
	agentPrefix = "prom-agent-"
	// AgentApp is the value of kube.LabelName on the objects and pods of
	// an agent (agent/operator.go applicationNameLabelValue).
	AgentApp = "prometheus-agent"
	// agentGoverningServiceName is the headless Service of every agent of a
	// namespace (agent/statefulset.go governingServiceName).
	agentGoverningServiceName = "prometheus-agent-operated"
)

// AppOf is the value of kube.LabelName on the objects of server.
func AppOf(server Target) string {
	if server.Layout.Agent() {
		return AgentApp
	}
	return App
}

// governingServiceOf is the name of the governing Service of server in
// prometheus-operator's layouts.
func governingServiceOf(server Target) string {
	if server.Layout.Agent() {
		return agentGoverningServiceName
	}
	return governingServiceName
}

// operatorAgentArgs are the flags prometheus-operator sets on an agent, in
// its order (agent/statefulset.go buildAgentArgs): the common ones, agent
// mode (a feature before Prometheus 3), the WAL's path and compression,
// and the web configuration file.
func operatorAgentArgs(spec v1alpha1.PrometheusServerSpec) []monitoringv1.Argument {
	v := operatorVersion(spec)
	args := operatorCommonArgs(spec, v)
	switch v[0] {
	case 2:
		args = append(args, monitoringv1.Argument{Name: "enable-feature", Value: "agent"})
	case 3:
		args = append(args, monitoringv1.Argument{Name: "agent"})
	}
	args = append(args, monitoringv1.Argument{Name: "storage.agent.path", Value: storageMountPath})
	if spec.WALCompression != nil {
		name := "storage.agent.wal-compression"
		if !*spec.WALCompression {
			name = "no-" + name
		}
		args = append(args, monitoringv1.Argument{Name: name})
	}
	if v.AtLeast(2, 24) {
		args = append(args, monitoringv1.Argument{Name: "web.config.file", Value: WebConfigMountPath + "/" + WebConfigSecretKey})
	}
	return args
}
