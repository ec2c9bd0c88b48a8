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
//	watches.go      Setup, AddToScheme: the watches and what each triggers
//	reconcile.go    one reconciliation: read the inputs, render, write, status
//	coalesce.go     the events of a burst coalesced into few renders
//	write.go        the order of the writes; the objects no longer wanted deleted
//	status.go       the status: conditions, counts, replicas, apply timing
//	metrics.go      the reconciler's metrics
//	selected.go     the table of the kinds a server selects (ServiceMonitor...)
//	select.go       how a pair of selectors selects
//	render.go       render: every object of a server from one snapshot of inputs
//	config.go       the configuration: its inputs, sections, order, rejections
//	server.go       the sections from the server: global, alerting, remote_write
//	alertmanagers.go  the alerting section's Alertmanagers
//	remotewrite.go  the remote_write section
//	additional.go   the additional scrape configurations
//	configparts.go  a configuration too large for a Secret, split into part Secrets
//	configchunks.go the jobs cut into the chunks of the parts
//	scrape.go       the scrape jobs of ServiceMonitor and PodMonitor endpoints
//	scrapefields.go the fields of a scrape job: intervals, scheme, limits, auth
//	scrapeclass.go  scrape classes
//	enforce.go      spec.enforcedNamespaceLabel on scrape jobs and rules
//	probe.go        the scrape job of a Probe
//	scrapeconfig.go the scrape job of a ScrapeConfig and its service discoveries
//	credentials.go  basic auth, authorization, OAuth2, TLS, proxy, from Secrets
//	relabel.go      built-in and user relabelings, regexps checked once
//	ruleshards.go   rule files into ConfigMap shards, cached by resourceVersion
//	rulewrites.go   the order of the rule ConfigMaps' writes, no file missing between
//	rulecheck.go    rule files checked with Prometheus' rulefmt
//	yaml.go         the one YAML writer, of the configuration and rule files
//	web.go          the web config Secret (package webconfig renders it)
//	workload.go     the Service and the StatefulSets
//	podfields.go    the pod fields prometheus-operator's Prometheus has too
//	convert.go      a Prometheus (prometheus-operator's) as a PrometheusServer
//	operatorfields.go  each field of a Prometheus spec: mapped, ignored, refused
//	takeover.go     a Prometheus taken over: a variant of the takeover's lifecycle
//	takeover_status.go  its status as prometheus-operator writes it
//	takeovercheck.go    what `controller takeover-check` says of a Prometheus
//	sidecar.go      the config-reloader's flags and sources, volume or API
//	access.go       the Role and RoleBinding of the config-reloaders
//	statesecrets.go the config-reloaders' state Secrets
//	layout.go       prometheus-operator's layout, for a Prometheus taken over
//	layout_workload.go  its names, labels, Service, data volume and flags
//	layout_rules.go its plain rule ConfigMaps and absolute rule_files
package prometheus
