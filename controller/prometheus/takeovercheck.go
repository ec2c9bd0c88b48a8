package prometheus

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/utils/ptr"
)

// Check is what taking over a Prometheus object would do, for
// `controller takeover-check`: whether it can be taken over and what rolls.
type Check struct {
	// Namespace and Name name the Prometheus.
	Namespace, Name string
	// ControllerID is its AnnotationControllerID (absent reads as empty).
	ControllerID string
	// Unsupported are the fields it sets that keep it from being taken
	// over (JSON paths, sorted); none when it can be.
	Unsupported []string
	// StatefulSets are the StatefulSets whose pods roll once, to the
	// podreload sidecar, one shard each.
	StatefulSets []string
	// Replicas is the number of pods of each StatefulSet.
	Replicas int32
}

// CheckTakeover tells what taking over p would do, without a cluster.
func CheckTakeover(p *monitoringv1.Prometheus) Check {
	server, unsupported := fromPrometheus(p)
	c := Check{
		Namespace: p.Namespace, Name: p.Name, ControllerID: p.Annotations[AnnotationControllerID],
		Unsupported: unsupported, Replicas: ptr.Deref(server.Spec.Replicas, 1),
	}
	for shard := range shardCount(server) {
		c.StatefulSets = append(c.StatefulSets, shardName(server, shard))
	}
	return c
}
