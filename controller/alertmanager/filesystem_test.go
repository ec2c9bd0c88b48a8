package alertmanager

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/metricvalue"
)

// testFileSystemMode: a tenant's AlertmanagerConfig that references a
// file of the Alertmanager container is left out by default
// (prometheus-operator v0.95's spec.alertmanagerConfigFileSystemMode,
// unset), as any other left out: its binding says why, a Warning Event
// on it, the left-out gauge; AllowAll brings it in, DenyAll leaves it out
// again.
func testFileSystemMode(t *testing.T, env *controlplane.ControlPlane) {
	c := controlplane.NewClient(t, env.Config, AddToScheme)
	ctx := t.Context()
	ns, team := "am-fs", "am-fs-team"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: team, Labels: map[string]string{"am-fs": "tenant"}}}))
	am := testAlertmanager(ns, "main", "podreload")
	am.Spec.AlertmanagerConfigSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	am.Spec.AlertmanagerConfigNamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"am-fs": "tenant"}}
	require.NoError(t, c.Create(ctx, am))
	tenant := &monitoringv1alpha1.AlertmanagerConfig{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "tg", Labels: map[string]string{"team": "a"}}}
	tenant.Spec.Route = &monitoringv1alpha1.Route{Receiver: "ops"}
	tenant.Spec.Receivers = []monitoringv1alpha1.Receiver{{Name: "ops", TelegramConfigs: []monitoringv1alpha1.TelegramConfig{{
		BotTokenFile: ptr.To("/var/run/secrets/kubernetes.io/serviceaccount/token"), ChatID: 12345,
	}}}}
	require.NoError(t, c.Create(ctx, tenant))
	reg := start(t, env.Config, ns, team)

	const why = "receiver ops: telegramConfigs[0].botTokenFile: a file of the Alertmanager container, which spec.alertmanagerConfigFileSystemMode "
	waitAccepted(t, c, tenant, am, monitoringv1.ConditionFalse, why+"unset (FromAlertmanagerConfigMatcherStrategy, prometheus-operator v0.95's default) with matcher strategy OnNamespace forbids here")
	eventually(t, func(ct *assert.CollectT) {
		assert.True(ct, hasEvent(t, c, team, "tg", "LeftOut", "left out of Alertmanager "+ns+"/main: "+why), "the LeftOut Event on the AlertmanagerConfig")
	})
	require.InDelta(t, 1, metricvalue.Sum(t, reg, "podreload_controller_alertmanagerconfigs_left_out"), 0)

	controlplane.Edit(t, c, am, func(a *monitoringv1.Alertmanager) {
		a.Spec.AlertmanagerConfigFileSystemMode = ptr.To(monitoringv1.AllowAllAlertmanagerConfigFileSystemMode)
	})
	waitAccepted(t, c, tenant, am, monitoringv1.ConditionTrue, "")
	eventually(t, func(ct *assert.CollectT) {
		assert.InDelta(ct, 0, metricvalue.Sum(t, reg, "podreload_controller_alertmanagerconfigs_left_out"), 0)
	})

	controlplane.Edit(t, c, am, func(a *monitoringv1.Alertmanager) {
		a.Spec.AlertmanagerConfigFileSystemMode = ptr.To(monitoringv1.DenyAllAlertmanagerConfigFileSystemMode)
		a.Spec.AlertmanagerConfigMatcherStrategy.Type = monitoringv1.NoneConfigMatcherStrategyType
	})
	waitAccepted(t, c, tenant, am, monitoringv1.ConditionFalse, why+"DenyAll forbids here")
}
