package prometheusserver

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/takeover"
)

// testTakeoverServiceName: a Prometheus whose governing Service is the
// user's (spec.serviceName), its StatefulSet written by
// prometheus-operator with that Service. As prometheus-operator, nothing
// is written while the Service is missing or selects other pods, and the
// reconcile is retried; then the StatefulSet is adopted, its serviceName
// kept, and prometheus-operated is not created. automountServiceAccountToken
// false: the pods mount no token and ConfigApplied says nothing is
// reported.
func (cp *controlPlane) testTakeoverServiceName(t *testing.T) {
	ns := cp.namespace(t, "takeover-service", nil)
	p := operatorPrometheus(ns, "k8s", "podreload")
	p.Spec.ServiceName = ptr.To("mine")
	p.Spec.AutomountServiceAccountToken = ptr.To(false)
	cp.create(t, p)
	opSTS := operatorWrittenStatefulSet(p)
	opSTS.Spec.ServiceName = "mine"
	require.NoError(t, cp.c.Create(t.Context(), opSTS, client.FieldOwner(takeover.OperatorFieldManager)))
	cp.startTakingOver(t, kube.Options{Namespaces: []string{ns}}, &takeover.Options{ControllerID: "podreload"})

	reconciled := func(c *assert.CollectT) *monitoringv1.Condition {
		var live monitoringv1.Prometheus
		if !assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKeyFromObject(p), &live)) {
			return nil
		}
		rec := takeover.FindCondition(live.Status.Conditions, promserver.ConditionReconciled)
		assert.NotNil(c, rec)
		return rec
	}
	eventually(t, func(c *assert.CollectT) {
		if rec := reconciled(c); rec != nil {
			assert.Equal(c, monitoringv1.ConditionFalse, rec.Status)
			assert.Contains(c, rec.Message, `spec.serviceName: get the governing Service `+ns+`/mine: services "mine" not found`)
		}
	})
	stsKey := client.ObjectKeyFromObject(opSTS)
	var sts appsv1.StatefulSet
	require.NoError(t, cp.c.Get(t.Context(), stsKey, &sts))
	require.Equal(t, opSTS.ResourceVersion, sts.ResourceVersion, "nothing written without the governing Service")

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mine"},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"prometheus": "other"}, Ports: []corev1.ServicePort{{Name: "web", Port: 9090}}},
	}
	cp.create(t, svc)
	eventually(t, func(c *assert.CollectT) {
		if rec := reconciled(c); rec != nil {
			assert.Equal(c, monitoringv1.ConditionFalse, rec.Status)
			assert.Contains(c, rec.Message, `spec.serviceName: the governing Service `+ns+`/mine with selector "prometheus=other" does not select the pods`)
		}
	})
	require.NoError(t, cp.c.Get(t.Context(), stsKey, &sts))
	require.Equal(t, opSTS.ResourceVersion, sts.ResourceVersion, "nothing written while the Service selects other pods")

	edit(t, cp.c, svc, func(s *corev1.Service) { s.Spec.Selector = map[string]string{"prometheus": "k8s"} })
	eventually(t, func(c *assert.CollectT) {
		if rec := reconciled(c); rec != nil {
			assert.Equal(c, monitoringv1.ConditionTrue, rec.Status, rec.Message)
		}
		var live monitoringv1.Prometheus
		if assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKeyFromObject(p), &live)) {
			if applied := takeover.FindCondition(live.Status.Conditions, promserver.ConditionConfigApplied); assert.NotNil(c, applied) {
				assert.Equal(c, monitoringv1.ConditionUnknown, applied.Status)
				assert.Equal(c, "NotReported", applied.Reason)
			}
		}
	})
	require.NoError(t, cp.c.Get(t.Context(), stsKey, &sts))
	require.Equal(t, opSTS.UID, sts.UID, "adopted, not created again")
	require.Equal(t, "mine", sts.Spec.ServiceName)
	require.Equal(t, ptr.To(false), sts.Spec.Template.Spec.AutomountServiceAccountToken)
	err := cp.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "prometheus-operated"}, &corev1.Service{})
	require.True(t, apierrors.IsNotFound(err), "no prometheus-operated with a governing Service of the user's: %v", err)
}
