package prometheusserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promserver"
)

// testPod is a pod of srv's StatefulSet as its controller creates it;
// ready when ready, reporting applied unless nil.
func testPod(srv *v1alpha1.PrometheusServer, name string, ready bool, applied *contract.Applied) corev1.Pod {
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: srv.Namespace, Name: name, Labels: promserver.SelectorLabels(promserver.OwnTarget(srv))},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "prometheus", Image: "prometheus"}}},
	}
	if ready {
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	if applied != nil {
		b, _ := json.Marshal(applied)
		pod.Annotations = map[string]string{contract.AppliedAnnotation: string(b)}
	}
	return pod
}

// testConfigApplied follows a server's ConfigApplied condition through
// what its pods report, on the API server: the StatefulSet's pods are
// created and made ready here, as no kubelet runs.
func (cp *controlPlane) testConfigApplied(t *testing.T) {
	ns := cp.namespace(t, "applied", nil)
	run := cp.start(t, kube.Options{Namespaces: []string{ns}})
	srv := server(ns, "main", func(s *v1alpha1.PrometheusServerSpec) { s.Replicas = ptr.To[int32](2) })
	cp.create(t, srv)
	condition := func(c *assert.CollectT, status metav1.ConditionStatus, reason, message string) v1alpha1.PrometheusServerStatus {
		st := cp.status(t, srv)
		cond := meta.FindStatusCondition(st.Conditions, promserver.ConditionConfigApplied)
		if assert.NotNil(c, cond) {
			assert.Equal(c, status, cond.Status)
			assert.Equal(c, reason, cond.Reason)
			assert.Equal(c, message, cond.Message)
		}
		return st
	}
	var want string
	eventually(t, func(c *assert.CollectT) {
		want = cp.status(t, srv).ContentHash
		assert.NotEmpty(c, want)
		condition(c, metav1.ConditionFalse, "Pending", "no ready replica")
	})

	for _, name := range []string{"main-0", "main-1"} {
		pod := testPod(srv, name, false, nil)
		status := pod.Status
		cp.create(t, &pod)
		pod.Status = status
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		require.NoError(t, cp.c.Status().Update(t.Context(), &pod))
	}
	eventually(t, func(c *assert.CollectT) {
		st := condition(c, metav1.ConditionFalse, "Pending", "pods main-0, main-1 not reporting what they run")
		assert.Equal(c, []v1alpha1.ReplicaStatus{{Pod: "main-0", State: v1alpha1.ReplicaUnknown}, {Pod: "main-1", State: v1alpha1.ReplicaUnknown}}, st.ReplicaStatuses)
	})

	report := func(name string, a contract.Applied) {
		b, err := json.Marshal(a)
		require.NoError(t, err)
		edit(t, cp.c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, func(p *corev1.Pod) {
			p.Annotations = map[string]string{contract.AppliedAnnotation: string(b)}
		})
	}
	at := time.Now().UTC().Truncate(time.Second)
	report("main-0", contract.Applied{Hash: want, Time: at.Format(time.RFC3339)})
	eventually(t, func(c *assert.CollectT) {
		condition(c, metav1.ConditionFalse, "Pending", "pod main-1 not reporting what it runs")
	})
	assert.Equal(t, 0.0, metricValue(t, run.reg, "podreload_controller_config_apply_seconds"), "not applied yet")
	report("main-1", contract.Applied{Hash: want, Time: at.Format(time.RFC3339)})
	eventually(t, func(c *assert.CollectT) {
		st := condition(c, metav1.ConditionTrue, "Applied", "every ready replica runs "+want[:12])
		assert.Equal(c, 1.0, metricValue(t, run.reg, "podreload_controller_config_applied", "namespace", ns, "name", "main"))
		assert.Equal(c, 1.0, metricValue(t, run.reg, "podreload_controller_config_apply_seconds"), "timed once")
		if assert.Len(c, st.ReplicaStatuses, 2) {
			assert.Equal(c, want, st.ReplicaStatuses[1].AppliedHash)
			if assert.NotNil(c, st.ReplicaStatuses[1].AppliedTime) {
				assert.True(c, at.Equal(st.ReplicaStatuses[1].AppliedTime.Time))
			}
		}
	})

	msg := `status 500: failed to reload config: couldn't load configuration (--config.file="x"): parsing YAML file x`
	report("main-1", contract.Applied{Hash: strings.Repeat("b", 64), Time: at.Format(time.RFC3339),
		Rejection: &contract.Rejection{Message: msg, Time: at.Format(time.RFC3339)}})
	eventually(t, func(c *assert.CollectT) {
		st := condition(c, metav1.ConditionFalse, "Rejected", "Rejected: "+msg+" (pod main-1)")
		assert.Equal(c, 0.0, metricValue(t, run.reg, "podreload_controller_config_applied", "namespace", ns, "name", "main"))
		if assert.Len(c, st.ReplicaStatuses, 2) && assert.NotNil(c, st.ReplicaStatuses[1].LastRejection) {
			assert.Equal(c, msg, st.ReplicaStatuses[1].LastRejection.Message)
			assert.Equal(c, v1alpha1.ReplicaApplied, st.ReplicaStatuses[0].State, "the other replica unaffected")
		}
	})

	// Back to what it runs: one status write for the report, and none
	// while nothing changes.
	settled := len(run.settle(t))
	renders := metricValue(t, run.reg, "podreload_controller_reconciles_total")
	report("main-1", contract.Applied{Hash: want, Time: at.Format(time.RFC3339)})
	eventually(t, func(c *assert.CollectT) {
		condition(c, metav1.ConditionTrue, "Applied", "every ready replica runs "+want[:12])
	})
	writes := run.settle(t)[settled:]
	require.Equal(t, []string{"PATCH " + statusPath(srv)}, writes)
	assert.Equal(t, renders, metricValue(t, run.reg, "podreload_controller_reconciles_total"), "the report updates the status without a render")
}

// statusPath is the path of srv's status.
func statusPath(srv *v1alpha1.PrometheusServer) string {
	return "/apis/podreload.dev/v1alpha1/namespaces/" + srv.Namespace + "/prometheusservers/" + srv.Name + "/status"
}

// testReportStorm has five replicas report at once, then one restart: at
// most one status write per report, each a patch, none refused with a
// conflict.
func (cp *controlPlane) testReportStorm(t *testing.T) {
	ns := cp.namespace(t, "storm", nil)
	run := cp.start(t, kube.Options{Namespaces: []string{ns}})
	srv := server(ns, "main", func(s *v1alpha1.PrometheusServerSpec) { s.Replicas = ptr.To[int32](5) })
	cp.create(t, srv)
	var want string
	eventually(t, func(c *assert.CollectT) {
		want = cp.status(t, srv).ContentHash
		assert.NotEmpty(c, want)
	})
	names := []string{"main-0", "main-1", "main-2", "main-3", "main-4"}
	ready := func(name string) {
		pod := testPod(srv, name, false, nil)
		cp.create(t, &pod)
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		require.NoError(t, cp.c.Status().Update(t.Context(), &pod))
	}
	for _, name := range names {
		ready(name)
	}
	applied := func(c *assert.CollectT) {
		cond := meta.FindStatusCondition(cp.status(t, srv).Conditions, promserver.ConditionConfigApplied)
		if assert.NotNil(c, cond) {
			assert.Equal(c, "every ready replica runs "+want[:12], cond.Message)
		}
	}
	eventually(t, func(c *assert.CollectT) {
		assert.Len(c, cp.status(t, srv).ReplicaStatuses, 5)
	})
	settled := len(run.settle(t))
	renders := metricValue(t, run.reg, "podreload_controller_reconciles_total")

	report, err := json.Marshal(contract.Applied{Hash: want, Time: time.Now().UTC().Format(time.RFC3339)})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Go(func() {
			assert.NoError(t, cp.c.Patch(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
				client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, contract.AppliedAnnotation, report))))
		})
	}
	wg.Wait()
	eventually(t, applied)
	writes := run.settle(t)[settled:]
	assert.NotEmpty(t, writes)
	assert.LessOrEqual(t, len(writes), len(names), "at most one status write per report: %v", writes)
	for _, w := range writes {
		assert.Equal(t, "PATCH "+statusPath(srv), w)
	}
	assert.Equal(t, 1.0, metricValue(t, run.reg, "podreload_controller_config_applied", "namespace", ns, "name", "main"))
	assert.Empty(t, run.Conflicts(), "writes refused with 409 Conflict")
	assert.Equal(t, renders, metricValue(t, run.reg, "podreload_controller_reconciles_total"), "the reports update the status without a render")

	// A pod restarting: gone, then back not ready, ready but not yet
	// reporting (Pending), then reporting (applied).
	require.NoError(t, cp.c.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main-4"}}))
	eventually(t, func(c *assert.CollectT) {
		assert.Len(c, cp.status(t, srv).ReplicaStatuses, 4)
	})
	ready("main-4")
	eventually(t, func(c *assert.CollectT) {
		cond := meta.FindStatusCondition(cp.status(t, srv).Conditions, promserver.ConditionConfigApplied)
		if assert.NotNil(c, cond) {
			assert.Equal(c, "Pending", cond.Reason)
			assert.Equal(c, "pod main-4 not reporting what it runs", cond.Message)
		}
	})
	require.NoError(t, cp.c.Patch(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main-4"}},
		client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, contract.AppliedAnnotation, report))))
	eventually(t, applied)
	assert.Empty(t, run.Conflicts(), "writes refused with 409 Conflict")
	assert.Zero(t, metricValue(t, run.reg, "podreload_controller_write_conflicts_total"))
}
