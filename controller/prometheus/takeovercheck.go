package prometheus

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/takeover"
)

// Checker tells what taking over Prometheus objects would do, without a
// cluster (controller takeover-check).
func Checker() takeover.Checker {
	return takeover.NewChecker(monitoringv1.PrometheusesKind, monitoringv1.SchemeGroupVersion.String(),
		func() *monitoringv1.Prometheus { return &monitoringv1.Prometheus{} },
		func() *monitoringv1.PrometheusList { return &monitoringv1.PrometheusList{} },
		checkTakeover)
}

// checkTakeover tells what taking over p would do, without a cluster.
func checkTakeover(p *monitoringv1.Prometheus) takeover.Check {
	server, unsupported := FromPrometheus(p)
	c := takeover.Check{
		Kind: monitoringv1.PrometheusesKind, Namespace: p.Namespace, Name: p.Name, ControllerID: p.Annotations[AnnotationControllerID],
		Unsupported: unsupported, Replicas: ptr.Deref(server.Spec.Replicas, 1),
	}
	for shard := range promserver.ShardCount(server) {
		c.StatefulSets = append(c.StatefulSets, promserver.ShardName(server, shard))
	}
	return c
}
