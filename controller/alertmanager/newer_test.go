package alertmanager

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/controlplane"
)

// testNewerCRD: with the Alertmanager CRD of a newer prometheus-operator,
// an Alertmanager setting a field of it that the types do not know
// (which the typed cache drops) is refused by the field's path, nothing
// written.
func testNewerCRD(t *testing.T, env *controlplane.ControlPlane) {
	c := controlplane.NewClient(t, env.Config, AddToScheme)
	ctx := t.Context()
	ns := "am-newer-crd"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	controlplane.NewerCRD(t, c, "alertmanagers.monitoring.coreos.com", monitoringv1.SchemeGroupVersion.String(), monitoringv1.AlertmanagersKind, ns, "futureClusterSetting")
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(testAlertmanager(ns, "newer", "podreload"))
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: obj}
	require.NoError(t, unstructured.SetNestedField(u.Object, true, "spec", "futureClusterSetting"))
	require.NoError(t, c.Create(ctx, u))
	start(t, env.Config, ns)

	want := "not taken over, nothing written: not supported yet: spec.futureClusterSetting: a field of a newer prometheus-operator, not known to this release (docs/prometheus-operator.md); remove the operator.prometheus.io/controller-id annotation to hand it back to prometheus-operator"
	eventually(t, func(ct *assert.CollectT) {
		var live monitoringv1.Alertmanager
		if !assert.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "newer"}, &live)) {
			return
		}
		cond := takeover.FindCondition(live.Status.Conditions, takeover.ConditionUnsupportedFields)
		if assert.NotNil(ct, cond) {
			assert.Equal(ct, want, cond.Message)
		}
	})
	require.True(t, apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alertmanager-newer"}, &appsv1.StatefulSet{})))
}
