package promserver

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
