// Package prometheus is prometheus-operator's Prometheus kind, taken over
// (docs/takeover.md): a Prometheus handed to the controller's id is
// converted into a PrometheusServer in prometheus-operator's layout and
// rendered by package promserver into the objects prometheus-operator
// wrote for it, adopted; its lifecycle and status are those of
// prometheus-operator's kinds that run Prometheus (package promoperator's
// Kind, on package takeover's lifecycle). Setup sets it up with the controller's manager (package
// controller's table of kinds); Checker is its `controller
// takeover-check`.
//
// Where things are:
//
//	convert.go         a Prometheus as a PrometheusServer (FromPrometheus)
//	operatorfields.go  each field of a Prometheus spec: mapped, ignored, refused
//	kind.go            Setup; the kind as a promoperator.Kind
//	takeovercheck.go   Checker, what `controller takeover-check` says of a Prometheus
//
// testdata/operator/config/ holds the cases of the configuration's
// differential test against prometheus-operator's generator
// (TestOperatorConfig, tools/opconfig).
package prometheus
