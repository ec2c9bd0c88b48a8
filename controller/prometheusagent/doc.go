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
// takeover-check`. Agents in DaemonSet mode are refused for now.
//
// Where things are:
//
//	convert.go       an agent as a PrometheusServer (FromAgent)
//	fields.go        each field of a PrometheusAgent spec: mapped, ignored, refused
//	kind.go          Setup, Checker; the kind as a promoperator.Kind
package prometheusagent
