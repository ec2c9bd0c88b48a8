package prometheus

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/controller/configsecret"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/metricvalue"
)

// testUnmanagedConfiguration takes over a Prometheus whose four monitor
// selectors are unset and whose configuration Secret the user wrote: the
// Secret's bytes are the same after the takeover and after the hand-back,
// and our StatefulSet mounts it; a replica that reports it runs the user's
// configuration makes ConfigApplied True. A second one, whose Secret is
// missing, is not reconciled: its condition and an Event name the Secret,
// and the reconcile is counted as an error.
func testUnmanagedConfiguration(t *testing.T, cfg *rest.Config, c client.Client) {
	ctx := t.Context()
	const ns = "unmanaged"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	gz, err := configsecret.Gzip(corev1.MaxSecretSize, []byte("global:\n  scrape_interval: 7s\n"))
	require.NoError(t, err)
	user := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus-u"},
		Data:       map[string][]byte{promserver.ConfigSecretKey: gz, "other": []byte("x")},
	}
	require.NoError(t, c.Create(ctx, user))
	p := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "u"}}
	require.NoError(t, c.Create(ctx, p))
	key := client.ObjectKey{Namespace: ns, Name: "prometheus-u"}
	reloader := func(sts *appsv1.StatefulSet) string { return container(t, sts, "config-reloader").Image }
	var op appsv1.StatefulSet
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		if assert.NoError(ct, c.Get(ctx, key, &op)) {
			assert.Contains(ct, reloader(&op), "prometheus-config-reloader", "the operator's reloader")
		}
	}, time.Minute, 20*time.Millisecond)
	unchanged := func(when string) {
		t.Helper()
		var got corev1.Secret
		require.NoError(t, c.Get(ctx, key, &got))
		require.Equal(t, user.Data, got.Data, "the user's Secret, %s", when)
	}
	unchanged("under the operator")

	reg := startController(t, cfg)
	controlplane.Edit(t, c, p, func(p *monitoringv1.Prometheus) {
		p.Annotations = map[string]string{takeover.AnnotationControllerID: "podreload"}
	})
	var sts appsv1.StatefulSet
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		if assert.NoError(ct, c.Get(ctx, key, &sts)) {
			assert.Equal(ct, "podreload:test", reloader(&sts), "our reloader")
		}
	}, time.Minute, 20*time.Millisecond)
	require.Equal(t, op.UID, sts.UID, "adopted in place")
	mounted := slices.ContainsFunc(sts.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Secret != nil && v.Secret.SecretName == "prometheus-u"
	})
	read := slices.Contains(container(t, &sts, "config-reloader").Args, "--config-secret="+ns+"/prometheus-u")
	require.True(t, mounted || read, "the StatefulSet's config-reloader reads the user's Secret")
	reconciled(t, c, client.ObjectKeyFromObject(p), monitoringv1.ConditionTrue, "")
	unchanged("taken over")
	reportApplied(t, c, p, gz)

	// Bad input: no Secret. Nothing is written for it; the condition and
	// an Event name it, and the reconcile counts as an error.
	errorsBefore := metricvalue.Sum(t, reg, "podreload_controller_reconcile_errors_total", "kind", "Prometheus")
	missing := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "missing",
		Annotations: map[string]string{takeover.AnnotationControllerID: "podreload"}}}
	require.NoError(t, c.Create(ctx, missing))
	const notFound = `secret "unmanaged/prometheus-missing" not found`
	reconciled(t, c, client.ObjectKeyFromObject(missing), monitoringv1.ConditionFalse, notFound)
	require.Greater(t, metricvalue.Sum(t, reg, "podreload_controller_reconcile_errors_total", "kind", "Prometheus"), errorsBefore, "counted")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		var events eventsv1.EventList
		if assert.NoError(ct, c.List(ctx, &events, client.InNamespace(ns))) {
			assert.True(ct, slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool {
				return e.Reason == "InvalidSpec" && e.Regarding.Name == "missing" && strings.Contains(e.Note, notFound)
			}), "an InvalidSpec Event on the Prometheus")
		}
	}, time.Minute, 20*time.Millisecond)
	var none appsv1.StatefulSet
	require.True(t, apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prometheus-missing"}, &none)), "no StatefulSet written")

	controlplane.Edit(t, c, p, func(p *monitoringv1.Prometheus) { p.Annotations = nil })
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		if assert.NoError(ct, c.Get(ctx, key, &sts)) {
			assert.Contains(ct, reloader(&sts), "prometheus-config-reloader", "the operator's reloader again")
		}
	}, time.Minute, 20*time.Millisecond)
	unchanged("handed back")
}

// reportApplied creates p's first pod, ready, reporting as a
// config-reloader does that it runs the user's configuration gz and the
// rule ConfigMaps the controller wrote, and waits for ConfigApplied to say
// every ready replica runs it; the pod is deleted then.
func reportApplied(t *testing.T, c client.Client, p *monitoringv1.Prometheus, gz []byte) {
	t.Helper()
	ctx := t.Context()
	var rules corev1.ConfigMapList
	require.NoError(t, c.List(ctx, &rules, client.InNamespace(p.Namespace)))
	var shards []*corev1.ConfigMap
	for i := range rules.Items {
		if strings.HasPrefix(rules.Items[i].Name, "prometheus-"+p.Name+"-rulefiles-") {
			shards = append(shards, &rules.Items[i])
		}
	}
	want := promserver.ContentHash(gz, shards)
	report, err := json.Marshal(contract.Applied{Hash: want, Time: time.Now().UTC().Format(time.RFC3339)})
	require.NoError(t, err)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: "prometheus-" + p.Name + "-0",
			Labels:      map[string]string{promserver.LabelOperatorName: p.Name, kube.LabelName: promserver.App},
			Annotations: map[string]string{contract.AppliedAnnotation: string(report)}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "prometheus", Image: "prometheus"}}},
	}
	require.NoError(t, c.Create(ctx, pod))
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	require.NoError(t, c.Status().Update(ctx, pod))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		var live monitoringv1.Prometheus
		if assert.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(p), &live)) {
			applied := takeover.FindCondition(live.Status.Conditions, promserver.ConditionConfigApplied)
			if assert.NotNil(ct, applied, "a ConfigApplied condition") {
				assert.Equal(ct, monitoringv1.ConditionTrue, applied.Status, applied.Message)
				assert.Equal(ct, "every ready replica runs "+want[:12], applied.Message)
			}
		}
	}, time.Minute, 20*time.Millisecond, "ConfigApplied on the user's configuration")
	require.NoError(t, c.Delete(ctx, pod))
}

// reconciled waits for the Reconciled condition of the Prometheus key to
// have status, and a message containing msg.
func reconciled(t *testing.T, c client.Client, key client.ObjectKey, status monitoringv1.ConditionStatus, msg string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		var got monitoringv1.Prometheus
		if assert.NoError(ct, c.Get(t.Context(), key, &got)) {
			i := slices.IndexFunc(got.Status.Conditions, func(c monitoringv1.Condition) bool { return c.Type == monitoringv1.Reconciled })
			if assert.GreaterOrEqual(ct, i, 0, "a Reconciled condition") {
				assert.Equal(ct, status, got.Status.Conditions[i].Status, got.Status.Conditions[i].Message)
				assert.Contains(ct, got.Status.Conditions[i].Message, msg)
			}
		}
	}, time.Minute, 20*time.Millisecond, "the status of %s", key)
}
