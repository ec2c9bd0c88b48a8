package prometheus

import (
	"slices"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/configsecret"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/controlplane"
)

// testUnmanagedConfiguration takes over a Prometheus whose four monitor
// selectors are unset and whose configuration Secret the user wrote: the
// Secret's bytes are the same after the takeover and after the hand-back,
// and our StatefulSet mounts it. A second one, whose Secret is missing, is
// not reconciled, and its condition names the Secret.
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

	startController(t, cfg)
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

	// Bad input: no Secret. Nothing is written for it; the condition names it.
	missing := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "missing",
		Annotations: map[string]string{takeover.AnnotationControllerID: "podreload"}}}
	require.NoError(t, c.Create(ctx, missing))
	reconciled(t, c, client.ObjectKeyFromObject(missing), monitoringv1.ConditionFalse, `secret "unmanaged/prometheus-missing" not found`)

	controlplane.Edit(t, c, p, func(p *monitoringv1.Prometheus) { p.Annotations = nil })
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		if assert.NoError(ct, c.Get(ctx, key, &sts)) {
			assert.Contains(ct, reloader(&sts), "prometheus-config-reloader", "the operator's reloader again")
		}
	}, time.Minute, 20*time.Millisecond)
	unchanged("handed back")
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
