package promcfg

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	yaml "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/promyaml"
	"github.com/podreload/podreload/controller/store"
	"github.com/podreload/podreload/internal/testenv/goldenfile"
	"github.com/podreload/podreload/internal/testenv/promfixture"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// configCases returns the inputs under testdata/config: <case>.yaml, with
// the expected output in <case>.golden.
//
// A case named error-* must fail, reject-* must leave monitors out, any
// other must render every monitor, whatever its golden file says.
func configCases(t testing.TB) []string {
	t.Helper()
	return promfixture.Cases(t, "config")
}

// testInput is an Input with the Secrets and ConfigMaps its Lookup
// reads, by "namespace/name".
type testInput struct {
	Input
	Secrets    map[string]*corev1.Secret
	ConfigMaps map[string]*corev1.ConfigMap
}

// input is in.Input reading in's Secrets and ConfigMaps, with the shards
// and the version of its server, as the PrometheusServer kind passes them.
func (in testInput) input() Input {
	in.Lookup = store.NewLookup(store.Objects{Secrets: in.Secrets, ConfigMaps: in.ConfigMaps})
	if in.Server != nil {
		in.Shards = int(ptr.Deref(in.Server.Spec.Shards, 1))
		in.Version = in.Server.Spec.Version
	}
	return in.Input
}

// renderConfig renders the configuration of in with the rule files
// ruleFiles, as the PrometheusServer kind does: Server, then Parts.Head.
func renderConfig(in testInput, ruleFiles []string) ([]byte, []Rejection, error) {
	parts, rejected, err := Server(in.input())
	if err != nil {
		return nil, nil, err
	}
	head, err := parts.Head(ruleFiles)
	if err != nil {
		return nil, nil, err
	}
	return slices.Concat(append([][]byte{head}, parts.Body()...)...), rejected, nil
}

// TestRenderConfig renders each case, compares the result with its golden
// file, and checks the configuration with the real promtool.
func TestRenderConfig(t *testing.T) {
	promtool, err := toolbin.Path("promtool")
	require.NoError(t, err)
	for _, path := range configCases(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, rejected, err := renderConfig(loadConfigInput(t, path))
			switch {
			case strings.HasPrefix(name, "error-"):
				require.Error(t, err)
			case strings.HasPrefix(name, "reject-"):
				require.NoError(t, err)
				require.NotEmpty(t, rejected)
			default:
				require.NoError(t, err)
				require.Empty(t, rejected)
			}

			// golden, and -update, are in golden_test.go.
			golden(t, strings.TrimSuffix(path, ".yaml")+".golden", renderedGolden(out, rejected, err))

			if err == nil {
				promfixture.CheckConfig(t, promtool, out)
			}
		})
	}
}

// TestRenderConfigDeterministic renders each case again with its monitors
// and rule files shuffled, and checks that the output is the same and that
// the input is left untouched.
func TestRenderConfigDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, path := range configCases(t) {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".yaml"), func(t *testing.T) {
			in, ruleFiles := loadConfigInput(t, path)
			want, wantRejected, wantErr := renderConfig(in, ruleFiles)
			for range 5 {
				shuffled := in
				shuffled.ServiceMonitors = promfixture.Shuffle(rng, in.ServiceMonitors)
				shuffled.PodMonitors = promfixture.Shuffle(rng, in.PodMonitors)
				shuffled.Probes = promfixture.Shuffle(rng, in.Probes)
				shuffled.ScrapeConfigs = promfixture.Shuffle(rng, in.ScrapeConfigs)
				got, gotRejected, gotErr := renderConfig(shuffled, promfixture.Shuffle(rng, ruleFiles))
				require.Equal(t, string(want), string(got))
				require.Empty(t, cmp.Diff(wantRejected, gotRejected))
				require.Equal(t, fmt.Sprint(wantErr), fmt.Sprint(gotErr))
			}
			wantIn, _ := loadConfigInput(t, path)
			require.Empty(t, cmp.Diff(wantIn, in), "Server changed its input")
		})
	}
}

// TestRenderConfigLarge checks the configuration of the benchmark with
// promtool: 3,000 jobs with unique names.
func TestRenderConfigLarge(t *testing.T) {
	promtool, err := toolbin.Path("promtool")
	require.NoError(t, err)
	out, rejected, err := renderConfig(benchConfigInput(1000, 3), []string{benchRuleFile})
	require.NoError(t, err)
	require.Empty(t, rejected)
	require.Equal(t, 3000, bytes.Count(out, []byte("\n- job_name: serviceMonitor/")))
	promfixture.CheckConfig(t, promtool, out)
}

// BenchmarkRenderConfig renders 1,000 ServiceMonitors of 3 endpoints each,
// as the PrometheusServer kind does: Server, then the head with
// benchRuleFile.
func BenchmarkRenderConfig(b *testing.B) {
	in := benchConfigInput(1000, 3).input()
	var size int
	b.ReportAllocs()
	for b.Loop() {
		parts, _, err := Server(in)
		if err != nil {
			b.Fatal(err)
		}
		head, err := parts.Head([]string{benchRuleFile})
		if err != nil {
			b.Fatal(err)
		}
		size = len(head)
		for _, b := range parts.Body() {
			size += len(b)
		}
	}
	b.ReportMetric(float64(size), "config-bytes")
}

// benchRuleFile is the rule file of the configuration of benchConfigInput.
const benchRuleFile = "/etc/prometheus/rules/main-rulefiles-0/*.yaml"

// benchConfigInput is promfixture.BenchConfigInput(n, endpoints) as a
// testInput.
func benchConfigInput(n, endpoints int) testInput {
	in := promfixture.BenchConfigInput(n, endpoints)
	return testInput{Input: Input{Server: in.Server, ServiceMonitors: in.ServiceMonitors}, Secrets: in.Secrets}
}

// renderedGolden is the content of a golden file: the error, or the
// rejections as comments followed by prometheus.yaml.
func renderedGolden(config []byte, rejected []Rejection, err error) []byte {
	var b bytes.Buffer
	if err != nil {
		fmt.Fprintf(&b, "# error: %v\n", err)
		return b.Bytes()
	}
	for _, r := range rejected {
		fmt.Fprintf(&b, "# rejected %s %s/%s: %s\n", r.Kind, r.Namespace, r.Name, r.Reason)
	}
	b.Write(config)
	return b.Bytes()
}

// loadConfigInput reads a bundle of YAML documents: at most one
// PrometheusServer, ServiceMonitors, PodMonitors, Probes, ScrapeConfigs,
// Secrets and ConfigMaps, and a
// test-only document of kind RuleFiles whose files field gives the rule
// files, returned apart as render passes them. Unknown fields are errors,
// so a typo in a fixture cannot go unnoticed.
func loadConfigInput(t *testing.T, path string) (testInput, []string) {
	t.Helper()
	in := testInput{Secrets: map[string]*corev1.Secret{}, ConfigMaps: map[string]*corev1.ConfigMap{}}
	var ruleFiles []string
	promfixture.ReadDocuments(t, path, func(kind string, doc []byte) {
		switch kind {
		case v1alpha1.Kind:
			require.Nil(t, in.Server, "two PrometheusServers in %s", path)
			in.Server = &v1alpha1.PrometheusServer{}
			require.NoError(t, sigsyaml.UnmarshalStrict(doc, in.Server))
		case monitoringv1.ServiceMonitorsKind:
			in.ServiceMonitors = append(in.ServiceMonitors, promfixture.DecodeDocument[monitoringv1.ServiceMonitor](t, doc))
		case monitoringv1.PodMonitorsKind:
			in.PodMonitors = append(in.PodMonitors, promfixture.DecodeDocument[monitoringv1.PodMonitor](t, doc))
		case monitoringv1.ProbesKind:
			in.Probes = append(in.Probes, promfixture.DecodeDocument[monitoringv1.Probe](t, doc))
		case monitoringv1alpha1.ScrapeConfigsKind:
			in.ScrapeConfigs = append(in.ScrapeConfigs, promfixture.DecodeDocument[monitoringv1alpha1.ScrapeConfig](t, doc))
		case "Secret":
			s := promfixture.DecodeSecret(t, doc)
			in.Secrets[s.Namespace+"/"+s.Name] = s
		case "ConfigMap":
			cm := promfixture.DecodeDocument[corev1.ConfigMap](t, doc)
			in.ConfigMaps[cm.Namespace+"/"+cm.Name] = cm
		case "RuleFiles":
			var rf struct {
				metav1.TypeMeta `json:",inline"`
				Files           []string `json:"files"`
			}
			require.NoError(t, sigsyaml.UnmarshalStrict(doc, &rf))
			ruleFiles = append(ruleFiles, rf.Files...)
		default:
			t.Fatalf("unknown kind %q in %s", kind, path)
		}
	})
	return in, ruleFiles
}

// TestConfigYAMLEncodingMatchesYAMLv2 checks that yaml.v2 reads what
// promyaml.Encode writes as what yaml.v2's own Marshal writes, for every job
// and the sections around them, in every case.
func TestConfigYAMLEncodingMatchesYAMLv2(t *testing.T) {
	cases := map[string]testInput{"bench": benchConfigInput(20, 3)}
	for _, path := range configCases(t) {
		cases[filepath.Base(path)], _ = loadConfigInput(t, path)
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			if in.Server == nil {
				return
			}
			r := newRenderer(in.input())
			server, err := r.renderServer()
			if err != nil || r.scrapeClasses() != nil {
				return
			}
			docs := []yaml.MapSlice{{server.global}}
			if len(server.rest) > 0 {
				docs = append(docs, server.rest)
			}
			_ = r.eachMonitor(in.input(), serverOrder, func(_, _, _ string, js []yaml.MapSlice, err error) {
				if err == nil {
					docs = append(docs, yaml.MapSlice{{Key: "scrape_configs", Value: js}})
				}
			}) // A duplicate monitor is an error case: the others are compared.
			for _, doc := range docs {
				ours, err := promyaml.Encode(doc, 0)
				require.NoError(t, err)
				theirs, err := yaml.Marshal(doc)
				require.NoError(t, err)
				var got, want any
				require.NoError(t, yaml.UnmarshalStrict(ours, &got))
				require.NoError(t, yaml.UnmarshalStrict(theirs, &want))
				require.Empty(t, cmp.Diff(want, got))
			}
		})
	}
}

func TestMain(m *testing.M) {
	// Read through flag.Lookup by golden, so that no package variable holds it.
	flag.Bool("update", false, "rewrite the golden files in testdata/")
	goleak.VerifyTestMain(m)
}

// golden compares got with the file path, or rewrites the file with -update.
func golden(t *testing.T, path string, got []byte) { goldenfile.Check(t, path, got) }
