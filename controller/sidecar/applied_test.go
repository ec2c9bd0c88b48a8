package sidecar

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/contract"
)

// testPod is a pod, ready when ready, reporting applied unless nil.
func testPod(name string, ready bool, applied *contract.Applied) corev1.Pod {
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
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
		{"nothing written", "", []corev1.Pod{testPod("main-0", true, good)}, metav1.ConditionFalse, "Pending", "no configuration written yet"},
		{"no pod", good.Hash, nil, metav1.ConditionFalse, "Pending", "no ready replica"},
		{"applied", good.Hash, []corev1.Pod{testPod("main-1", true, good), testPod("main-0", true, good)}, metav1.ConditionTrue, "Applied", "every ready replica runs aaaaaaaaaaaa"},
		{"unready pods do not count", good.Hash, []corev1.Pod{testPod("main-0", true, good), testPod("main-1", false, old)}, metav1.ConditionTrue, "Applied", "every ready replica runs aaaaaaaaaaaa"},
		{"pending", good.Hash, []corev1.Pod{testPod("main-0", true, old), testPod("main-3", true, old), testPod("main-2", true, good)}, metav1.ConditionFalse, "Pending", "pods main-0, main-3 not running aaaaaaaaaaaa yet"},
		{"unknown", good.Hash, []corev1.Pod{testPod("main-0", true, nil), testPod("main-1", true, good)}, metav1.ConditionFalse, "Pending", "pod main-0 not reporting what it runs"},
		{"pending and unknown", good.Hash, []corev1.Pod{testPod("main-0", true, old), testPod("main-1", true, nil), testPod("main-2", true, nil)}, metav1.ConditionFalse, "Pending", "pod main-0 not running aaaaaaaaaaaa yet; pods main-1, main-2 not reporting what they run"},
		{"rejected", good.Hash, []corev1.Pod{testPod("main-0", true, old), testPod("main-1", true, rejected)}, metav1.ConditionFalse, "Rejected", "Rejected: status 500: bad (pod main-1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, cond := Applied(tc.want, tc.pods)
			require.Equal(t, metav1.Condition{Type: ConditionConfigApplied, Status: tc.status, Reason: tc.reason, Message: tc.message}, cond)
		})
	}

	replicas, _ := Applied(good.Hash, []corev1.Pod{
		testPod("main-1", true, rejected), testPod("main-0", true, nil), testPod("main-2", true, good),
		testPod("main-3", true, old), testPod("main-4", false, good),
	})
	require.Equal(t, []v1alpha1.ReplicaStatus{
		{Pod: "main-0", State: v1alpha1.ReplicaUnknown},
		{Pod: "main-1", State: v1alpha1.ReplicaRejected, AppliedHash: rejected.Hash, AppliedTime: atTime, LastRejection: &v1alpha1.Rejection{Message: "status 500: bad", Time: atTime}},
		{Pod: "main-2", State: v1alpha1.ReplicaApplied, AppliedHash: good.Hash, AppliedTime: atTime},
		{Pod: "main-3", State: v1alpha1.ReplicaPending, AppliedHash: old.Hash, AppliedTime: atTime},
		{Pod: "main-4", State: v1alpha1.ReplicaUnknown, AppliedHash: good.Hash, AppliedTime: atTime},
	}, replicas, "a pod not ready is unknown, whatever it last reported")
	unreadable := testPod("main-0", true, nil)
	unreadable.Annotations = map[string]string{contract.AppliedAnnotation: "{"}
	replicas, _ = Applied(good.Hash, []corev1.Pod{unreadable})
	require.Equal(t, []v1alpha1.ReplicaStatus{{Pod: "main-0", State: v1alpha1.ReplicaUnknown}}, replicas, "unknown, never stale")

	many := make([]string, 12)
	for i := range many {
		many[i] = "p" + string(rune('a'+i))
	}
	require.Equal(t, "pods pa, pb, pc, pd, pe, pf, pg, ph, pi, pj and 2 more", describePods(many))
}
