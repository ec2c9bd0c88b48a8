package prometheus

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podreload/podreload/api/v1alpha1"
)

// A PrometheusServer is rendered in one of two layouts: podreload's own,
// or, for a prometheus-operator Prometheus object taken over
// (docs/takeover.md), prometheus-operator's names, labels, selectors,
// claim templates and plain rule files, so that its pods, PVCs and data
// carry over in both directions. The Prometheus object is converted into
// an in-memory PrometheusServer (fromPrometheus), never written, that
// carries annotationLayout; the reconciler of PrometheusServers drops the
// annotation from the objects it reads, so a user cannot ask for the
// layout on a PrometheusServer.
const (
	// annotationLayout, on an in-memory PrometheusServer, names its layout.
	annotationLayout = "podreload.dev/layout"
	// layoutOperator is prometheus-operator's layout.
	layoutOperator = "prometheus-operator"
)

// operatorLayout reports whether server is rendered in prometheus-operator's
// layout: it is a Prometheus object taken over.
func operatorLayout(server *v1alpha1.PrometheusServer) bool {
	return server.Annotations[annotationLayout] == layoutOperator
}

// fromPrometheus converts a Prometheus object into the PrometheusServer it
// is rendered as, in prometheus-operator's layout, with prometheus-operator's
// defaults where they differ from ours (convertSpec). unsupported lists
// the set fields the conversion cannot carry (by JSON path under spec,
// sorted): a Prometheus with any is not taken over.
func fromPrometheus(p *monitoringv1.Prometheus) (server *v1alpha1.PrometheusServer, unsupported []string) {
	server = &v1alpha1.PrometheusServer{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: p.Namespace, UID: p.UID, Generation: p.Generation,
			Labels: p.Labels, Annotations: map[string]string{},
		},
	}
	for k, v := range p.Annotations {
		server.Annotations[k] = v
	}
	server.Annotations[annotationLayout] = layoutOperator
	server.Spec, unsupported = convertSpec(p.Spec)
	return server, unsupported
}
