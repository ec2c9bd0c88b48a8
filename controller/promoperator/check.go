package promoperator

import (
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/takeover"
)

// Checker tells what taking over the objects of k would do, without a
// cluster (controller takeover-check).
func Checker[T client.Object](k Kind[T]) takeover.Checker {
	return takeover.NewChecker(k.Kind, k.GroupVersion.String(), k.New, k.NewList, func(p T) takeover.Check {
		server, unsupported := k.Convert(p)
		c := takeover.Check{
			Kind: k.Kind, Namespace: p.GetNamespace(), Name: p.GetName(),
			ControllerID: p.GetAnnotations()[takeover.AnnotationControllerID],
			Unsupported:  unsupported, Replicas: ptr.Deref(server.Spec.Replicas, 1),
		}
		if k.Invalid != nil {
			c.Invalid = k.Invalid(p)
		}
		if server.Layout.DaemonSet() {
			c.DaemonSet, c.Replicas = promserver.ShardName(server, 0), 0
			return c
		}
		for shard := range promserver.ShardCount(server) {
			c.StatefulSets = append(c.StatefulSets, promserver.ShardName(server, shard))
		}
		return c
	})
}
