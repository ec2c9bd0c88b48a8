package prometheus

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
)

// testPod is a pod of srv's StatefulSet as its controller creates it;
// ready when ready, reporting applied unless nil.
func testPod(srv *v1alpha1.PrometheusServer, name string, ready bool, applied *contract.Applied) corev1.Pod {
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: srv.Namespace, Name: name, Labels: selectorLabels(srv)},
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

func TestConfigApplied(t *testing.T) {
	srv := testServer()
	at := "2026-11-25T10:00:00Z"
	atTime := &metav1.Time{Time: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}
	good := &contract.Applied{Hash: "aaaaaaaaaaaaaaaa", Time: at}
	old := &contract.Applied{Hash: "bbbbbbbbbbbbbbbb", Time: at}
	rejected := &contract.Applied{Hash: "bbbbbbbbbbbbbbbb", Time: at, Rejection: &contract.Rejection{Message: "status 500: bad", Time: at}}
	for _, tc := range []struct {
		name    string
		want    string
		pods    []corev1.Pod
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{"nothing written", "", []corev1.Pod{testPod(srv, "main-0", true, good)}, metav1.ConditionFalse, "Pending", "no configuration written yet"},
		{"no pod", good.Hash, nil, metav1.ConditionFalse, "Pending", "no ready replica"},
		{"applied", good.Hash, []corev1.Pod{testPod(srv, "main-1", true, good), testPod(srv, "main-0", true, good)}, metav1.ConditionTrue, "Applied", "every ready replica runs aaaaaaaaaaaa"},
		{"unready pods do not count", good.Hash, []corev1.Pod{testPod(srv, "main-0", true, good), testPod(srv, "main-1", false, old)}, metav1.ConditionTrue, "Applied", "every ready replica runs aaaaaaaaaaaa"},
		{"pending", good.Hash, []corev1.Pod{testPod(srv, "main-0", true, old), testPod(srv, "main-3", true, old), testPod(srv, "main-2", true, good)}, metav1.ConditionFalse, "Pending", "pods main-0, main-3 not running aaaaaaaaaaaa yet"},
		{"unknown", good.Hash, []corev1.Pod{testPod(srv, "main-0", true, nil), testPod(srv, "main-1", true, good)}, metav1.ConditionFalse, "Pending", "pod main-0 not reporting what it runs"},
		{"pending and unknown", good.Hash, []corev1.Pod{testPod(srv, "main-0", true, old), testPod(srv, "main-1", true, nil), testPod(srv, "main-2", true, nil)}, metav1.ConditionFalse, "Pending", "pod main-0 not running aaaaaaaaaaaa yet; pods main-1, main-2 not reporting what they run"},
		{"rejected", good.Hash, []corev1.Pod{testPod(srv, "main-0", true, old), testPod(srv, "main-1", true, rejected)}, metav1.ConditionFalse, "Rejected", "Rejected: status 500: bad (pod main-1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, cond := configApplied(tc.want, tc.pods)
			require.Equal(t, metav1.Condition{Type: conditionConfigApplied, Status: tc.status, Reason: tc.reason, Message: tc.message}, cond)
		})
	}

	replicas, _ := configApplied(good.Hash, []corev1.Pod{
		testPod(srv, "main-1", true, rejected), testPod(srv, "main-0", true, nil), testPod(srv, "main-2", true, good),
		testPod(srv, "main-3", true, old), testPod(srv, "main-4", false, good),
	})
	require.Equal(t, []v1alpha1.ReplicaStatus{
		{Pod: "main-0", State: v1alpha1.ReplicaUnknown},
		{Pod: "main-1", State: v1alpha1.ReplicaRejected, AppliedHash: rejected.Hash, AppliedTime: atTime, LastRejection: &v1alpha1.Rejection{Message: "status 500: bad", Time: atTime}},
		{Pod: "main-2", State: v1alpha1.ReplicaApplied, AppliedHash: good.Hash, AppliedTime: atTime},
		{Pod: "main-3", State: v1alpha1.ReplicaPending, AppliedHash: old.Hash, AppliedTime: atTime},
		{Pod: "main-4", State: v1alpha1.ReplicaUnknown, AppliedHash: good.Hash, AppliedTime: atTime},
	}, replicas, "a pod not ready is unknown, whatever it last reported")
	unreadable := testPod(srv, "main-0", true, nil)
	unreadable.Annotations = map[string]string{contract.AppliedAnnotation: "{"}
	replicas, _ = configApplied(good.Hash, []corev1.Pod{unreadable})
	require.Equal(t, []v1alpha1.ReplicaStatus{{Pod: "main-0", State: v1alpha1.ReplicaUnknown}}, replicas, "unknown, never stale")

	many := make([]string, 12)
	for i := range many {
		many[i] = "p" + string(rune('a'+i))
	}
	require.Equal(t, "pods pa, pb, pc, pd, pe, pf, pg, ph, pi, pj and 2 more", describePods(many))
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
		cond := meta.FindStatusCondition(st.Conditions, conditionConfigApplied)
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
		cond := meta.FindStatusCondition(cp.status(t, srv).Conditions, conditionConfigApplied)
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
		cond := meta.FindStatusCondition(cp.status(t, srv).Conditions, conditionConfigApplied)
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
