package prometheusserver

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/controlplane"
)

// testTakeoverNewerCRD: with the Prometheus CRD of a newer
// prometheus-operator, a Prometheus setting a field of it that the types
// do not know (which the typed cache drops) is refused by the field's
// path, nothing written; without the field, it is taken over.
func (cp *controlPlane) testTakeoverNewerCRD(t *testing.T) {
	ns := cp.namespace(t, "newer-crd", nil)
	controlplane.NewerCRD(t, cp.c, "prometheuses.monitoring.coreos.com", monitoringv1.SchemeGroupVersion.String(), monitoringv1.PrometheusesKind, ns, "futureScrapeSetting")
	p := operatorPrometheus(ns, "newer", "podreload")
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(monitoringv1.SchemeGroupVersion.String())
	u.SetKind(monitoringv1.PrometheusesKind)
	require.NoError(t, unstructured.SetNestedField(u.Object, true, "spec", "futureScrapeSetting"))
	require.NoError(t, cp.c.Create(t.Context(), u))
	cp.startTakingOver(t, kube.Options{Namespaces: []string{ns}}, &takeover.Options{ControllerID: "podreload"})

	want := "not taken over, nothing written: not supported yet: spec.futureScrapeSetting: a field of a newer prometheus-operator, not known to this release (docs/prometheus-operator.md); remove the operator.prometheus.io/controller-id annotation to hand it back to prometheus-operator"
	eventually(t, func(c *assert.CollectT) {
		var live monitoringv1.Prometheus
		if !assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKeyFromObject(p), &live)) {
			return
		}
		cond := takeover.FindCondition(live.Status.Conditions, takeover.ConditionUnsupportedFields)
		if assert.NotNil(c, cond) {
			assert.Equal(c, monitoringv1.ConditionTrue, cond.Status)
			assert.Equal(c, want, cond.Message)
		}
	})
	err = cp.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "prometheus-newer"}, &appsv1.StatefulSet{})
	require.True(t, apierrors.IsNotFound(err), "no StatefulSet for a refused Prometheus: %v", err)

	// The field removed: taken over.
	controlplane.Edit(t, cp.c, u, func(u *unstructured.Unstructured) {
		unstructured.RemoveNestedField(u.Object, "spec", "futureScrapeSetting")
	})
	eventually(t, func(c *assert.CollectT) {
		assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "prometheus-newer"}, &appsv1.StatefulSet{}))
	})
}
