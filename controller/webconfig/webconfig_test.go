package webconfig

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/controller/store"
	"github.com/podreload/podreload/internal/testenv/selfsigned"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// dirs are where the tests' kind mounts the files.
func dirs() Dirs { return Dirs{Config: "/etc/web", TLS: "/etc/web-tls"} }

// tlsWeb is a spec.web whose certificate and key are the Secret "tls".
func tlsWeb(auth string, edit func(*monitoringv1.WebTLSConfig)) *monitoringv1.WebConfigFileFields {
	t := &monitoringv1.WebTLSConfig{
		Cert:      monitoringv1.SecretOrConfigMap{Secret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "tls"}, Key: "tls.crt"}},
		KeySecret: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "tls"}, Key: "tls.key"},
	}
	if auth != "" {
		t.ClientAuthType = ptr.To(monitoringv1.ClientAuthType(auth))
	}
	if edit != nil {
		edit(t)
	}
	return &monitoringv1.WebConfigFileFields{TLSConfig: t}
}

// tlsSecret is the Secret "tls" of ns with a certificate for names.
func tlsSecret(t *testing.T, ns string, names ...string) store.Objects {
	certPEM, keyPEM := selfsigned.Cert(t, names...)
	return store.Objects{Secrets: map[string]*corev1.Secret{ns + "/tls": {
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tls"},
		Data:       map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM},
	}}}
}

// mismatched is the Secret "tls" of ns with the key of another
// certificate than its own.
func mismatched(t *testing.T) store.Objects {
	objs := tlsSecret(t, "ns", "localhost")
	_, other := selfsigned.Cert(t, "localhost")
	objs.Secrets["ns/tls"].Data["tls.key"] = other
	return objs
}

// TestRender: the file of a TLS configuration names the files where the
// pods mount them, the reloader verifies the certificate by the name it
// holds, and what was read is returned.
func TestRender(t *testing.T) {
	t.Run("none", func(t *testing.T) {
		out, err := Render(dirs(), "ns", "k8s", nil, store.Objects{})
		require.NoError(t, err)
		require.Empty(t, cmp.Diff(Rendered{}, out))
		require.False(t, Enabled(&monitoringv1.WebConfigFileFields{}))
	})
	t.Run("tls, localhost", func(t *testing.T) {
		web := tlsWeb("", nil)
		out, err := Render(dirs(), "ns", "k8s", web, tlsSecret(t, "ns", "localhost"))
		require.NoError(t, err)
		require.Equal(t, "tls_server_config:\n  cert_file: ../web-tls/cert/tls.crt\n  key_file: ../web-tls/key/tls.key\n", string(out.File))
		require.Equal(t, Reload{}, out.Reload, "verified with itself at https://localhost")
		require.Equal(t, []store.Ref{{Kind: store.Secret, Namespace: "ns", Name: "tls"}}, out.Refs)
	})
	t.Run("tls, a wildcard name", func(t *testing.T) {
		out, err := Render(dirs(), "ns", "k8s", tlsWeb("", nil), tlsSecret(t, "ns", "*.monitoring.svc"))
		require.NoError(t, err)
		require.Equal(t, "k8s.monitoring.svc", out.Reload.ServerName, "the server's name for the *")
		pod := PodParts(dirs(), "web-secret", tlsWeb("", nil), out.Reload)
		require.Equal(t, "https", pod.Scheme)
		require.Equal(t, "localhost", pod.Host)
		require.Equal(t, []string{"--reload-tls-ca-file=/etc/web-tls/reload_ca/tls.crt", "--reload-tls-server-name=k8s.monitoring.svc"}, pod.ReloaderArgs)
	})
	t.Run("http headers", func(t *testing.T) {
		web := &monitoringv1.WebConfigFileFields{HTTPConfig: &monitoringv1.WebHTTPConfig{
			HTTP2: ptr.To(false), Headers: &monitoringv1.WebHTTPHeaders{XFrameOptions: "Deny", XContentTypeOptions: "NoSniff"},
		}}
		out, err := Render(dirs(), "ns", "k8s", web, store.Objects{})
		require.NoError(t, err)
		require.Equal(t, "http_server_config:\n  http2: false\n  headers:\n    X-Content-Type-Options: nosniff\n    X-Frame-Options: deny\n", string(out.File))
		pod := PodParts(dirs(), "web-secret", web, out.Reload)
		require.Equal(t, "http", pod.Scheme)
		require.Equal(t, []corev1.VolumeMount{{Name: "web-config", MountPath: "/etc/web", ReadOnly: true}}, pod.ServerMounts)
		require.Empty(t, pod.ReloaderArgs)
	})
}

// fileWeb is a spec.web whose certificate and key are files of the pod's,
// and its client CA when caFile is not empty.
func fileWeb(auth, caFile string) *monitoringv1.WebConfigFileFields {
	t := &monitoringv1.WebTLSConfig{CertFile: ptr.To("/etc/prometheus/secrets/tls/tls.crt"), KeyFile: ptr.To("/etc/prometheus/secrets/tls/tls.key")}
	if auth != "" {
		t.ClientAuthType = ptr.To(monitoringv1.ClientAuthType(auth))
	}
	if caFile != "" {
		t.ClientCAFile = ptr.To(caFile)
	}
	return &monitoringv1.WebConfigFileFields{TLSConfig: t}
}

// TestRenderFiles: certFile, keyFile and clientCAFile are written as
// they are, as prometheus-operator's pkg/webconfig writes them, and the
// pods mount nothing for them (they are the pod's); with certFile the
// config-reloader reloads at https://localhost without verifying the
// certificate, which the controller cannot read; with keyFile and a cert
// it verifies the cert as before.
func TestRenderFiles(t *testing.T) {
	t.Run("all files", func(t *testing.T) {
		web := fileWeb("VerifyClientCertIfGiven", "/etc/prometheus/configmaps/ca/ca.crt")
		out, err := Render(dirs(), "ns", "k8s", web, store.Objects{})
		require.NoError(t, err)
		require.Equal(t, `tls_server_config:
  cert_file: /etc/prometheus/secrets/tls/tls.crt
  key_file: /etc/prometheus/secrets/tls/tls.key
  client_auth_type: VerifyClientCertIfGiven
  client_ca_file: /etc/prometheus/configmaps/ca/ca.crt
`, string(out.File))
		require.Equal(t, Reload{Unverified: true}, out.Reload)
		require.Empty(t, out.Refs)
		pod := PodParts(dirs(), "web-secret", web, out.Reload)
		require.Equal(t, "https", pod.Scheme)
		require.Equal(t, "localhost", pod.Host)
		require.Equal(t, []corev1.VolumeMount{{Name: "web-config", MountPath: "/etc/web", ReadOnly: true}}, pod.ServerMounts)
		require.Len(t, pod.Volumes, 1)
		require.Empty(t, pod.ReloaderMounts)
		require.Empty(t, pod.ReloaderArgs, "no CA file: the config-reloader verifies nothing at localhost")
	})
	t.Run("a certificate file, a key Secret", func(t *testing.T) {
		web := tlsWeb("", func(c *monitoringv1.WebTLSConfig) {
			c.Cert, c.CertFile = monitoringv1.SecretOrConfigMap{}, ptr.To("/c/tls.crt")
		})
		out, err := Render(dirs(), "ns", "k8s", web, tlsSecret(t, "ns", "localhost"))
		require.NoError(t, err)
		require.Equal(t, "tls_server_config:\n  cert_file: /c/tls.crt\n  key_file: ../web-tls/key/tls.key\n", string(out.File))
		require.Equal(t, Reload{Unverified: true}, out.Reload)
		require.Equal(t, []store.Ref{{Kind: store.Secret, Namespace: "ns", Name: "tls"}}, out.Refs)
		pod := PodParts(dirs(), "web-secret", web, out.Reload)
		require.Equal(t, []string{"web-config", "web-tls-key"}, volumeNames(pod.Volumes))
		require.Empty(t, pod.ReloaderArgs)
	})
	t.Run("a certificate Secret, a key file", func(t *testing.T) {
		web := tlsWeb("", func(c *monitoringv1.WebTLSConfig) {
			c.KeySecret, c.KeyFile = corev1.SecretKeySelector{}, ptr.To("/k/tls.key")
		})
		out, err := Render(dirs(), "ns", "k8s", web, tlsSecret(t, "ns", "prometheus.example"))
		require.NoError(t, err)
		require.Equal(t, "tls_server_config:\n  cert_file: ../web-tls/cert/tls.crt\n  key_file: /k/tls.key\n", string(out.File))
		require.Equal(t, Reload{ServerName: "prometheus.example"}, out.Reload, "the certificate is checked, and verified")
		pod := PodParts(dirs(), "web-secret", web, out.Reload)
		require.Equal(t, []string{"web-config", "web-tls-cert", "web-tls-reload-ca"}, volumeNames(pod.Volumes))
		require.Equal(t, []string{"--reload-tls-ca-file=/etc/web-tls/reload_ca/tls.crt", "--reload-tls-server-name=prometheus.example"}, pod.ReloaderArgs)
	})
}

// volumeNames are the names of volumes, in order.
func volumeNames(volumes []corev1.Volume) []string {
	var names []string
	for _, v := range volumes {
		names = append(names, v.Name)
	}
	return names
}

// TestRenderErrors: each spec.web the pods could not serve is refused,
// naming the field; the references looked up come with the error.
func TestRenderErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		web  *monitoringv1.WebConfigFileFields
		objs store.Objects
		err  string
		refs bool
	}{
		"Secret missing": {
			web: tlsWeb("", nil), err: `render web config: spec.web.tlsConfig.cert: secret "ns/tls" not found (looking for key "tls.crt")`, refs: true,
		},
		"a client certificate required": {
			web: tlsWeb("RequireAndVerifyClientCert", nil),
			err: "render web config: spec.web.tlsConfig.clientAuthType: RequireAndVerifyClientCert is not supported: the kubelet's probes and the config-reloader present no client certificate, so the pods would never be ready; use VerifyClientCertIfGiven to verify the certificates clients present",
		},
		"a certificate and a file": {
			web: tlsWeb("", func(c *monitoringv1.WebTLSConfig) { c.CertFile = ptr.To("/x") }),
			err: "render web config: spec.web.tlsConfig: cert and certFile are mutually exclusive",
		},
		"a key and a file": {
			web: tlsWeb("", func(c *monitoringv1.WebTLSConfig) { c.KeyFile = ptr.To("/x") }),
			err: "render web config: spec.web.tlsConfig: keySecret and keyFile are mutually exclusive",
		},
		"a client CA and a file": {
			web: tlsWeb("VerifyClientCertIfGiven", func(c *monitoringv1.WebTLSConfig) {
				c.ClientCA, c.ClientCAFile = c.Cert, ptr.To("/x")
			}),
			err: "render web config: spec.web.tlsConfig: client_ca and clientCAFile are mutually exclusive",
		},
		"no key": {
			web: tlsWeb("", func(c *monitoringv1.WebTLSConfig) { c.KeySecret = corev1.SecretKeySelector{} }),
			err: "render web config: spec.web.tlsConfig: keySecret or keyFile must be set",
		},
		"no certificate": {
			web: &monitoringv1.WebConfigFileFields{TLSConfig: &monitoringv1.WebTLSConfig{KeyFile: ptr.To("/k")}},
			err: "render web config: spec.web.tlsConfig: cert or certFile must be set",
		},
		"a client CA file without a client auth type": {
			web: fileWeb("", "/ca.crt"),
			err: "render web config: spec.web.tlsConfig.clientCAFile: set without a clientAuthType that asks for client certificates (RequestClientCert or VerifyClientCertIfGiven)",
		},
		"a certificate without its key": {
			web:  tlsWeb("", func(c *monitoringv1.WebTLSConfig) { c.KeySecret, c.KeyFile = corev1.SecretKeySelector{}, ptr.To("/k") }),
			objs: store.Objects{Secrets: map[string]*corev1.Secret{"ns/tls": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tls"}, Data: map[string][]byte{"tls.crt": []byte("x")}}}},
			err:  "render web config: spec.web.tlsConfig.cert: holds no PEM certificate", refs: true,
		},
		"a key of another certificate": {
			web: tlsWeb("", nil), objs: mismatched(t), refs: true,
			err: "render web config: spec.web.tlsConfig: cert and keySecret are no certificate and key: tls: private key does not match public key",
		},
		"a header value": {
			web: &monitoringv1.WebConfigFileFields{HTTPConfig: &monitoringv1.WebHTTPConfig{Headers: &monitoringv1.WebHTTPHeaders{XFrameOptions: "allow"}}},
			err: `render web config: spec.web.httpConfig.headers.xFrameOptions: "allow" is not one of deny, sameorigin`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := Render(dirs(), "ns", "k8s", tc.web, tc.objs)
			require.EqualError(t, err, tc.err)
			require.Nil(t, out.File)
			if tc.refs {
				require.Equal(t, []store.Ref{{Kind: store.Secret, Namespace: "ns", Name: "tls"}}, out.Refs)
			}
		})
	}
}
