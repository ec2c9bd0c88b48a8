package promcfg

import (
	"fmt"

	yaml "go.yaml.in/yaml/v2"

	"github.com/podreload/podreload/controller/configsecret"
)

// Agent renders the configuration of a Prometheus agent (prometheus-operator's
// PrometheusAgent, in.Server its model), as prometheus-operator's
// GenerateAgentConfiguration writes it: the global section without
// evaluation_interval or rule_query_offset, no rule_files, the jobs of the
// PodMonitors, then the additional scrape configurations, then those of the
// ServiceMonitors, Probes and ScrapeConfigs, then storage (the TSDB's
// out-of-order window alone: an agent keeps no blocks, no retention, no
// exemplars) and remote_write; no alerting. Parts.Head is given no rule
// files. The rejections and errors are Server's.
//
// With in.DaemonSet, the configuration of each agent of a DaemonSet, as
// prometheus-operator's generator writes it in DaemonSet mode: the jobs of
// the PodMonitors alone, each discovering the pods of its node only (the
// selector field spec.nodeName=$(NODE_NAME), which the config-reloader of
// each pod expands from its NODE_NAME), then the additional scrape
// configurations; no ServiceMonitor, Probe or ScrapeConfig, and no
// sharding. (prometheus-operator's CRD refuses the selectors of those, and
// the additional scrape configurations, in that mode: the caller's to
// refuse.)
func Agent(in Input) (Parts, []Rejection, error) {
	r := newRenderer(in)
	r.agent = true
	parts, rejected, err := r.config(in)
	if err != nil {
		return Parts{}, nil, fmt.Errorf("render agent config: %w", err)
	}
	return parts, rejected, nil
}

// agentJobs adds the jobs of in in the agent's order to jobs (add and
// additional are config's); an agent of a DaemonSet has those of the
// PodMonitors and the additional ones alone. A generated job named as an additional one
// that came before it is an error of the additional configurations, as it
// is when the additional job comes after.
func (r *renderer) agentJobs(in Input, jobs *configsecret.Stream, add func(kind, namespace, name string, js []yaml.MapSlice, err error), additional func() error) error {
	if err := r.eachMonitor(in, podMonitors, add); err != nil {
		return err
	}
	before := len(jobs.Names)
	if err := additional(); err != nil {
		return err
	}
	if r.daemonSet {
		return nil
	}
	extra := map[string]bool{}
	for _, n := range jobs.Names[before:] {
		extra[n] = true
	}
	after := len(jobs.Names)
	if err := r.eachMonitor(in, serviceMonitors|probes|scrapeConfigs, add); err != nil {
		return err
	}
	for _, n := range jobs.Names[after:] {
		if extra[n] {
			return fmt.Errorf("spec.additionalScrapeConfigs: job %q: another job has that name", n)
		}
	}
	return nil
}

// nodeSelector restricts the kubernetes_sd_configs item of a PodMonitor's
// jobs to the pods of the agent's node, in DaemonSet mode: the selectors
// prometheus-operator's generator appends (promcfg.go
// generateK8SSDConfig), the field expanded in each pod.
func nodeSelector() yaml.MapItem {
	return yaml.MapItem{Key: "selectors", Value: []yaml.MapSlice{{
		{Key: "role", Value: "pod"},
		{Key: "field", Value: "spec.nodeName=$(" + NodeNameEnv + ")"},
	}}}
}

// NodeNameEnv is the variable the config-reloader of an agent of a
// DaemonSet expands into its node's name (the downward API's
// spec.nodeName), as prometheus-operator's does.
const NodeNameEnv = "NODE_NAME"
