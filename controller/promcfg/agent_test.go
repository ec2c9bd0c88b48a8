package promcfg

import (
	"bytes"
	"os/exec"
	"slices"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/internal/testenv/promfixture"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// TestAgentAsOperator renders the agent of testdata/agent/operator.yaml
// (a PrometheusAgent of two shards, so that both write the sharding
// relabelings, with a ServiceMonitor, a PodMonitor, an additional scrape
// configuration, external labels and a remote write) with Agent,
// its model built here field by field, and compares the configuration
// with the one prometheus-operator's own generator writes for it
// (bin/opconfig --agent, GenerateAgentConfiguration), both as the
// Prometheus of this module parses them (bin/opconfig --parse): the
// sections, the jobs' order (PodMonitors, the additional jobs, then the
// rest) and every job the same.
func TestAgentAsOperator(t *testing.T) {
	const path = "testdata/agent/operator.yaml"
	opconfig, err := toolbin.Path("opconfig")
	require.NoError(t, err)
	in := testInput{Secrets: map[string]*corev1.Secret{}}
	promfixture.ReadDocuments(t, path, func(kind string, doc []byte) {
		switch kind {
		case monitoringv1alpha1.PrometheusAgentsKind:
			a := promfixture.DecodeDocument[monitoringv1alpha1.PrometheusAgent](t, doc)
			in.Server = &v1alpha1.PrometheusServer{
				ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: a.Name},
				Spec: v1alpha1.PrometheusServerSpec{
					Shards:                  a.Spec.Shards,
					ScrapeInterval:          a.Spec.ScrapeInterval,
					ExternalLabels:          a.Spec.ExternalLabels,
					ServiceMonitorSelector:  a.Spec.ServiceMonitorSelector,
					PodMonitorSelector:      a.Spec.PodMonitorSelector,
					AdditionalScrapeConfigs: a.Spec.AdditionalScrapeConfigs,
					RemoteWrite:             []v1alpha1.RemoteWriteSpec{{URL: string(a.Spec.RemoteWrite[0].URL)}},
				},
			}
		case "Secret":
			s := promfixture.DecodeSecret(t, doc)
			in.Secrets[s.Namespace+"/"+s.Name] = s
		case monitoringv1.ServiceMonitorsKind:
			in.ServiceMonitors = append(in.ServiceMonitors, promfixture.DecodeDocument[monitoringv1.ServiceMonitor](t, doc))
		case monitoringv1.PodMonitorsKind:
			in.PodMonitors = append(in.PodMonitors, promfixture.DecodeDocument[monitoringv1.PodMonitor](t, doc))
		default:
			t.Fatalf("%s: unexpected kind %q", path, kind)
		}
	})
	parts, rejected, err := Agent(in.input())
	require.NoError(t, err)
	require.Empty(t, rejected)
	head, err := parts.Head(nil)
	require.NoError(t, err)
	got := slices.Concat(append([][]byte{head}, parts.Body()...)...)
	require.NotContains(t, string(got), "rule_files")
	require.NotContains(t, string(got), "evaluation_interval")

	want := run(t, nil, opconfig, "--agent", path)
	require.Equal(t, string(run(t, want, opconfig, "--parse")), string(run(t, got, opconfig, "--parse")))
}

// run runs name with args and stdin, and returns its output.
func run(t *testing.T, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s %v:\n%s", name, args, stderr.String())
	return stdout.Bytes()
}

// TestAgentDaemonSet: with Input.DaemonSet, an agent's configuration has
// the jobs of its PodMonitors alone, each discovering the pods of the
// agent's node (the selector field prometheus-operator's generator
// writes, after attach_metadata), unsharded whatever the shards; its
// ServiceMonitors' jobs are not rendered. Without it, both are, and no
// selector.
func TestAgentDaemonSet(t *testing.T) {
	node := true
	in := testInput{Input: Input{
		Server: &v1alpha1.PrometheusServer{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "nodes"}},
		PodMonitors: []*monitoringv1.PodMonitor{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"},
			Spec: monitoringv1.PodMonitorSpec{
				AttachMetadata:      &monitoringv1.AttachMetadata{Node: &node},
				PodMetricsEndpoints: []monitoringv1.PodMetricsEndpoint{{Port: ptr.To("metrics")}},
			},
		}},
		ServiceMonitors: []*monitoringv1.ServiceMonitor{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "svc"},
			Spec:       monitoringv1.ServiceMonitorSpec{Endpoints: []monitoringv1.Endpoint{{Port: "web"}}},
		}},
	}}
	render := func(daemonSet bool) string {
		i := in.input()
		i.DaemonSet, i.Shards = daemonSet, 2
		parts, rejected, err := Agent(i)
		require.NoError(t, err)
		require.Empty(t, rejected)
		head, err := parts.Head(nil)
		require.NoError(t, err)
		return string(slices.Concat(append([][]byte{head}, parts.Body()...)...))
	}
	got := render(true)
	require.Contains(t, got, "job_name: podMonitor/apps/web/0")
	require.NotContains(t, got, "serviceMonitor/apps/svc/0")
	require.NotContains(t, got, "hashmod")
	require.Contains(t, got, `    attach_metadata:
      node: true
    selectors:
    - role: pod
      field: spec.nodeName=$(NODE_NAME)
`)
	got = render(false)
	require.Contains(t, got, "serviceMonitor/apps/svc/0")
	require.Contains(t, got, "hashmod")
	require.NotContains(t, got, "selectors")
}
