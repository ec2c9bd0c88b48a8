package prometheusagent

import (
	"log/slog"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promoperator"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/takeover"
)

// kind is the PrometheusAgent kind on the takeover shared by
// prometheus-operator's kinds that run Prometheus (promoperator.Kind).
func kind() promoperator.Kind[*monitoringv1alpha1.PrometheusAgent] {
	return promoperator.Kind[*monitoringv1alpha1.PrometheusAgent]{
		Kind: monitoringv1alpha1.PrometheusAgentsKind, GroupVersion: monitoringv1alpha1.SchemeGroupVersion,
		Controller: "prometheusagent", Doc: "docs/prometheus-operator-agent.md",
		New:     func() *monitoringv1alpha1.PrometheusAgent { return &monitoringv1alpha1.PrometheusAgent{} },
		NewList: func() client.ObjectList { return &monitoringv1alpha1.PrometheusAgentList{} },
		Convert: FromAgent,
		Invalid: invalidInDaemonSet,
		Common: func(a *monitoringv1alpha1.PrometheusAgent) *monitoringv1.CommonPrometheusFields {
			return &a.Spec.CommonPrometheusFields
		},
		Status: func(a *monitoringv1alpha1.PrometheusAgent) *monitoringv1.PrometheusStatus { return &a.Status },
	}
}

// Setup sets up the reconciler of the PrometheusAgent objects handed to
// to.ControllerID, when the PrometheusAgent CRD is served
// (promoperator.Setup). opts are the controller-wide inputs of the
// rendered workloads (default images). A nil logger discards the logs.
func Setup(m *kube.Manager, logger *slog.Logger, reg prometheus.Registerer, opts promserver.WorkloadOptions, to takeover.Options) error {
	return promoperator.Setup(m, logger, reg, opts, to, kind())
}

// Checker tells what taking over PrometheusAgent objects would do,
// without a cluster (controller takeover-check).
func Checker() takeover.Checker {
	return promoperator.Checker(kind())
}
