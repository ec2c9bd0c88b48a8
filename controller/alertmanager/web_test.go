package alertmanager

import (
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/selfsigned"
)

// testWebTLS: an Alertmanager serving HTTPS whose certificate's Secret
// does not exist yet is Reconciled False with the reason, nothing of its
// pods written; once the Secret exists its web configuration is written,
// and its pods are probed and reloaded over HTTPS, the reloaders verifying
// the certificate.
func testWebTLS(t *testing.T, env *controlplane.ControlPlane) {
	c := controlplane.NewClient(t, env.Config, AddToScheme)
	ctx := t.Context()
	ns := "am-web-tls"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	am := testAlertmanager(ns, "tls", "podreload")
	am.Spec.Secrets = nil
	cert := corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "am-tls"}, Key: corev1.TLSCertKey}
	am.Spec.Web = &monitoringv1.AlertmanagerWebSpec{WebConfigFileFields: monitoringv1.WebConfigFileFields{TLSConfig: &monitoringv1.WebTLSConfig{
		Cert:      monitoringv1.SecretOrConfigMap{Secret: &cert},
		KeySecret: corev1.SecretKeySelector{LocalObjectReference: cert.LocalObjectReference, Key: corev1.TLSPrivateKeyKey},
	}}}
	require.NoError(t, c.Create(ctx, am))
	start(t, env.Config, ns)

	var live monitoringv1.Alertmanager
	eventually(t, func(ct *assert.CollectT) {
		if !assert.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(am), &live)) {
			return
		}
		if rec := takeover.FindCondition(live.Status.Conditions, conditionReconciled); assert.NotNil(ct, rec) {
			assert.Equal(ct, "InvalidWebConfig", rec.Reason)
			assert.Contains(ct, rec.Message, `"am-web-tls/am-tls" not found`)
		}
	})
	require.Error(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alertmanager-tls"}, &appsv1.StatefulSet{}), "nothing of the pods written")

	certPEM, keyPEM := selfsigned.Cert(t, "localhost")
	require.NoError(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "am-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
	}))
	var sts appsv1.StatefulSet
	eventually(t, func(ct *assert.CollectT) {
		assert.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alertmanager-tls"}, &sts))
	})
	var web corev1.Secret
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alertmanager-tls-web-config"}, &web))
	require.Contains(t, string(web.Data["web-config.yaml"]), "tls_server_config")
	pod := sts.Spec.Template.Spec
	require.Equal(t, corev1.URISchemeHTTPS, pod.Containers[0].ReadinessProbe.HTTPGet.Scheme)
	require.Contains(t, pod.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "web-config", MountPath: "/etc/alertmanager/web_config/web-config.yaml", SubPath: "web-config.yaml", ReadOnly: true})
	reloader := pod.Containers[1]
	require.Contains(t, reloader.Args, "--reload-url=https://localhost:9093/-/reload")
	require.True(t, slices.ContainsFunc(reloader.Args, func(a string) bool { return strings.HasPrefix(a, "--reload-tls-ca-file=/etc/alertmanager/web_tls/") }), "the reloaders verify the certificate")
	require.Equal(t, fileHash(web.Data["web-config.yaml"]), sts.Spec.Template.Annotations[annotationWebConfig], "a change of the file rolls the pods")
}

// testClusterTLS: spec.clusterTLS that prometheus-operator refuses is
// Reconciled False with the reason, a Warning Event, and the pods as they
// were; so is one whose certificates' Secret or ConfigMap is missing;
// once right, its file is written in its Secret and the pods mount it and
// name it.
func testClusterTLS(t *testing.T, env *controlplane.ControlPlane) {
	c := controlplane.NewClient(t, env.Config, AddToScheme)
	ctx := t.Context()
	ns := "am-cluster-tls"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alertmanager-main"}, Data: map[string][]byte{baseKey: []byte(baseConfig)}}))
	am := testAlertmanager(ns, "main", "podreload")
	am.Spec.Secrets = nil
	require.NoError(t, c.Create(ctx, am))
	start(t, env.Config, ns)
	key := client.ObjectKey{Namespace: ns, Name: "alertmanager-main"}
	var sts appsv1.StatefulSet
	eventually(t, func(ct *assert.CollectT) { assert.NoError(ct, c.Get(ctx, key, &sts)) })
	before := sts.Spec.Template.Annotations[kube.AnnotationInputHash]

	controlplane.Edit(t, c, am, func(a *monitoringv1.Alertmanager) {
		a.Spec.ClusterTLS = peerTLS()
		a.Spec.ClusterTLS.ClientTLS.KeySecret = nil
	})
	eventually(t, func(ct *assert.CollectT) {
		var live monitoringv1.Alertmanager
		if !assert.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(am), &live)) {
			return
		}
		if rec := takeover.FindCondition(live.Status.Conditions, conditionReconciled); assert.NotNil(ct, rec) {
			assert.Equal(ct, "InvalidClusterTLS", rec.Reason)
			assert.Equal(ct, "alertmanager "+ns+"/main: spec.clusterTLS: client: client cert specified without client key", rec.Message)
		}
		assert.True(ct, hasEvent(t, c, ns, "main", "InvalidClusterTLS", "client cert specified without client key"))
	})
	require.NoError(t, c.Get(ctx, key, &sts))
	require.Equal(t, before, sts.Spec.Template.Annotations[kube.AnnotationInputHash], "the pods as they were")

	// Right, but its certificate's Secret and its CA's ConfigMap missing:
	// the pods would wait for volumes that cannot be mounted.
	controlplane.Edit(t, c, am, func(a *monitoringv1.Alertmanager) { a.Spec.ClusterTLS = peerTLS() })
	eventually(t, func(ct *assert.CollectT) {
		var live monitoringv1.Alertmanager
		if !assert.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(am), &live)) {
			return
		}
		if rec := takeover.FindCondition(live.Status.Conditions, conditionReconciled); assert.NotNil(ct, rec) {
			assert.Equal(ct, "InvalidClusterTLS", rec.Reason)
			assert.Equal(ct, "alertmanager "+ns+`/main: spec.clusterTLS: server key: secret "`+ns+`/peer-tls" not found (looking for key "tls.key")`, rec.Message)
		}
	})
	require.NoError(t, c.Get(ctx, key, &sts))
	require.Equal(t, before, sts.Spec.Template.Annotations[kube.AnnotationInputHash], "the pods as they were")
	createPeerTLS(t, c, ns, true)
	eventually(t, func(ct *assert.CollectT) {
		var live monitoringv1.Alertmanager
		if !assert.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(am), &live)) {
			return
		}
		if rec := takeover.FindCondition(live.Status.Conditions, conditionReconciled); assert.NotNil(ct, rec) {
			assert.Equal(ct, "InvalidClusterTLS", rec.Reason)
			assert.Equal(ct, "alertmanager "+ns+`/main: spec.clusterTLS: server ca: configmap "`+ns+`/peer-ca" not found (looking for key "ca.crt")`, rec.Message)
		}
	})
	createPeerTLS(t, c, ns, false)
	eventually(t, func(ct *assert.CollectT) {
		if assert.NoError(ct, c.Get(ctx, key, &sts)) {
			assert.Contains(ct, sts.Spec.Template.Spec.Containers[0].Args, "--cluster.tls-config="+clusterTLSFile)
		}
	})
	var file corev1.Secret
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alertmanager-main-cluster-tls-config"}, &file))
	require.Contains(t, string(file.Data[clusterTLSKey]), "tls_client_config:")
	require.Equal(t, fileHash(file.Data[clusterTLSKey]), sts.Spec.Template.Annotations[annotationClusterTLS])
}

// createPeerTLS creates in ns the Secret of peerTLS' certificate and key,
// or the ConfigMap of its CA.
func createPeerTLS(t *testing.T, c client.Client, ns string, secret bool) {
	t.Helper()
	if secret {
		require.NoError(t, c.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "peer-tls"},
			Data: map[string][]byte{"tls.crt": []byte("cert"), "tls.key": []byte("key")}}))
		return
	}
	require.NoError(t, c.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "peer-ca"}, Data: map[string]string{"ca.crt": "ca"}}))
}

// TestRenderWebKeyFile: a keyFile is refused, by its field, as
// prometheus-operator's StatefulSet for it would be (a volume of a Secret
// without a name); nothing is read for it.
func TestRenderWebKeyFile(t *testing.T) {
	am := &monitoringv1.Alertmanager{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "main"}}
	am.Spec.Web = &monitoringv1.AlertmanagerWebSpec{WebConfigFileFields: monitoringv1.WebConfigFileFields{TLSConfig: &monitoringv1.WebTLSConfig{
		CertFile: ptr.To("/etc/alertmanager/secrets/tls/tls.crt"), KeyFile: ptr.To("/etc/alertmanager/secrets/tls/tls.key"),
	}}}
	_, err := renderWeb(t.Context(), nil, am)
	require.EqualError(t, err, "alertmanager ns/main: spec.web.tlsConfig.keyFile: "+takeover.ReasonKeyFile)
}
