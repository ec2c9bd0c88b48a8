package prometheus

import (
	"log/slog"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promoperator"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/takeover"
)

// AnnotationControllerID is prometheus-operator's annotation naming the
// controller of a Prometheus object (takeover.AnnotationControllerID).
const AnnotationControllerID = takeover.AnnotationControllerID

// kind is the Prometheus kind on the takeover shared by
// prometheus-operator's kinds that run Prometheus (promoperator.Kind).
func kind() promoperator.Kind[*monitoringv1.Prometheus] {
	return promoperator.Kind[*monitoringv1.Prometheus]{
		Kind: monitoringv1.PrometheusesKind, GroupVersion: monitoringv1.SchemeGroupVersion,
		Controller: "prometheus", Doc: "docs/prometheus-operator.md",
		New:     func() *monitoringv1.Prometheus { return &monitoringv1.Prometheus{} },
		NewList: func() client.ObjectList { return &monitoringv1.PrometheusList{} },
		Convert: FromPrometheus,
		Common: func(p *monitoringv1.Prometheus) *monitoringv1.CommonPrometheusFields {
			return &p.Spec.CommonPrometheusFields
		},
		Status: func(p *monitoringv1.Prometheus) *monitoringv1.PrometheusStatus { return &p.Status },
	}
}

// Setup sets up the reconciler of the Prometheus objects handed to
// to.ControllerID, when the Prometheus CRD is served (promoperator.Setup).
// opts are the controller-wide inputs of the rendered workloads (default
// images). A nil logger discards the logs.
func Setup(m *kube.Manager, logger *slog.Logger, reg prometheus.Registerer, opts promserver.WorkloadOptions, to takeover.Options) error {
	return promoperator.Setup(m, logger, reg, opts, to, kind())
}
