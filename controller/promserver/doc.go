// Package promserver is what every kind that runs the Prometheus binary
// shares: the model (a PrometheusServer, which each kind's objects are
// converted into, with the layout its objects are named in: a value,
// Target), the render of every object of a server from one snapshot of
// its inputs, the write order, the watches, and the reconciler that runs
// a kind's Front (its reconcile of one object, the servers its events map
// to). The kinds are packages of their own on it: prometheusserver
// (podreload's PrometheusServer), prometheus and prometheusagent
// (prometheus-operator's Prometheus and PrometheusAgent, taken over, on
// package promoperator); it knows none of them.
//
// Where things are:
//
//	watches.go       AddToScheme, NewReconciler, the watches and what each triggers
//	reconcile.go     the reconciler and its Front; Sync: read the inputs, render, write
//	write.go         the order of the writes (kube's, takeover's StatefulSet pieces); the objects no longer wanted deleted
//	metrics.go       the metrics the kinds that run Prometheus share
//	selected.go      the table of the kinds a server selects (ServiceMonitor...)
//	render.go        Render: every object of a server from one snapshot of inputs, the configuration's input
//	rendercache.go   what renders keep from one to the next (rulefiles', configsecret's caches); the rule ConfigMaps' names
//	web.go           the web config Secret: its name and labels (package webconfig renders it, and its pod parts)
//	workload.go      the Service and the StatefulSets (or an agent's DaemonSet)
//	podfields.go     the pod fields prometheus-operator's Prometheus has too
//	sidecar.go       the config-reloader's reload flags; its source, volume or API (sidecar.Source)
//	access.go        the Role and RoleBinding of the config-reloaders
//	statesecrets.go  where the config-reloaders keep their state: on the data volume, or in Secrets (sidecar.StateSecrets)
//	layout.go        the layout, a value decided where a server comes from: podreload's, or prometheus-operator's for a Prometheus taken over
//	layout_workload.go its names, labels, Service, data volume and flags
//	layout_rules.go  the labels of its rule ConfigMaps and its absolute rule_files
//	layout_agent.go  prometheus-operator's layout of an agent: its names, labels and flags
//	layout_daemonset.go an agent in DaemonSet mode: its DaemonSet, written in place of the StatefulSets
//
// The command line of Prometheus in prometheus-operator's layouts is its
// sub-package promargs', the Thanos sidecar of a Prometheus taken over its
// sub-package thanos'. The pure pieces it renders with are packages of
// their own: selector
// (which objects a pair of selectors selects), promcfg (the
// configuration), promyaml (the YAML writer), configsecret (the
// configuration in gzipped Secrets, split into parts) and rulefiles
// (PrometheusRules into checked rule files in ConfigMaps). Its tests are
// those of package prometheusserver, which runs it whole (the render's
// golden files are there).
package promserver
