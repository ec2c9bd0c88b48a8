// Package prometheus renders and reconciles the objects of a PrometheusServer:
// the gzipped configuration Secret (and its part Secrets when it is too
// large for one), the sharded rules ConfigMaps, a headless
// Service and the StatefulSet whose pods run Prometheus with the
// config-reloader sidecar. Setup sets its reconciler up with the
// controller's manager (package controller's table of kinds).
//
// Where things are:
//
//	watches.go      Setup: the watches and what each triggers
//	reconcile.go    one reconciliation: read the inputs, render, write, status
//	render.go       render: every object of a server from one snapshot of inputs
//	select.go       which monitors, probes, scrape configs and rules a server's selectors select
//	config.go       the configuration: its inputs, sections, order, rejections
//	server.go       the sections from the server: global, alerting, remote_write
//	configparts.go  a configuration too large for a Secret, split into part Secrets
//	scrape.go       the scrape jobs of ServiceMonitor and PodMonitor endpoints
//	probe.go        the scrape job of a Probe
//	scrapeconfig.go the scrape job of a ScrapeConfig and its service discoveries
//	credentials.go  basic auth, authorization, OAuth2, TLS, proxy, from Secrets
//	relabel.go      built-in and user relabelings, regexps checked once
//	ruleshards.go   rule files into ConfigMap shards, cached by resourceVersion
//	rulecheck.go    rule files checked with Prometheus' rulefmt
//	yaml.go         the one YAML writer, of the configuration and rule files
//	workload.go     the Service and the StatefulSet
package prometheus
