package alertmanager

import (
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/alertmanager/amconfig"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/metricvalue"
)

// globalAlertmanager is an Alertmanager of ns whose base configuration is
// the AlertmanagerConfig global: a resolve timeout and SMTP settings, the
// password from the Secret smtp, and two templates, from the ConfigMap
// and the Secret templates.
func globalAlertmanager(ns string) *monitoringv1.Alertmanager {
	am := testAlertmanager(ns, "main", "podreload")
	am.Spec.Secrets = nil
	am.Spec.AlertmanagerConfiguration = &monitoringv1.AlertmanagerConfiguration{
		Name: "global",
		Global: &monitoringv1.AlertmanagerGlobalConfig{
			ResolveTimeout: "7m",
			SMTPConfig: &monitoringv1.GlobalSMTPConfig{
				From:         ptr.To("am@example.org"),
				SmartHost:    &monitoringv1.HostPort{Host: "smtp.example.org", Port: "587"},
				AuthUsername: ptr.To("am"),
				AuthPassword: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "smtp"}, Key: "password"},
			},
		},
		Templates: []monitoringv1.SecretOrConfigMap{
			{ConfigMap: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "templates"}, Key: "team.tmpl"}},
			{Secret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "templates"}, Key: "page.tmpl"}},
			// A key already projected is skipped, as prometheus-operator skips it.
			{Secret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "templates"}, Key: "team.tmpl"}},
		},
	}
	return am
}

// globalConfigObject is the AlertmanagerConfig global of ns, routing to a
// webhook at url.
func globalConfigObject(ns, url string) *monitoringv1alpha1.AlertmanagerConfig {
	amc := &monitoringv1alpha1.AlertmanagerConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "global"}}
	amc.Spec.Route = &monitoringv1alpha1.Route{Receiver: "hook", GroupBy: []string{"alertname"}}
	amc.Spec.Receivers = []monitoringv1alpha1.Receiver{{Name: "hook", WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{URL: ptr.To(url)}}}}
	return amc
}

// testGlobal: an Alertmanager with spec.alertmanagerConfiguration is taken
// over; its generated configuration is amconfig's from the
// AlertmanagerConfig it names, with the global settings and the templates
// mounted where the configuration names them; an edit of that
// AlertmanagerConfig, or of a Secret it reads, renders again; deleted, the
// last good configuration is kept and the status, an Event and the
// errors counter say why; created again, it is used again.
func testGlobal(t *testing.T, env *controlplane.ControlPlane) {
	c := controlplane.NewClient(t, env.Config, AddToScheme)
	ctx := t.Context()
	ns := "am-global"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	// The configSecret, which the global configuration replaces: not read.
	require.NoError(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alertmanager-main"},
		Data:       map[string][]byte{"alertmanager.yaml": []byte(baseConfig), "base.tmpl": []byte("base")},
	}))
	smtp := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "smtp"}, Data: map[string][]byte{"password": []byte("first-password")}}
	require.NoError(t, c.Create(ctx, smtp))
	amc := globalConfigObject(ns, "http://hook.example/first")
	require.NoError(t, c.Create(ctx, amc))
	am := globalAlertmanager(ns)
	require.NoError(t, c.Create(ctx, am))
	reg := start(t, env.Config, ns)

	// generated waits for the generated configuration to contain want, and
	// returns it.
	generated := func(want string) string {
		t.Helper()
		var config string
		eventually(t, func(ct *assert.CollectT) {
			var s corev1.Secret
			if !assert.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alertmanager-main-generated"}, &s)) {
				return
			}
			config = gunzip(t, s.Data[configKey])
			assert.Contains(ct, config, want)
		})
		return config
	}
	// expected is amconfig's configuration of the objects as they are.
	expected := func() string {
		t.Helper()
		var live monitoringv1.Alertmanager
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(am), &live))
		var liveAMC monitoringv1alpha1.AlertmanagerConfig
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(amc), &liveAMC))
		want, err := amconfig.Generate(ctx, amconfig.Input{Alertmanager: &live, Configuration: &liveAMC, Resolver: &resolver{reader: c}})
		require.NoError(t, err)
		return string(want.Config)
	}

	config := generated("http://hook.example/first")
	require.Equal(t, expected(), config)
	for _, want := range []string{
		"resolve_timeout: 7m", "smtp_smarthost: smtp.example.org:587", "smtp_auth_password: first-password",
		"- " + amconfig.TemplatesDir + "/team.tmpl", "- " + amconfig.TemplatesDir + "/page.tmpl",
	} {
		require.Contains(t, config, want)
	}
	require.NotContains(t, config, "receiver: team", "the configSecret is not read")
	var s corev1.Secret
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alertmanager-main-generated"}, &s))
	require.NotContains(t, s.Data, "base.tmpl", "nor are its other keys copied")

	// The templates, mounted where the configuration names them, in
	// Alertmanager and the reloaders, which watch them.
	var sts appsv1.StatefulSet
	eventually(t, func(ct *assert.CollectT) {
		assert.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alertmanager-main"}, &sts))
	})
	pod := sts.Spec.Template.Spec
	i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == templatesVolume })
	require.GreaterOrEqual(t, i, 0, "the templates' volume")
	require.Equal(t, []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "templates"}, Items: []corev1.KeyToPath{{Key: "team.tmpl", Path: "team.tmpl"}}}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "templates"}, Items: []corev1.KeyToPath{{Key: "page.tmpl", Path: "page.tmpl"}}}},
	}, pod.Volumes[i].Projected.Sources)
	mount := corev1.VolumeMount{Name: "notification-templates", MountPath: "/etc/alertmanager/templates", ReadOnly: true}
	for _, ctr := range []corev1.Container{pod.Containers[0], pod.Containers[1], pod.InitContainers[0]} {
		require.Contains(t, ctr.VolumeMounts, mount, ctr.Name)
	}
	require.Contains(t, pod.Containers[1].Args, "--watched-dir=/etc/alertmanager/templates")
	require.Contains(t, pod.InitContainers[0].Args, "--watched-dir=/etc/alertmanager/templates")

	// An edit of the AlertmanagerConfig renders again; so does one of a
	// Secret it reads.
	controlplane.Edit(t, c, amc, func(a *monitoringv1alpha1.AlertmanagerConfig) {
		a.Spec.Receivers[0].WebhookConfigs[0].URL = ptr.To("http://hook.example/second")
	})
	require.Equal(t, expected(), generated("http://hook.example/second"))
	controlplane.Edit(t, c, smtp, func(s *corev1.Secret) { s.Data["password"] = []byte("second-password") })
	require.Equal(t, expected(), generated("smtp_auth_password: second-password"))
	waitReconciled(t, c, am, metav1.ConditionTrue, "Reconciled", "")

	// Deleted: the last good configuration stays, and the status, an Event
	// and the errors counter say why.
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alertmanager-main-generated"}, &s))
	before := s.Data[configKey]
	errorsBefore := metricvalue.Sum(t, reg, "podreload_controller_reconcile_errors_total", "kind", "Alertmanager")
	require.NoError(t, c.Delete(ctx, amc))
	why := "the last good configuration is kept: alertmanager " + ns + "/main: spec.alertmanagerConfiguration: AlertmanagerConfig " + ns + "/global not found"
	waitReconciled(t, c, am, metav1.ConditionFalse, "InvalidConfiguration", why)
	eventually(t, func(ct *assert.CollectT) {
		assert.True(ct, hasEvent(t, c, ns, "main", "InvalidConfiguration", why), "the InvalidConfiguration Event")
	})
	require.Greater(t, metricvalue.Sum(t, reg, "podreload_controller_reconcile_errors_total", "kind", "Alertmanager"), errorsBefore, "counted")
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(&s), &s))
	require.Equal(t, before, s.Data[configKey], "the last good configuration kept")

	// Created again: used again.
	amc = globalConfigObject(ns, "http://hook.example/third")
	require.NoError(t, c.Create(ctx, amc))
	require.Equal(t, expected(), generated("http://hook.example/third"))
	waitReconciled(t, c, am, metav1.ConditionTrue, "Reconciled", "")
}

// waitReconciled waits for am's Reconciled condition to have status and
// reason, and a message containing message.
func waitReconciled(t *testing.T, c client.Client, am *monitoringv1.Alertmanager, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	eventually(t, func(ct *assert.CollectT) {
		var live monitoringv1.Alertmanager
		if !assert.NoError(ct, c.Get(t.Context(), client.ObjectKeyFromObject(am), &live)) {
			return
		}
		if rec := takeover.FindCondition(live.Status.Conditions, conditionReconciled); assert.NotNil(ct, rec) {
			assert.Equal(ct, monitoringv1.ConditionStatus(status), rec.Status)
			assert.Equal(ct, reason, rec.Reason)
			assert.True(ct, strings.Contains(rec.Message, message), "message %q does not contain %q", rec.Message, message)
		}
	})
}
