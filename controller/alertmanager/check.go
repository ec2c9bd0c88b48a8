package alertmanager

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

	"github.com/podreload/podreload/controller/alertmanager/amconfig"
	"github.com/podreload/podreload/controller/takeover"
)

// Checker tells what taking over Alertmanager objects would do, without
// a cluster (controller takeover-check).
func Checker() takeover.Checker {
	return takeover.NewChecker(monitoringv1.AlertmanagersKind, monitoringv1.SchemeGroupVersion.String(),
		func() *monitoringv1.Alertmanager { return &monitoringv1.Alertmanager{} },
		func() *monitoringv1.AlertmanagerList { return &monitoringv1.AlertmanagerList{} },
		checkTakeover)
}

// checkTakeover tells what taking over am would do, without a cluster,
// with a note of the AlertmanagerConfigs alertmanagerConfigFileSystemMode
// leaves out (amconfig.FileSystemNote).
func checkTakeover(am *monitoringv1.Alertmanager) takeover.Check {
	c := takeover.Check{
		Kind: monitoringv1.AlertmanagersKind, Namespace: am.Namespace, Name: am.Name,
		ControllerID: am.Annotations[takeover.AnnotationControllerID],
		Unsupported:  fromAlertmanager(am), StatefulSets: []string{stsName(am.Name)}, Replicas: replicas(am),
	}
	if n := amconfig.FileSystemNote(am); n != "" {
		c.Notes = append(c.Notes, n)
	}
	return c
}
