package prometheusserver

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/takeover"
)

// testTakeoverLeader runs two controllers with the same id and leader
// election: the Prometheus is taken over by one of them, the other writes
// nothing but its attempts at the Lease.
func (cp *controlPlane) testTakeoverLeader(t *testing.T) {
	ns := cp.namespace(t, "takeover-leader", nil)
	opts := kube.Options{Namespaces: []string{ns}, LeaderElection: true, LeaderElectionNamespace: ns}
	to := &takeover.Options{ControllerID: "podreload"}
	runs := []*running{cp.startTakingOver(t, opts, to), cp.startTakingOver(t, opts, to)}
	p := operatorPrometheus(ns, "k8s", "podreload")
	cp.create(t, p)
	cp.waitFor(t, client.ObjectKey{Namespace: ns, Name: "prometheus-k8s"}, &appsv1.StatefulSet{})
	// Each controller's writes, but those to the Lease.
	writers := 0
	for _, run := range runs {
		var writes []string
		for _, w := range run.settleOrNone(t) {
			if !strings.Contains(w, "/leases/") && !strings.Contains(w, "/events") {
				writes = append(writes, w)
			}
		}
		if len(writes) > 0 {
			writers++
		}
	}
	require.Equal(t, 1, writers, "one controller, the leader, writes")
	eventually(t, func(c *assert.CollectT) {
		var sts appsv1.StatefulSet
		assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "prometheus-k8s"}, &sts))
	})
}
