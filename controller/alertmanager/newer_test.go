package alertmanager

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	amcfg "github.com/prometheus/alertmanager/config"
	"github.com/prometheus/common/model"
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
	"github.com/podreload/podreload/internal/testenv/metricvalue"
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

// testNewerConfigCRD: with the AlertmanagerConfig CRD of a newer
// prometheus-operator, an AlertmanagerConfig setting a field of it that
// the types do not know (which the typed cache drops, and the
// configuration could not carry) is left out by the field's path, as any
// other left out: its binding says why, a Warning Event on it, the
// left-out gauge; another one of the same Alertmanager is in. The field
// removed, it is in too. One with prometheus-operator v0.95's route
// labels, which the types know, is in on the default version (0.34),
// its labels in the configuration; with spec.version before 0.34 it is
// left out, saying why.
func testNewerConfigCRD(t *testing.T, env *controlplane.ControlPlane) {
	c := controlplane.NewClient(t, env.Config, AddToScheme)
	ctx := t.Context()
	ns := "am-newer-amc"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	controlplane.NewerCRD(t, c, "alertmanagerconfigs.monitoring.coreos.com", monitoringv1alpha1.SchemeGroupVersion.String(), monitoringv1alpha1.AlertmanagerConfigKind, ns, "futureRouting")
	am := testAlertmanager(ns, "main", "podreload")
	am.Spec.AlertmanagerConfigSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	require.NoError(t, c.Create(ctx, am))
	config := func(name string) *monitoringv1alpha1.AlertmanagerConfig {
		amc := &monitoringv1alpha1.AlertmanagerConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": "a"}}}
		amc.Spec.Route = &monitoringv1alpha1.Route{Receiver: "null"}
		amc.Spec.Receivers = []monitoringv1alpha1.Receiver{{Name: "null"}}
		return amc
	}
	known, newer, labelled := config("known"), config("newer"), config("labelled")
	require.NoError(t, c.Create(ctx, known))
	// prometheus-operator v0.95's route labels, which the types know and
	// Alertmanager 0.34 reads.
	labelled.Spec.Route.Labels = []monitoringv1alpha1.KeyValue{{Key: "team", Value: "a"}}
	require.NoError(t, c.Create(ctx, labelled))
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(newer)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(monitoringv1alpha1.SchemeGroupVersion.String())
	u.SetKind(monitoringv1alpha1.AlertmanagerConfigKind)
	require.NoError(t, unstructured.SetNestedField(u.Object, true, "spec", "futureRouting"))
	require.NoError(t, c.Create(ctx, u))
	reg := start(t, env.Config, ns)

	const why = "spec.futureRouting: a field of a newer prometheus-operator, not known to this release"
	waitAccepted(t, c, newer, am, monitoringv1.ConditionFalse, why)
	waitAccepted(t, c, known, am, monitoringv1.ConditionTrue, "")
	waitAccepted(t, c, labelled, am, monitoringv1.ConditionTrue, "")
	eventually(t, func(ct *assert.CollectT) {
		assert.True(ct, hasEvent(t, c, ns, "newer", "LeftOut", "left out of Alertmanager "+ns+"/main: "+why), "the LeftOut Event on the AlertmanagerConfig")
	})
	require.InDelta(t, 1, metricvalue.Sum(t, reg, "podreload_controller_alertmanagerconfigs_left_out"), 0)
	eventually(t, func(ct *assert.CollectT) {
		var s corev1.Secret
		if !assert.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alertmanager-main-generated"}, &s)) {
			return
		}
		cfg, err := amcfg.Load(gunzip(t, s.Data[configKey]))
		if !assert.NoError(ct, err) {
			return
		}
		var labels []model.LabelSet
		for _, r := range cfg.Route.Routes {
			if r.Receiver == ns+"/labelled/null" {
				labels = append(labels, r.Labels)
			}
		}
		assert.Equal(ct, []model.LabelSet{{"team": "a"}}, labels, "the labelled route in the configuration")
	})

	// Before Alertmanager 0.34 it is left out.
	controlplane.Edit(t, c, am, func(a *monitoringv1.Alertmanager) { a.Spec.Version = "v0.33.1" })
	waitAccepted(t, c, labelled, am, monitoringv1.ConditionFalse, "route: labels needs Alertmanager 0.34 or later, the Alertmanager runs v0.33.1")
	require.NoError(t, c.Delete(ctx, labelled))

	// A typed update writes no field the types do not know.
	controlplane.Edit(t, c, newer, func(a *monitoringv1alpha1.AlertmanagerConfig) {
		a.Spec.Route.GroupBy = []string{"alertname"}
	})
	waitAccepted(t, c, newer, am, monitoringv1.ConditionTrue, "")
	eventually(t, func(ct *assert.CollectT) {
		assert.InDelta(ct, 0, metricvalue.Sum(t, reg, "podreload_controller_alertmanagerconfigs_left_out"), 0)
	})
}
