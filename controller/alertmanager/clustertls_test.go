package alertmanager

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestClusterTLSFile: spec.clusterTLS's file as prometheus-operator
// v0.94.1 writes it: each file from a Secret or a ConfigMap at the
// directory of its source, or the path the spec gives.
func TestClusterTLSFile(t *testing.T) {
	am := testAlertmanager("monitoring", "main", "podreload")
	b, err := renderClusterTLS(am)
	require.NoError(t, err)
	require.Nil(t, b, "no clusterTLS, no file")

	am.Spec.ClusterTLS = peerTLS()
	b, err = renderClusterTLS(am)
	require.NoError(t, err)
	require.Equal(t, `tls_server_config:
  key_file: /etc/alertmanager/cluster_tls_config/server_tls/secret/peer-tls-key/tls.key
  cert_file: /etc/alertmanager/cluster_tls_config/server_tls/secret/peer-tls-cert/tls.crt
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: /etc/alertmanager/cluster_tls_config/server_tls/configmap/peer-ca-ca/ca.crt
tls_client_config:
  key_file: /etc/alertmanager/cluster_tls_config/client_tls/secret/peer-tls-key/tls.key
  cert_file: /etc/alertmanager/cluster_tls_config/client_tls/secret/peer-tls-cert/tls.crt
  ca_file: /etc/alertmanager/cluster_tls_config/client_tls/configmap/peer-ca-ca/ca.crt
  server_name: alertmanager
`, string(b))

	// Files of the container, and the TLS settings.
	am.Spec.ClusterTLS.ServerTLS = monitoringv1.WebTLSConfig{
		CertFile: ptr.To("/certs/tls.crt"), KeyFile: ptr.To("/certs/tls.key"), ClientCAFile: ptr.To("/certs/ca.crt"),
		MinVersion: ptr.To("TLS12"), CipherSuites: []string{"TLS_AES_128_GCM_SHA256"}, PreferServerCipherSuites: ptr.To(true), CurvePreferences: []string{"X25519"},
	}
	am.Spec.ClusterTLS.ClientTLS.InsecureSkipVerify = ptr.To(true)
	b, err = renderClusterTLS(am)
	require.NoError(t, err)
	require.Contains(t, string(b), `tls_server_config:
  key_file: /certs/tls.key
  cert_file: /certs/tls.crt
  client_ca_file: /certs/ca.crt
  min_version: TLS12
  cipher_suites:
  - TLS_AES_128_GCM_SHA256
  prefer_server_cipher_suites: true
  curve_preferences:
  - X25519
`)
	require.Contains(t, string(b), "  insecure_skip_verify: true\n")
}

// TestClusterTLSErrors: what prometheus-operator refuses in
// spec.clusterTLS, with the object and the cause.
func TestClusterTLSErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*monitoringv1.ClusterTLSConfig)
		want string
	}{
		"no server key":          {func(c *monitoringv1.ClusterTLSConfig) { c.ServerTLS.KeySecret = corev1.SecretKeySelector{} }, "server: TLS private key must be defined"},
		"both cert and certFile": {func(c *monitoringv1.ClusterTLSConfig) { c.ServerTLS.CertFile = ptr.To("/x") }, "server: cannot specify both cert and certFile"},
		"no client cert": {func(c *monitoringv1.ClusterTLSConfig) {
			c.ClientTLS.Cert, c.ClientTLS.KeySecret = monitoringv1.SecretOrConfigMap{}, nil
		}, "client: a certificate is required"},
		"client cert, no key": {func(c *monitoringv1.ClusterTLSConfig) { c.ClientTLS.KeySecret = nil }, "client: client cert specified without client key"},
	} {
		t.Run(name, func(t *testing.T) {
			am := testAlertmanager("monitoring", "main", "podreload")
			am.Spec.ClusterTLS = peerTLS()
			tc.edit(am.Spec.ClusterTLS)
			_, err := renderClusterTLS(am)
			require.EqualError(t, err, "alertmanager monitoring/main: spec.clusterTLS: "+tc.want)
		})
	}
}

// TestClusterTLSPod: the file's Secret mounted with a sub-path and each
// source mounted whole, named as prometheus-operator names them (its own
// test's name for the Secret some-secret), and the pods rolled when the
// file changes; nothing before Alertmanager 0.24.
func TestClusterTLSPod(t *testing.T) {
	require.Equal(t, "cluster-tls-server-config-secret-key-some-secret-3556f148", uniqueLabel("cluster-tls-server-config-secret-key", "some-secret"))
	am := testAlertmanager("monitoring", "main", "podreload")
	am.Spec.ClusterTLS = peerTLS()
	file, err := renderClusterTLS(am)
	require.NoError(t, err)
	objs, err := render(inputs{am: am, config: []byte("x"), clusterTLS: file})
	require.NoError(t, err)
	require.Equal(t, file, objs.clusterTLS.Data["cluster-tls-config.yaml"])
	require.Equal(t, "alertmanager-main-cluster-tls-config", objs.clusterTLS.Name)
	pod := objs.sts.Spec.Template
	require.Equal(t, fileHash(file), pod.Annotations[annotationClusterTLS])
	mounts := pod.Spec.Containers[0].VolumeMounts
	require.Contains(t, mounts, corev1.VolumeMount{Name: "cluster-tls-config", MountPath: "/etc/alertmanager/cluster_tls_config/cluster-tls-config.yaml", SubPath: "cluster-tls-config.yaml", ReadOnly: true})
	require.Contains(t, pod.Spec.Volumes, corev1.Volume{Name: "cluster-tls-config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "alertmanager-main-cluster-tls-config"}}})
	dirs := map[string]string{}
	for _, m := range mounts {
		dirs[m.MountPath] = m.Name
	}
	for _, dir := range []string{"server_tls/secret/peer-tls-key", "server_tls/secret/peer-tls-cert", "server_tls/configmap/peer-ca-ca", "client_tls/secret/peer-tls-key", "client_tls/secret/peer-tls-cert", "client_tls/configmap/peer-ca-ca"} {
		require.Contains(t, dirs, "/etc/alertmanager/cluster_tls_config/"+dir)
	}
	require.Regexp(t, `^cluster-tls-client-config-configmap-client-ca-peer-ca-[0-9a-f]{8}$`, dirs["/etc/alertmanager/cluster_tls_config/client_tls/configmap/peer-ca-ca"])
	require.Contains(t, pod.Spec.Containers[0].Args, "--cluster.tls-config=/etc/alertmanager/cluster_tls_config/cluster-tls-config.yaml")

	am.Spec.Version = "v0.23.0"
	objs, err = render(inputs{am: am, config: []byte("x"), clusterTLS: file})
	require.NoError(t, err)
	require.NotContains(t, objs.sts.Spec.Template.Annotations, annotationClusterTLS)
	for _, v := range objs.sts.Spec.Template.Spec.Volumes {
		require.NotContains(t, v.Name, "cluster-tls", "before 0.24")
	}
	require.NotNil(t, objs.clusterTLS, "the Secret written all the same, as prometheus-operator writes it")
}

// TestClusterPeerName: spec.clusterPeerName names the peer from 0.30; unset
// or empty, the pod's name.
func TestClusterPeerName(t *testing.T) {
	am := testAlertmanager("monitoring", "main", "podreload")
	require.Contains(t, args(am, "0.34.0"), "--cluster.peer-name=$(POD_NAME)")
	am.Spec.ClusterPeerName = ptr.To("")
	require.Contains(t, args(am, "0.34.0"), "--cluster.peer-name=$(POD_NAME)")
	am.Spec.ClusterPeerName = ptr.To("$(POD_NAME).am.example")
	require.Contains(t, args(am, "0.34.0"), "--cluster.peer-name=$(POD_NAME).am.example")
	require.NotContains(t, args(am, "0.29.0"), "--cluster.peer-name=$(POD_NAME).am.example")
}
