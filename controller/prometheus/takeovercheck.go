package prometheus

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

	"github.com/podreload/podreload/controller/promoperator"
	"github.com/podreload/podreload/controller/takeover"
)

// Checker tells what taking over Prometheus objects would do, without a
// cluster (controller takeover-check).
func Checker() takeover.Checker {
	return promoperator.Checker(kind(), func() *monitoringv1.PrometheusList { return &monitoringv1.PrometheusList{} })
}
