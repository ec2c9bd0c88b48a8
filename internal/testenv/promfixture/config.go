package promfixture

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/podreload/podreload/api/v1alpha1"
)

// Cases returns the inputs under testdata/<dir>: <case>.yaml, with the
// expected output in <case>.golden. It fails when there is no case, or a
// golden file has no input.
func Cases(t testing.TB, dir string) []string {
	t.Helper()
	cases, err := filepath.Glob(filepath.Join("testdata", dir, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, cases)
	goldens, err := filepath.Glob(filepath.Join("testdata", dir, "*.golden"))
	require.NoError(t, err)
	for _, g := range goldens {
		require.FileExists(t, strings.TrimSuffix(g, ".golden")+".yaml", "golden file without an input")
	}
	return cases
}

// BenchConfig is a server, the ServiceMonitors it selects and the Secrets
// they reference, by "namespace/name".
type BenchConfig struct {
	Server          *v1alpha1.PrometheusServer
	ServiceMonitors []*monitoringv1.ServiceMonitor
	Secrets         map[string]*corev1.Secret
}

// BenchConfigInput returns n ServiceMonitors of endpoints endpoints each,
// spread over 10 namespaces, with the usual selectors, relabelings and
// credentials, and the server monitoring/main that selects them.
func BenchConfigInput(n, endpoints int) BenchConfig {
	in := BenchConfig{
		Server: &v1alpha1.PrometheusServer{
			ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "main"},
			Spec: v1alpha1.PrometheusServerSpec{
				ScrapeInterval: "30s",
				ExternalLabels: map[string]string{"cluster": "bench"},
			},
		},
		Secrets: map[string]*corev1.Secret{},
	}
	for i := range n {
		ns := fmt.Sprintf("team-%d", i%10)
		app := fmt.Sprintf("app-%d", i)
		in.Secrets[ns+"/"+app] = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app},
			Data:       map[string][]byte{"token": []byte("token-" + app)},
		}
		sm := &monitoringv1.ServiceMonitor{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app},
			Spec: monitoringv1.ServiceMonitorSpec{
				JobLabel:     "app.kubernetes.io/name",
				TargetLabels: []string{"team"},
				Selector: metav1.LabelSelector{
					MatchLabels: map[string]string{"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": "bench"},
					MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"backend", "frontend"}},
					},
				},
			},
		}
		for j := range endpoints {
			sm.Spec.Endpoints = append(sm.Spec.Endpoints, benchEndpoint(app, j))
		}
		in.ServiceMonitors = append(in.ServiceMonitors, sm)
	}
	return in
}

// benchEndpoint is the endpoint j of the ServiceMonitor app of
// BenchConfigInput, authorized with the token of the Secret app.
func benchEndpoint(app string, j int) monitoringv1.Endpoint {
	return monitoringv1.Endpoint{
		Port:          fmt.Sprintf("metrics-%d", j),
		Path:          "/metrics",
		Interval:      "30s",
		ScrapeTimeout: "10s",
		HTTPConfigWithProxyAndTLSFiles: monitoringv1.HTTPConfigWithProxyAndTLSFiles{
			HTTPConfigWithTLSFiles: monitoringv1.HTTPConfigWithTLSFiles{
				HTTPConfigWithoutTLS: monitoringv1.HTTPConfigWithoutTLS{
					Authorization: &monitoringv1.SafeAuthorization{Credentials: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: app},
						Key:                  "token",
					}},
				},
			},
		},
		RelabelConfigs: []monitoringv1.RelabelConfig{
			{SourceLabels: []monitoringv1.LabelName{"__meta_kubernetes_pod_node_name"}, TargetLabel: "node"},
		},
		MetricRelabelConfigs: []monitoringv1.RelabelConfig{
			{SourceLabels: []monitoringv1.LabelName{"__name__"}, Regex: "go_gc_.*", Action: "drop"},
		},
	}
}

// CheckConfig runs promtool check config on a rendered configuration.
func CheckConfig(t *testing.T, promtool string, config []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "prometheus.yaml")
	require.NoError(t, os.WriteFile(path, config, 0o644))
	out, err := exec.CommandContext(t.Context(), promtool, "check", "config", path).CombinedOutput()
	require.NoError(t, err, "promtool check config:\n%s", out)
}

// ReadDocuments calls fn with the kind and the text of every document of
// the YAML stream in the file path. A document without a kind fails the
// test unless it holds only comments.
func ReadDocuments(t *testing.T, path string, fn func(kind string, doc []byte)) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err)
		var tm metav1.TypeMeta
		require.NoError(t, sigsyaml.Unmarshal(doc, &tm))
		if tm.Kind == "" {
			require.Empty(t, strings.TrimSpace(stripComments(doc)), "document without a kind in %s", path)
			continue
		}
		fn(tm.Kind, doc)
	}
}

// DecodeDocument decodes doc strictly into a new T.
func DecodeDocument[T any](t *testing.T, doc []byte) *T {
	t.Helper()
	v := new(T)
	require.NoError(t, sigsyaml.UnmarshalStrict(doc, v))
	return v
}

// DecodeSecret decodes a Secret and moves its stringData into data, as
// the API server does.
func DecodeSecret(t *testing.T, doc []byte) *corev1.Secret {
	t.Helper()
	s := DecodeDocument[corev1.Secret](t, doc)
	for k, v := range s.StringData {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
	return s
}

// stripComments is doc without its comment lines.
func stripComments(doc []byte) string {
	var b strings.Builder
	for _, l := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// Shuffle returns a copy of s in an order drawn from rng; nil stays nil.
func Shuffle[T any](rng *rand.Rand, s []T) []T {
	if s == nil {
		return nil
	}
	c := make([]T, len(s))
	copy(c, s)
	rng.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
	return c
}

// RandomWord is n random letters and digits drawn from rnd.
func RandomWord(rnd *rand.Rand, n int) string {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = chars[rnd.IntN(len(chars))]
	}
	return string(b)
}

// Gunzip decompresses a gzip stream of one member whose header has no
// name, comment, extra field or modification time.
func Gunzip(t *testing.T, gz []byte) []byte {
	t.Helper()
	r := bytes.NewReader(gz)
	zr, err := gzip.NewReader(r)
	require.NoError(t, err)
	// compress/gzip writes 255, unknown, as the operating system.
	require.Equal(t, gzip.Header{OS: 255}, zr.Header, "gzip header")
	zr.Multistream(false)
	b, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.NoError(t, zr.Close())
	require.Zero(t, r.Len(), "bytes after the gzip member")
	return b
}
