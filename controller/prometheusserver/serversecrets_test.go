package prometheusserver

import (
	"slices"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promserver"
)

// remoteWriteServer is a PrometheusServer with a remote write endpoint
// whose basic auth comes from the Secret secret.
func remoteWriteServer(ns, name, secret string) *v1alpha1.PrometheusServer {
	ref := func(key string) corev1.SecretKeySelector {
		return corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}
	}
	return server(ns, name, func(s *v1alpha1.PrometheusServerSpec) {
		s.RemoteWrite = []v1alpha1.RemoteWriteSpec{{
			URL:       "https://metrics.example.com/api/v1/write",
			BasicAuth: &monitoringv1.BasicAuth{Username: ref("username"), Password: ref("password")},
		}}
	})
}

// waitReconciled waits until the Reconciled condition of s has the status
// and reason given, and the message want.
func (cp *controlPlane) waitReconciled(t *testing.T, s *v1alpha1.PrometheusServer, status metav1.ConditionStatus, reason, want string) {
	t.Helper()
	eventually(t, func(c *assert.CollectT) {
		cond := meta.FindStatusCondition(cp.status(t, s).Conditions, promserver.ConditionReconciled)
		if assert.NotNil(c, cond) {
			assert.Equal(c, status, cond.Status)
			assert.Equal(c, reason, cond.Reason)
			if want != "" {
				assert.Equal(c, want, cond.Message)
			}
		}
	})
}

// waitServerEvent waits for an Event on the PrometheusServer s with the
// reason and note given.
func (cp *controlPlane) waitServerEvent(t *testing.T, s *v1alpha1.PrometheusServer, reason, note string) {
	t.Helper()
	eventually(t, func(c *assert.CollectT) {
		var events eventsv1.EventList
		assert.NoError(c, cp.c.List(t.Context(), &events, client.InNamespace(s.Namespace)))
		assert.True(c, slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool {
			return e.Regarding.Kind == v1alpha1.Kind && e.Regarding.Name == s.Name && e.Reason == reason && e.Note == note
		}), "Event %s on the server", reason)
	})
}

// testServerSecrets renders PrometheusServers whose own spec references
// Secrets: one that exists from the start, one that appears later, one
// that lacks a key for a while.
func (cp *controlPlane) testServerSecrets(t *testing.T) {
	ns := cp.namespace(t, "server-secrets", nil)
	cp.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "remote-creds"},
		Data: map[string][]byte{"username": []byte("prometheus"), "password": []byte("first")}})
	cp.start(t, kube.Options{Namespaces: []string{ns}})

	// The Secret exists before the server: everything is written.
	srv := remoteWriteServer(ns, "main", "remote-creds")
	cp.create(t, srv)
	eventually(t, func(c *assert.CollectT) {
		assert.Contains(c, cp.config(t, srv), "password: first")
	})
	var svc corev1.Service
	cp.waitFor(t, client.ObjectKeyFromObject(srv), &svc)
	var sts appsv1.StatefulSet
	cp.waitFor(t, client.ObjectKeyFromObject(srv), &sts)
	cp.waitReconciled(t, srv, metav1.ConditionTrue, "Reconciled", "")

	// A change to the Secret reaches the configuration.
	edit(t, cp.c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "remote-creds"}}, func(s *corev1.Secret) {
		s.Data["password"] = []byte("second")
	})
	eventually(t, func(c *assert.CollectT) {
		assert.Contains(c, cp.config(t, srv), "password: second")
	})

	// A missing Secret, then a missing key, are told apart; the server
	// is reconciled as soon as the Secret is complete.
	late := remoteWriteServer(ns, "late", "late-creds")
	cp.create(t, late)
	const notFound = `render config: spec.remoteWrite[0].basicAuth: secret "server-secrets/late-creds" not found (looking for key "username")`
	cp.waitReconciled(t, late, metav1.ConditionFalse, "InvalidSpec", notFound)
	require.Empty(t, cp.config(t, late), "no configuration while the Secret is missing")
	cp.waitServerEvent(t, late, "InvalidSpec", notFound)

	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late-creds"},
		Data: map[string][]byte{"username": []byte("prometheus")}}
	cp.create(t, creds)
	cp.waitReconciled(t, late, metav1.ConditionFalse, "InvalidSpec",
		`render config: spec.remoteWrite[0].basicAuth: secret "server-secrets/late-creds" has no key "password"`)

	edit(t, cp.c, creds, func(s *corev1.Secret) { s.Data["password"] = []byte("late") })
	eventually(t, func(c *assert.CollectT) {
		assert.Contains(c, cp.config(t, late), "password: late")
	})
	cp.waitFor(t, client.ObjectKeyFromObject(late), &sts)
	cp.waitReconciled(t, late, metav1.ConditionTrue, "Reconciled", "")
}
