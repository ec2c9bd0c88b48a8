package alertmanager

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

	"github.com/podreload/podreload/controller/takeover"
)

// CheckTakeover tells what taking over am would do, without a cluster.
func CheckTakeover(am *monitoringv1.Alertmanager) takeover.Check {
	return takeover.Check{
		Kind: monitoringv1.AlertmanagersKind, Namespace: am.Namespace, Name: am.Name,
		ControllerID: am.Annotations[takeover.AnnotationControllerID],
		Unsupported:  fromAlertmanager(am), StatefulSets: []string{stsName(am.Name)}, Replicas: replicas(am),
	}
}
