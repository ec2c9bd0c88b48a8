package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// testCA is a certificate authority made for a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a server certificate for dnsName signed by ca, and its
// key, PEM encoded.
func (ca *testCA) issue(t *testing.T, dnsName string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	k, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: k})
}

func argValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// TestWebTLS runs a PrometheusServer with HTTPS, its certificate issued by
// a CA for the Service's name in a kubernetes.io/tls Secret with the CA
// beside it, as cert-manager writes it: the real Prometheus serves HTTPS
// with the web configuration the controller rendered, and the
// config-reloader, with the flags rendered, reloads it over HTTPS,
// verifying its certificate, when a rule is added. The same reloader with
// another CA fails, saying why.
func TestWebTLS(t *testing.T) {
	cl := startCluster(t)
	const ns, name, dnsName = "web-tls", "example", "example.web-tls.svc"
	require.NoError(t, cl.c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	// No controller makes it on this control plane.
	require.NoError(t, cl.c.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}))
	ca := newCA(t, "podreload e2e CA")
	cert, key := ca.issue(t, dnsName)
	require.NoError(t, cl.c.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "example-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": cert, "tls.key": key, "ca.crt": ca.pem},
	}))
	sel := func(key string) *corev1.SecretKeySelector {
		return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "example-tls"}, Key: key}
	}
	require.NoError(t, cl.c.Create(t.Context(), &v1alpha1.PrometheusServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.PrometheusServerSpec{
			RuleSelector: &metav1.LabelSelector{},
			Web: &monitoringv1.PrometheusWebSpec{WebConfigFileFields: monitoringv1.WebConfigFileFields{TLSConfig: &monitoringv1.WebTLSConfig{
				Cert: monitoringv1.SecretOrConfigMap{Secret: sel("tls.crt")}, KeySecret: *sel("tls.key"),
			}}},
		},
	}))
	sts := cl.statefulSet(t, client.ObjectKey{Namespace: ns, Name: name})
	sidecar := sts.Spec.Template.Spec.Containers[1]
	require.Equal(t, "https://localhost:9090/-/reload", argValue(sidecar.Args, "reload-url"))
	require.Equal(t, "/etc/prometheus/web_tls/reload_ca/ca.crt", argValue(sidecar.Args, "reload-tls-ca-file"))
	require.Equal(t, dnsName, argValue(sidecar.Args, "reload-tls-server-name"))

	prom, err := toolbin.Path("prometheus")
	require.NoError(t, err)
	pod := cl.startPod(t, sts, map[string]string{prometheusImage: prom, reloaderImage: ours("config-reloader")})
	promAddr := pod.ports[pod.containerPort(t, "prometheus", "web")]
	reloaderURL := pod.url(pod.containerPort(t, "config-reloader", "reloader-web"))

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.pem)
	https := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: dnsName}}}
	getTLS := func(path string) (string, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+promAddr+path, nil)
		if err != nil {
			return "", err
		}
		resp, err := https.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
		}
		return string(b), err
	}
	eventually(t, "Prometheus ready over HTTPS", func() error {
		_, err := getTLS("/-/ready")
		return errors.Join(pod.containers["prometheus"].exited(), err)
	})
	code, body, err := get(t.Context(), "http://"+promAddr+"/-/ready")
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, code, "plain HTTP is refused: %s", body)

	// A rule added reaches Prometheus through a reload over HTTPS.
	before, err := metric(t.Context(), reloaderURL+"/metrics", "reloader_reloads_total")
	require.NoError(t, err)
	require.NoError(t, cl.c.Create(t.Context(), &monitoringv1.PrometheusRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tls"},
		Spec:       monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{Name: "tls", Rules: []monitoringv1.Rule{record("tls:up:sum", "sum(up)")}}}},
	}))
	eventually(t, "the rule loaded", func() error {
		rules, err := getTLS("/api/v1/rules")
		if err == nil && !strings.Contains(rules, `"name":"tls:up:sum"`) {
			err = fmt.Errorf("rules: %s", rules)
		}
		return errors.Join(pod.containers["config-reloader"].exited(), err)
	})
	after, err := metric(t.Context(), reloaderURL+"/metrics", "reloader_reloads_total")
	require.NoError(t, err)
	require.Greater(t, after, before)
	ok, err := metric(t.Context(), reloaderURL+"/metrics", "reloader_last_reload_successful")
	require.NoError(t, err)
	require.Equal(t, 1.0, ok)
	require.Contains(t, pod.containers["config-reloader"].output(), "server certificate verified with CA file "+pod.root+"/etc/prometheus/web_tls/reload_ca/ca.crt")

	wrongCA(t, pod, sidecar.Args, newCA(t, "another CA").pem)
}

// wrongCA runs a config-reloader with the reload flags of args, but
// another CA, against the pod's Prometheus: its reload fails, and says
// the certificate is signed by an unknown authority.
func wrongCA(t *testing.T, pod *loopbackPod, args []string, caPEM []byte) {
	t.Helper()
	dir := t.TempDir()
	caFile, config := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "prometheus.yaml.gz")
	require.NoError(t, os.WriteFile(caFile, caPEM, 0o600))
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, err := w.Write([]byte("global:\n  scrape_interval: 15s\n"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, os.WriteFile(config, gz.Bytes(), 0o600))
	addr := freeAddr(t)
	reloadURL := pod.rewrite.Replace(argValue(args, "reload-url"))
	require.True(t, strings.HasPrefix(reloadURL, "https://localhost:"), reloadURL)
	wrong := start(t, "config-reloader-wrong-ca", nil, ours("config-reloader"),
		"--config-file="+config, "--config-envsubst-file="+filepath.Join(dir, "out", "prometheus.env.yaml"),
		"--reload-url="+reloadURL, "--reload-tls-ca-file="+caFile,
		"--reload-tls-server-name="+argValue(args, "reload-tls-server-name"), "--listen-address="+addr)
	eventually(t, "the reload with the wrong CA fails", func() error {
		failed, err := metric(t.Context(), "http://"+addr+"/metrics", "reloader_reloads_failed_total")
		if err == nil && failed < 1 {
			err = fmt.Errorf("reloader_reloads_failed_total is %v", failed)
		}
		return errors.Join(wrong.exited(), err)
	})
	last, err := metric(t.Context(), "http://"+addr+"/metrics", "reloader_last_reload_successful")
	require.NoError(t, err)
	require.Zero(t, last)
	require.Contains(t, wrong.output(), "x509: certificate signed by unknown authority")
}
