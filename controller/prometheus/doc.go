// Package prometheus is the PrometheusServer kind: it renders and
// reconciles the objects of a PrometheusServer: the gzipped configuration
// Secret (and its part Secrets when it is too large for one), the sharded
// rules ConfigMaps, a headless Service and the StatefulSets whose pods run
// Prometheus with the config-reloader sidecar. Setup sets its reconciler up
// with the controller's manager (package controller's table of kinds). It
// writes through package kube and reads the Secrets and ConfigMaps it
// references through package store; it imports no other kind.
//
// Where things are:
//
//	watches.go       Setup, AddToScheme: the watches and what each triggers
//	reconcile.go     one reconciliation: read the inputs, render, write, status
//	coalesce.go      the events of a server coalesced into renders
//	write.go         the order of the writes; the objects no longer wanted deleted
//	status.go        the status: conditions, counts, replicas, apply timing
//	metrics.go       the reconciler's metrics
//	selected.go      the table of the kinds a server selects (ServiceMonitor...)
//	render.go        render: every object of a server from one snapshot of inputs, the configuration's input
//	rendercache.go   what renders keep from one to the next; the rule ConfigMaps' names
//	web.go           the web config Secret (package webconfig renders it)
//	workload.go      the Service and the StatefulSets
//	podfields.go     the pod fields prometheus-operator's Prometheus has too
//	sidecar.go       the config-reloader's flags and sources, volume or API
//	access.go        the Role and RoleBinding of the config-reloaders
//	statesecrets.go  the Secrets that keep the config-reloaders' state without a claim
//	convert.go       a Prometheus (prometheus-operator's) as a PrometheusServer
//	operatorfields.go  each field of a Prometheus spec: mapped, ignored, refused
//	takeover.go      a Prometheus taken over: a variant of the takeover's lifecycle
//	takeover_status.go its status as prometheus-operator writes it
//	takeovercheck.go what `controller takeover-check` says of a Prometheus
//	layout.go        the layout, a value decided where a server comes from: podreload's, or prometheus-operator's for a Prometheus taken over
//	layout_workload.go its names, labels, Service, data volume and flags
//	layout_rules.go  the labels of its rule ConfigMaps and its absolute rule_files
//
// The pure pieces it renders with are packages of their own: selector
// (which objects a pair of selectors selects), promcfg (the
// configuration), promyaml (the YAML writer), configsecret (the
// configuration in gzipped Secrets, split into parts) and rulefiles
// (PrometheusRules into checked rule files in ConfigMaps).
package prometheus
