package alertmanager

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/metricvalue"
)

// webhookConfig is an AlertmanagerConfig of ns labelled team=a that
// routes to a webhook at url, or at the URL of a Secret's key when url is
// empty.
func webhookConfig(ns, name, url string) *monitoringv1alpha1.AlertmanagerConfig {
	amc := &monitoringv1alpha1.AlertmanagerConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": "a"}}}
	amc.Spec.Route = &monitoringv1alpha1.Route{Receiver: "hook"}
	hook := monitoringv1alpha1.WebhookConfig{URL: ptr.To(url)}
	if url == "" {
		hook = monitoringv1alpha1.WebhookConfig{URLSecret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "hook"}, Key: "url"}}
	}
	amc.Spec.Receivers = []monitoringv1alpha1.Receiver{{Name: "hook", WebhookConfigs: []monitoringv1alpha1.WebhookConfig{hook}}}
	return amc
}

// bindingOf is the Accepted condition of am's binding on the live
// AlertmanagerConfig amc, nil when it has none.
func bindingOf(ctx context.Context, ct *assert.CollectT, c client.Client, amc *monitoringv1alpha1.AlertmanagerConfig, am *monitoringv1.Alertmanager) *monitoringv1.ConfigResourceCondition {
	var live monitoringv1alpha1.AlertmanagerConfig
	if !assert.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(amc), &live)) {
		return &monitoringv1.ConfigResourceCondition{Message: "unread"}
	}
	amc.Generation = live.Generation
	b := findBinding(&live, client.ObjectKeyFromObject(am))
	if b == nil {
		return nil
	}
	assert.Len(ct, b.Conditions, 1)
	cond := liveAccepted(b)
	if cond == nil {
		return &monitoringv1.ConfigResourceCondition{Message: "no Accepted condition"}
	}
	return cond
}

// waitAccepted waits until am's binding on amc says status, with a
// message containing message, at amc's generation.
func waitAccepted(t *testing.T, c client.Client, amc *monitoringv1alpha1.AlertmanagerConfig, am *monitoringv1.Alertmanager, status monitoringv1.ConditionStatus, message string) {
	t.Helper()
	eventually(t, func(ct *assert.CollectT) {
		cond := bindingOf(t.Context(), ct, c, amc, am)
		if !assert.NotNil(ct, cond, "the binding of Alertmanager %s on %s", am.Name, amc.Name) {
			return
		}
		assert.Equal(ct, status, cond.Status)
		assert.Equal(ct, amc.Generation, cond.ObservedGeneration)
		assert.False(ct, cond.LastTransitionTime.IsZero())
		if status == monitoringv1.ConditionTrue {
			assert.Empty(ct, cond.Reason)
			assert.Empty(ct, cond.Message)
		} else {
			assert.Equal(ct, reasonInvalidConfiguration, cond.Reason)
			assert.Contains(ct, cond.Message, message)
		}
	}, "Alertmanager %s's binding on AlertmanagerConfig %s", am.Name, amc.Name)
}

// waitUnbound waits until amc has no binding of am.
func waitUnbound(t *testing.T, c client.Client, amc *monitoringv1alpha1.AlertmanagerConfig, am *monitoringv1.Alertmanager) {
	t.Helper()
	eventually(t, func(ct *assert.CollectT) {
		assert.Nil(ct, bindingOf(t.Context(), ct, c, amc, am))
	}, "Alertmanager %s's binding on AlertmanagerConfig %s removed", am.Name, amc.Name)
}

// testBindings: each AlertmanagerConfig an Alertmanager taken over
// selects says in its status whether it is in the configuration, one
// binding per Alertmanager, written only when it changes, and removed
// when the Alertmanager no longer selects it, is handed back or deleted.
func testBindings(t *testing.T, env *controlplane.ControlPlane) {
	c := controlplane.NewClient(t, env.Config, AddToScheme)
	ctx := t.Context()
	ns := "am-bindings"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	var ams []*monitoringv1.Alertmanager
	for _, name := range []string{"main", "second"} {
		am := testAlertmanager(ns, name, "podreload")
		am.Spec.AlertmanagerConfigSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
		require.NoError(t, c.Create(ctx, am))
		ams = append(ams, am)
	}
	main, second := ams[0], ams[1]
	good := webhookConfig(ns, "good", "http://hook.example/")
	broken := webhookConfig(ns, "broken", "")
	for _, amc := range []*monitoringv1alpha1.AlertmanagerConfig{good, broken} {
		require.NoError(t, c.Create(ctx, amc))
	}
	// The binding of an Alertmanager deleted while no controller ran, as
	// one applied it: it goes.
	ghost := testAlertmanager(ns, "ghost", "podreload")
	ghostBinding := monitoringv1.WorkloadBinding{Group: "monitoring.coreos.com", Resource: "alertmanagers", Namespace: ns, Name: "ghost",
		Conditions: []monitoringv1.ConfigResourceCondition{{Type: monitoringv1.Accepted, Status: monitoringv1.ConditionTrue, LastTransitionTime: metav1.Now()}}}
	b, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&ghostBinding)
	require.NoError(t, err)
	require.NoError(t, c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "AlertmanagerConfig",
		"metadata": map[string]any{"namespace": ns, "name": "good"}, "status": map[string]any{"bindings": []any{b}},
	}}), client.FieldOwner(bindingManager(client.ObjectKeyFromObject(ghost)))))
	eventually(t, func(ct *assert.CollectT) { assert.NotNil(ct, bindingOf(ctx, ct, c, good, ghost)) })

	reg := start(t, env.Config, ns)
	waitUnbound(t, c, good, ghost)
	writes := func() float64 {
		return metricvalue.Sum(t, reg, "podreload_controller_writes_total", "kind", "AlertmanagerConfig", "verb", "apply-status")
	}

	// Accepted, and left out with the reason, for each Alertmanager.
	for _, am := range ams {
		waitAccepted(t, c, good, am, monitoringv1.ConditionTrue, "")
		waitAccepted(t, c, broken, am, monitoringv1.ConditionFalse, `secret "am-bindings/hook" not found (looking for key "url")`)
	}

	// Nothing changed, nothing written: one created later gets its two
	// bindings in two writes, the others none however many reconciles.
	before := writes()
	late := webhookConfig(ns, "late", "http://late.example/")
	require.NoError(t, c.Create(ctx, late))
	for _, am := range ams {
		waitAccepted(t, c, late, am, monitoringv1.ConditionTrue, "")
	}
	// Then a reconcile of each, seen in its status.
	for _, am := range ams {
		controlplane.Edit(t, c, am, func(a *monitoringv1.Alertmanager) { a.Spec.LogLevel = "info" })
		eventually(t, func(ct *assert.CollectT) {
			var live monitoringv1.Alertmanager
			if assert.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(am), &live)) {
				rec := takeover.FindCondition(live.Status.Conditions, conditionReconciled)
				assert.True(ct, rec != nil && rec.ObservedGeneration == am.Generation, "reconciled at generation %d", am.Generation)
			}
		})
	}
	require.InDelta(t, 2, writes()-before, 0, "one write per binding that changed")

	// Fixed: Accepted, at its generation.
	require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hook"}, Data: map[string][]byte{"url": []byte("http://fixed.example/")}}))
	for _, am := range ams {
		waitAccepted(t, c, broken, am, monitoringv1.ConditionTrue, "")
	}
	controlplane.Edit(t, c, broken, func(a *monitoringv1alpha1.AlertmanagerConfig) {
		a.Spec.Receivers[0].WebhookConfigs[0].SendResolved = ptr.To(false)
	})
	waitAccepted(t, c, broken, main, monitoringv1.ConditionTrue, "")

	// No longer selected: the bindings on it go, the others stay.
	controlplane.Edit(t, c, good, func(a *monitoringv1alpha1.AlertmanagerConfig) { delete(a.Labels, "team") })
	for _, am := range ams {
		waitUnbound(t, c, good, am)
	}

	// Handed back: its bindings go, the other Alertmanager's stay.
	controlplane.Edit(t, c, second, func(a *monitoringv1.Alertmanager) { delete(a.Annotations, takeover.AnnotationControllerID) })
	for _, amc := range []*monitoringv1alpha1.AlertmanagerConfig{broken, late} {
		waitUnbound(t, c, amc, second)
		waitAccepted(t, c, amc, main, monitoringv1.ConditionTrue, "")
	}

	// Deleted: its bindings go.
	require.NoError(t, c.Delete(ctx, main))
	for _, amc := range []*monitoringv1alpha1.AlertmanagerConfig{broken, late} {
		waitUnbound(t, c, amc, main)
	}
}

// TestAccepted: the Accepted condition keeps its last transition time
// while its status stays, and takes a new one when it changes.
func TestAccepted(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	amc := &monitoringv1alpha1.AlertmanagerConfig{ObjectMeta: metav1.ObjectMeta{Generation: 4}}
	live := &monitoringv1.WorkloadBinding{Conditions: []monitoringv1.ConfigResourceCondition{{Type: monitoringv1.Accepted, Status: monitoringv1.ConditionTrue, LastTransitionTime: then, ObservedGeneration: 3}}}

	got := accepted(amc, live, "")
	require.Equal(t, monitoringv1.ConfigResourceCondition{Type: monitoringv1.Accepted, Status: monitoringv1.ConditionTrue, LastTransitionTime: then, ObservedGeneration: 4}, got)

	got = accepted(amc, live, "receiver hook: bad URL")
	require.Equal(t, monitoringv1.ConditionFalse, got.Status)
	require.Equal(t, reasonInvalidConfiguration, got.Reason)
	require.Equal(t, "receiver hook: bad URL", got.Message)
	require.True(t, got.LastTransitionTime.After(then.Time), "a transition: a new time")

	require.False(t, accepted(amc, nil, "").LastTransitionTime.Time.IsZero())
}

// TestBindingManager: one field manager per Alertmanager, within the API
// server's limit.
func TestBindingManager(t *testing.T) {
	require.Equal(t, "podreload-controller/alertmanagers/ns/main", bindingManager(types.NamespacedName{Namespace: "ns", Name: "main"}))
	long := bindingManager(types.NamespacedName{Namespace: "ns", Name: strings.Repeat("a", 200)})
	require.LessOrEqual(t, len(long), maxFieldManager)
	require.NotEqual(t, long, bindingManager(types.NamespacedName{Namespace: "ns", Name: strings.Repeat("a", 201)}))
}

// TestWithoutAlertmanagerConfigStatus: with an AlertmanagerConfig CRD
// without the status subresource (older ones), the AlertmanagerConfigs
// selected are in the configuration and get no binding, said once in the
// log, with no write.
func TestWithoutAlertmanagerConfigStatus(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"monitoring.coreos.com_alertmanagers.yaml", "monitoring.coreos.com_alertmanagerconfigs.yaml"} {
		crd, err := os.ReadFile(filepath.Join("..", "..", "deploy", "crds", name))
		require.NoError(t, err)
		if strings.Contains(name, "configs") {
			old := bytes.ReplaceAll(crd, []byte("    subresources:\n      status: {}\n"), nil)
			require.NotEqual(t, crd, old, "the status subresource removed")
			crd = old
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), crd, 0o600))
	}
	env := controlplane.Start(t, dir)
	c := controlplane.NewClient(t, env.Config, AddToScheme)
	ctx := t.Context()
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "old-amc"}}))
	am := testAlertmanager("old-amc", "main", "podreload")
	am.Spec.AlertmanagerConfigSelector = &metav1.LabelSelector{}
	require.NoError(t, c.Create(ctx, am))
	require.NoError(t, c.Create(ctx, webhookConfig("old-amc", "good", "http://hook.example/")))

	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	m, err := kube.NewManager(logger, reg, kube.Options{Config: env.Config, Namespaces: []string{"old-amc"}, Names: []string{App}, AddToScheme: []func(*runtime.Scheme) error{AddToScheme}})
	require.NoError(t, err)
	require.NoError(t, Setup(m, logger, reg, Options{ControllerID: "podreload", ReloaderImage: "podreload:test"}))
	// Read before the reconciler writes the log too.
	require.Equal(t, 1, strings.Count(logs.String(), "the AlertmanagerConfig CRD has no status subresource: AlertmanagerConfigs get no binding"), logs.String())
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	eventually(t, func(ct *assert.CollectT) {
		var s corev1.Secret
		if assert.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: "old-amc", Name: "alertmanager-main-generated"}, &s)) {
			assert.Contains(ct, gunzip(t, s.Data[configKey]), "http://hook.example/", "the AlertmanagerConfig in the configuration")
		}
	})
	waitReconciled(t, c, am, metav1.ConditionTrue, "Reconciled", "")
	require.Zero(t, metricvalue.Sum(t, reg, "podreload_controller_writes_total", "kind", "AlertmanagerConfig"))
}
