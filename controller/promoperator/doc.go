// Package promoperator is what prometheus-operator's two kinds that run
// Prometheus, Prometheus and PrometheusAgent, share when they are taken
// over (docs/takeover.md): the takeover itself (Kind, a variant of package
// takeover's lifecycle and promserver's Front, configured per kind), their
// status as prometheus-operator writes it, the conversion of the
// CommonPrometheusFields both specs inline into the model (a
// PrometheusServer, package promserver's), and their rows of the
// takeover's field tables. Each kind converts and lists its own fields on
// top (packages prometheus and prometheusagent).
//
// Where things are:
//
//	takeover.go Kind, Setup: the takeover's variant, promserver's Front
//	status.go   the status as prometheus-operator writes it
//	check.go    Checker: what `controller takeover-check` says of an object
//	convert.go  CommonSpec: the common fields as a PrometheusServer spec
//	fields.go   CommonFields: each common field, mapped, ignored or refused
//	version.go  RefusedVersion: the Prometheus versions prometheus-operator refuses
package promoperator
