package sidecar

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/contract"
)

// ConditionConfigApplied is True when every ready replica of an object
// runs the content the controller last wrote, as the config-reloaders
// report it in their pods (contract.AppliedAnnotation, written under the
// grant of Role): the pods are what the controller watches anyway, the
// report needs no port to scrape and no other process, and the sidecar
// may patch its own pod only.
const ConditionConfigApplied = "ConfigApplied"

// maxPodsNamed bounds the pods a ConfigApplied message names.
const maxPodsNamed = 10

// Applied returns what each pod of pods runs, by name, and the
// ConfigApplied condition for want, the content hash last written.
func Applied(want string, pods []corev1.Pod) ([]v1alpha1.ReplicaStatus, metav1.Condition) {
	pods = slices.SortedFunc(slices.Values(pods), func(a, b corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	var (
		replicas                   []v1alpha1.ReplicaStatus
		pending, rejected, unknown []string
		message                    string
		ready                      int
	)
	for _, pod := range pods {
		rs := replicaStatus(pod, want)
		replicas = append(replicas, rs)
		if !podReady(pod) {
			continue
		}
		ready++
		switch rs.State {
		case v1alpha1.ReplicaRejected:
			rejected = append(rejected, pod.Name)
			message = cmp.Or(message, rs.LastRejection.Message)
		case v1alpha1.ReplicaPending:
			pending = append(pending, pod.Name)
		case v1alpha1.ReplicaUnknown:
			unknown = append(unknown, pod.Name)
		}
	}
	cond := metav1.Condition{Type: ConditionConfigApplied, Status: metav1.ConditionFalse, Reason: "Pending"}
	var waiting []string
	if len(pending) > 0 {
		waiting = append(waiting, fmt.Sprintf("%s not running %.12s yet", describePods(pending), want))
	}
	if len(unknown) > 0 {
		waiting = append(waiting, fmt.Sprintf("%s not reporting what %s", describePods(unknown), plural(len(unknown), "it runs", "they run")))
	}
	switch {
	case want == "":
		cond.Message = "no configuration written yet"
	case len(rejected) > 0:
		cond.Reason = "Rejected"
		cond.Message = fmt.Sprintf("Rejected: %s (%s)", message, describePods(rejected))
	case len(waiting) > 0:
		cond.Message = strings.Join(waiting, "; ")
	case ready == 0:
		cond.Message = "no ready replica"
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, "Applied"
		cond.Message = fmt.Sprintf("every ready replica runs %.12s", want)
	}
	return replicas, cond
}

// replicaStatus reads what pod reports and compares it with want. A
// report that cannot be read, or the report of a pod not ready (it may be
// restarting, its last report stale), leaves the pod Unknown.
func replicaStatus(pod corev1.Pod, want string) v1alpha1.ReplicaStatus {
	rs := v1alpha1.ReplicaStatus{Pod: pod.Name, State: v1alpha1.ReplicaUnknown}
	var a contract.Applied
	if json.Unmarshal([]byte(pod.Annotations[contract.AppliedAnnotation]), &a) != nil {
		return rs
	}
	rs.AppliedHash, rs.AppliedTime = a.Hash, parseTime(a.Time)
	if a.Rejection != nil {
		rs.LastRejection = &v1alpha1.Rejection{Message: a.Rejection.Message, Time: parseTime(a.Rejection.Time)}
	}
	switch {
	case !podReady(pod):
	case rs.LastRejection != nil:
		rs.State = v1alpha1.ReplicaRejected
	case a.Hash == "":
	case a.Hash == want:
		rs.State = v1alpha1.ReplicaApplied
	default:
		rs.State = v1alpha1.ReplicaPending
	}
	return rs
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func parseTime(s string) *metav1.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return nil
	}
	return &metav1.Time{Time: t}
}

func podReady(pod corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && slices.ContainsFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}

// describePods names pods, the first maxPodsNamed of them.
func describePods(pods []string) string {
	what := "pod "
	if len(pods) > 1 {
		what = "pods "
	}
	if len(pods) > maxPodsNamed {
		return what + strings.Join(pods[:maxPodsNamed], ", ") + fmt.Sprintf(" and %d more", len(pods)-maxPodsNamed)
	}
	return what + strings.Join(pods, ", ")
}

// PodChanged passes the pod events that may change ConfigApplied: a pod
// created or deleted, its report or its readiness changed.
func PodChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, okOld := e.ObjectOld.(*corev1.Pod)
			pod, ok := e.ObjectNew.(*corev1.Pod)
			if !ok || !okOld {
				return true
			}
			return old.Annotations[contract.AppliedAnnotation] != pod.Annotations[contract.AppliedAnnotation] ||
				podReady(*old) != podReady(*pod)
		},
	}
}
