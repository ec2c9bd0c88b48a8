// Package prometheusagent is prometheus-operator's PrometheusAgent kind
// (monitoring.coreos.com/v1alpha1), taken over (docs/takeover.md): an agent
// handed to the controller's id is converted into a PrometheusServer in
// prometheus-operator's layout of an agent (promserver's
// OperatorsAgentLayout: prom-agent-<name>, the agent's flags, its
// configuration as prometheus-operator's GenerateAgentConfiguration writes
// it) and rendered by package promserver into the objects
// prometheus-operator wrote for it, adopted; its lifecycle and status are
// package promoperator's. Setup sets it up with the controller's manager
// (package controller's table of kinds); Checker is its `controller
// takeover-check`. An agent in DaemonSet mode is rendered as one
// DaemonSet (promserver's OperatorsAgentDaemonSetLayout); the fields
// prometheus-operator refuses in that mode make its spec invalid.
//
// Where things are:
//
//	convert.go       an agent as a PrometheusServer (FromAgent)
//	daemonset.go     what prometheus-operator refuses in DaemonSet mode
//	fields.go        each field of a PrometheusAgent spec: mapped, ignored, refused
//	kind.go          Setup, Checker; the kind as a promoperator.Kind
package prometheusagent
