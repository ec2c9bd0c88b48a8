package prometheusserver

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/promfixture"
)

// testTakeoverSecrets takes over a Prometheus whose remote write signs
// with sigv4 and whose service discovery reads another API server with
// basic auth, both from a Secret: an edit of the Secret reaches the
// configuration; a key removed refuses the spec (InvalidSpec, the
// message naming the field, the Secret and the key) and the last
// configuration stays; the key back, the configuration follows.
func (cp *controlPlane) testTakeoverSecrets(t *testing.T) {
	ns := cp.namespace(t, "takeover-secrets", nil)
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws"},
		Data: map[string][]byte{"access": []byte("AKIA1"), "secret": []byte("first"), "user": []byte("u"), "password": []byte("p")}}
	cp.create(t, creds)
	p := operatorPrometheus(ns, "k8s", "podreload")
	sel := func(key string) *corev1.SecretKeySelector {
		return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "aws"}, Key: key}
	}
	p.Spec.RemoteWrite = []monitoringv1.RemoteWriteSpec{{
		URL:   "https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-1/api/v1/remote_write",
		Sigv4: &monitoringv1.Sigv4{Region: "eu-west-1", AccessKey: sel("access"), SecretKey: sel("secret")},
	}}
	p.Spec.APIServerConfig = &monitoringv1.APIServerConfig{Host: "https://kubernetes.other.example.com:6443",
		BasicAuth: &monitoringv1.BasicAuth{Username: *sel("user"), Password: *sel("password")}}
	cp.create(t, p, serviceMonitor(ns, "app", nil))
	cp.startTakingOver(t, kube.Options{Namespaces: []string{ns}}, &takeover.Options{ControllerID: "podreload"})

	config := func(t *testing.T) string {
		var secret corev1.Secret
		if err := cp.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "prometheus-k8s"}, &secret); err != nil {
			require.True(t, apierrors.IsNotFound(err), "get config Secret: %v", err)
			return ""
		}
		return string(promfixture.Gunzip(t, secret.Data[promserver.ConfigSecretKey]))
	}
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
		cfg := config(t)
		assert.Contains(c, cfg, "access_key: AKIA1")
		assert.Contains(c, cfg, "secret_key: first")
		assert.Contains(c, cfg, "api_server: https://kubernetes.other.example.com:6443")
		assert.Contains(c, cfg, "password: p")
	})

	edit(t, cp.c, creds, func(s *corev1.Secret) { s.Data["secret"], s.Data["password"] = []byte("second"), []byte("q") })
	eventually(t, func(c *assert.CollectT) {
		cfg := config(t)
		assert.Contains(c, cfg, "secret_key: second")
		assert.Contains(c, cfg, "password: q")
	})

	edit(t, cp.c, creds, func(s *corev1.Secret) { delete(s.Data, "secret") })
	want := `render config: spec.remoteWrite[0].sigv4.secretKey: secret "` + ns + `/aws" has no key "secret"`
	eventually(t, func(c *assert.CollectT) {
		if rec := reconciled(c); rec != nil {
			assert.Equal(c, monitoringv1.ConditionFalse, rec.Status)
			assert.Equal(c, "InvalidSpec", rec.Reason)
			assert.Equal(c, want, rec.Message)
		}
	})
	require.Contains(t, config(t), "secret_key: second", "the last configuration stays")

	edit(t, cp.c, creds, func(s *corev1.Secret) { s.Data["secret"] = []byte("third") })
	eventually(t, func(c *assert.CollectT) {
		assert.Contains(c, config(t), "secret_key: third")
		if rec := reconciled(c); rec != nil {
			assert.Equal(c, monitoringv1.ConditionTrue, rec.Status, rec.Message)
		}
	})
}
