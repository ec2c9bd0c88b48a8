// Package prometheusserver is the PrometheusServer kind: each
// PrometheusServer is rendered as it is, in podreload's layout, by the
// shared reconciler of package promserver, and its status is the
// PrometheusServer's own. Setup sets it up with the controller's manager
// (package controller's table of kinds).
//
// Where things are:
//
//	servers.go  Setup; the kind as promserver's Front: its reconcile, its servers
//	status.go   the status: conditions, counts, replicas, apply timing
//
// Its tests are the envtest suite of the kinds that run Prometheus
// (TestReconciler: a real kube-apiserver, PrometheusServers and
// Prometheus objects taken over side by side, as the controller runs
// them) and the tests of promserver's render, with their golden files
// (testdata/).
package prometheusserver
