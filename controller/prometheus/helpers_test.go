package prometheus

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/promcfg"
	"github.com/podreload/podreload/controller/store"
)

// The helpers of the configuration's tests that the tests of the
// rendering and of the reconciler use too (package promcfg has their
// originals).

// renderConfig renders the configuration of server with the objects it
// selected, sel, reading secrets, and the rule files ruleFiles, as render
// does: promcfg.Server, then Parts.Head.
func renderConfig(server *v1alpha1.PrometheusServer, sel selected, secrets map[string]*corev1.Secret, ruleFiles []string) ([]byte, []promcfg.Rejection, error) {
	parts, rejected, err := promcfg.Server(configInput(server, sel, store.NewLookup(store.Objects{Secrets: secrets}), nil))
	if err != nil {
		return nil, nil, err
	}
	head, err := parts.Head(ruleFiles)
	if err != nil {
		return nil, nil, err
	}
	return slices.Concat(append([][]byte{head}, parts.Body()...)...), rejected, nil
}

// benchConfig is a server, the ServiceMonitors it selects and the Secrets
// they reference.
type benchConfig struct {
	Server          *v1alpha1.PrometheusServer
	ServiceMonitors []*monitoringv1.ServiceMonitor
	Secrets         map[string]*corev1.Secret
}

// benchConfigInput returns n ServiceMonitors of endpoints endpoints each,
// spread over 10 namespaces, with the usual selectors, relabelings and
// credentials (package promcfg's benchmark has the same).
func benchConfigInput(n, endpoints int) benchConfig {
	in := benchConfig{
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
			sm.Spec.Endpoints = append(sm.Spec.Endpoints, monitoringv1.Endpoint{
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
			})
		}
		in.ServiceMonitors = append(in.ServiceMonitors, sm)
	}
	return in
}

// checkConfig runs promtool check config on a rendered configuration.
func checkConfig(t *testing.T, promtool string, config []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "prometheus.yaml")
	require.NoError(t, os.WriteFile(path, config, 0o644))
	out, err := exec.CommandContext(t.Context(), promtool, "check", "config", path).CombinedOutput()
	require.NoError(t, err, "promtool check config:\n%s", out)
}

// readDocuments calls fn with the kind and the text of every document of
// the YAML stream in the file path.
func readDocuments(t *testing.T, path string, fn func(kind string, doc []byte)) {
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

// decodeDocument decodes doc strictly into a new T.
func decodeDocument[T any](t *testing.T, doc []byte) *T {
	t.Helper()
	v := new(T)
	require.NoError(t, sigsyaml.UnmarshalStrict(doc, v))
	return v
}

// decodeSecret decodes a Secret and moves its stringData into data, as
// the API server does.
func decodeSecret(t *testing.T, doc []byte) *corev1.Secret {
	t.Helper()
	s := decodeDocument[corev1.Secret](t, doc)
	for k, v := range s.StringData {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
	return s
}

func stripComments(doc []byte) string {
	var b strings.Builder
	for _, l := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l)
		}
	}
	return b.String()
}

func shuffle[T any](rng *rand.Rand, s []T) []T {
	if s == nil {
		return nil
	}
	c := make([]T, len(s))
	copy(c, s)
	rng.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
	return c
}
