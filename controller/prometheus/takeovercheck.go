package prometheus

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/controller/takeover"
)

// CheckTakeover tells what taking over p would do, without a cluster.
func CheckTakeover(p *monitoringv1.Prometheus) takeover.Check {
	server, unsupported := fromPrometheus(p)
	c := takeover.Check{
		Kind: monitoringv1.PrometheusesKind, Namespace: p.Namespace, Name: p.Name, ControllerID: p.Annotations[AnnotationControllerID],
		Unsupported: unsupported, Replicas: ptr.Deref(server.Spec.Replicas, 1),
	}
	for shard := range shardCount(server) {
		c.StatefulSets = append(c.StatefulSets, shardName(server, shard))
	}
	return c
}
