package prometheusagent

import (
	"github.com/podreload/podreload/controller/promoperator"
	"github.com/podreload/podreload/controller/takeover"
)

// fields is the takeover's field coverage of prometheus-operator's
// PrometheusAgent spec at the pinned version: the common fields
// (promoperator.CommonFields) and the agent's own. Every field has a row
// (TestFieldsCoverTheSpec walks the type), and
// docs/prometheus-operator-agent.md is its rendering (TestFieldMatrix).
func fields() []takeover.Field {
	return append(promoperator.CommonFields(),
		takeover.Mapped("mode", "StatefulSet (the default): the StatefulSets of the shards; DaemonSet: one DaemonSet, "+
			"prom-agent-<name>, an agent per node, as prometheus-operator renders it behind its PrometheusAgentDaemonSet "+
			"feature gate (here without one): the agent's selector labels without the shard's, no governing Service, no "+
			"claim template; the data volume an emptyDir, prom-agent-<name>-db (prometheus-operator mounts none: the image's "+
			"volume), where the config-reloaders keep their state (no state Secret: the pods' names are their own); the config-reloaders get NODE_NAME from spec.nodeName, and each "+
			"PodMonitor job discovers the pods of its node only (the selector field spec.nodeName=$(NODE_NAME)), "+
			"ServiceMonitors, Probes and ScrapeConfigs unused, as prometheus-operator's generator; the fields "+
			"prometheus-operator's CRD refuses in that mode (replicas, storage, shards above 1, "+
			"persistentVolumeClaimRetentionPolicy, the ServiceMonitor, Probe and ScrapeConfig selectors, "+
			"additionalScrapeConfigs, shardingStrategy), which an older CRD lets through, are an invalid spec, with its "+
			"messages: Reconciled False, InvalidSpec, nothing written. Switching modes deletes the other mode's workload"),
	)
}
