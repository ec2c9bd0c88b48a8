package prometheusagent

import (
	"reflect"

	"github.com/podreload/podreload/controller/promoperator"
	"github.com/podreload/podreload/controller/takeover"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
)

// fields is the takeover's field coverage of prometheus-operator's
// PrometheusAgent spec at the pinned version: the common fields
// (promoperator.CommonFields) and the agent's own. Every field has a row
// (TestFieldsCoverTheSpec walks the type), and
// docs/prometheus-operator-agent.md is its rendering (TestFieldMatrix).
func fields() []takeover.Field {
	return append(promoperator.CommonFields(),
		takeover.RefuseBut("mode", "an agent per node (a DaemonSet) is not rendered yet; accepted: StatefulSet",
			func(v reflect.Value) bool { return !daemonSet(v.Interface().(*monitoringv1alpha1.PrometheusAgentMode)) }),
	)
}
