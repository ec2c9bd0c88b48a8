package prometheusserver

import (
	"testing"

	promkind "github.com/podreload/podreload/controller/prometheus"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/takeover"
)

// testTakeoverPodHandBack: a Prometheus handed back while a pod runs the
// controller's sidecar keeps the reloaders' Role; the pod's deletion,
// which only the status reconciler sees, hands it back the rest of the
// way (the Role goes), as for an Alertmanager (takeover.ReleaseAccess).
func (cp *controlPlane) testTakeoverPodHandBack(t *testing.T) {
	ns := cp.namespace(t, "takeover-pod", nil)
	p := operatorPrometheus(ns, "k8s", "podreload")
	cp.create(t, p)
	run := cp.startTakingOver(t, kube.Options{Namespaces: []string{ns}}, &takeover.Options{ControllerID: "podreload"})
	var sts appsv1.StatefulSet
	cp.waitFor(t, client.ObjectKey{Namespace: ns, Name: "prometheus-k8s"}, &sts)
	var role rbacv1.Role
	cp.waitFor(t, client.ObjectKey{Namespace: ns, Name: "prometheus-k8s-podreload"}, &role)
	// A pod of the StatefulSet running the controller's sidecar (no
	// kubelet runs here).
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus-k8s-0", Labels: sts.Spec.Template.Labels,
			Annotations: map[string]string{kube.AnnotationInputHash: "x"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "prometheus", Image: "x"}}},
	}
	require.NoError(t, cp.c.Create(t.Context(), pod))
	eventually(t, func(c *assert.CollectT) {
		var live monitoringv1.Prometheus
		if assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKeyFromObject(p), &live)) {
			assert.NotNil(c, takeover.FindCondition(live.Status.Conditions, promserver.ConditionConfigApplied), "taken over")
		}
	})
	run.settle(t)

	edit(t, cp.c, p, func(p *monitoringv1.Prometheus) { p.Annotations[promkind.AnnotationControllerID] = "" })
	eventually(t, func(c *assert.CollectT) {
		var live monitoringv1.Prometheus
		if assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKeyFromObject(p), &live)) {
			assert.Nil(c, takeover.FindCondition(live.Status.Conditions, promserver.ConditionConfigApplied), "our condition removed")
		}
	})
	run.settle(t)
	require.NoError(t, cp.c.Get(t.Context(), client.ObjectKeyFromObject(&role), &role), "a pod still runs our sidecar: the Role stays")

	require.NoError(t, cp.c.Delete(t.Context(), pod, client.GracePeriodSeconds(0)))
	eventually(t, func(c *assert.CollectT) {
		err := cp.c.Get(t.Context(), client.ObjectKeyFromObject(&role), &rbacv1.Role{})
		assert.True(c, apierrors.IsNotFound(err), "the Role deleted once the pod is gone: %v", err)
	})
	require.NoError(t, cp.c.Get(t.Context(), client.ObjectKeyFromObject(&sts), &appsv1.StatefulSet{}), "nothing else deleted")
}
