package prometheusserver

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/internal/testenv/selfsigned"
)

// selfSigned returns a self-signed certificate for names and its key, PEM
// encoded.
func selfSigned(t *testing.T, names ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	return selfsigned.Cert(t, names...)
}

// testWebTLS turns HTTPS on for a running server whose certificate's
// Secret and client CA's ConfigMap do not exist yet: the server stays
// InvalidSpec, told in an Event, with its StatefulSet as it was, while a
// Secret, a key of it or the ConfigMap is missing; once they all exist,
// the web configuration is written and the pods serve and are probed and
// reloaded over HTTPS.
func (cp *controlPlane) testWebTLS(t *testing.T) {
	ns := cp.namespace(t, "web-tls", nil)
	cp.start(t, kube.Options{Namespaces: []string{ns}})
	srv := server(ns, "main", func(*v1alpha1.PrometheusServerSpec) {})
	cp.create(t, srv)
	var sts appsv1.StatefulSet
	cp.waitFor(t, client.ObjectKeyFromObject(srv), &sts)
	cp.waitReconciled(t, srv, metav1.ConditionTrue, "Reconciled", "")
	before := sts.Spec.Template.Annotations[promserver.AnnotationInputHash]

	edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) {
		s.Spec.Web = &monitoringv1.PrometheusWebSpec{WebConfigFileFields: monitoringv1.WebConfigFileFields{TLSConfig: &monitoringv1.WebTLSConfig{
			Cert: monitoringv1.SecretOrConfigMap{Secret: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "web-tls"}, Key: "tls.crt"}},
			KeySecret: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "web-tls"}, Key: "tls.key"},
			ClientCA: monitoringv1.SecretOrConfigMap{ConfigMap: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "clients"}, Key: "ca.crt"}},
			ClientAuthType: ptr.To(monitoringv1.VerifyClientCertIfGiven),
		}}}
	})
	const notFound = `render web config: spec.web.tlsConfig.cert: secret "web-tls/web-tls" not found (looking for key "tls.crt")`
	cp.waitReconciled(t, srv, metav1.ConditionFalse, "InvalidSpec", notFound)
	cp.waitServerEvent(t, srv, "InvalidSpec", notFound)

	cert, key := selfSigned(t, "main.web-tls.svc")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-tls"}, Data: map[string][]byte{"tls.crt": cert}}
	cp.create(t, secret)
	cp.waitReconciled(t, srv, metav1.ConditionFalse, "InvalidSpec",
		`render web config: spec.web.tlsConfig.keySecret: secret "web-tls/web-tls" has no key "tls.key"`)
	edit(t, cp.c, secret, func(s *corev1.Secret) { s.Data["tls.key"] = key })
	cp.waitReconciled(t, srv, metav1.ConditionFalse, "InvalidSpec",
		`render web config: spec.web.tlsConfig.client_ca: configmap "web-tls/clients" not found (looking for key "ca.crt")`)
	cp.waitFor(t, client.ObjectKeyFromObject(srv), &sts)
	require.Equal(t, before, sts.Spec.Template.Annotations[promserver.AnnotationInputHash], "the last good StatefulSet stays")
	var webConfig corev1.Secret
	require.Error(t, cp.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: promserver.WebConfigSecretName(srv)}, &webConfig), "no web config yet")

	// A ConfigMap the server references brings it back when it appears.
	cp.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "clients"}, Data: map[string]string{"ca.crt": string(cert)}})
	cp.waitReconciled(t, srv, metav1.ConditionTrue, "Reconciled", "")
	cp.waitFor(t, client.ObjectKey{Namespace: ns, Name: promserver.WebConfigSecretName(srv)}, &webConfig)
	require.True(t, metav1.IsControlledBy(&webConfig, srv), "the server owns its web config Secret")
	require.Contains(t, string(webConfig.Data[promserver.WebConfigSecretKey]), "client_auth_type: VerifyClientCertIfGiven")
	eventually(t, func(c *assert.CollectT) {
		var got appsv1.StatefulSet
		if !assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKeyFromObject(srv), &got)) {
			return
		}
		pod := got.Spec.Template.Spec
		assert.Contains(c, pod.Containers[0].Args, "--web.config.file="+promserver.WebConfigMountPath+"/"+promserver.WebConfigSecretKey)
		assert.Equal(c, corev1.URISchemeHTTPS, pod.Containers[0].ReadinessProbe.HTTPGet.Scheme)
		assert.Subset(c, pod.Containers[1].Args, []string{
			"--reload-url=https://localhost:9090/-/reload",
			"--reload-tls-ca-file=" + promserver.WebTLSMountPath + "/reload_ca/ca.crt",
			"--reload-tls-server-name=main.web-tls.svc",
		})
	})
}
