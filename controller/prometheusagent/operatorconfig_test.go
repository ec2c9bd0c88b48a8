package prometheusagent

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/internal/testenv/promfixture"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// TestOperatorConfig renders the PrometheusAgent of
// testdata/operator-config.yaml, which sets the common fields that change
// the configuration (remote write's sigv4, Azure AD, bearer token file,
// round-robin DNS and message; otlp, tracing, runtime, the scrape failure
// log file, podTargetLabels, apiserverConfig), through FromAgent as the
// takeover does, and compares its configuration with the one
// prometheus-operator's own agent generator writes (bin/opconfig --agent),
// both as Prometheus parses them (bin/opconfig --parse): the same; and
// the pod has the log-file volume.
func TestOperatorConfig(t *testing.T) {
	objs := operatorConfig(t, "testdata/operator-config.yaml")
	// The scrape failure log file, without a directory, is on the
	// log-file emptyDir, as prometheus-operator mounts it.
	pod := objs.StatefulSets[0].Spec.Template.Spec
	require.True(t, slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "log-file" && v.EmptyDir != nil }))
	prom := pod.Containers[slices.IndexFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == "prometheus" })]
	require.Equal(t, "/var/log/prometheus", mount(t, prom, "log-file").MountPath)
}

// TestOperatorConfigDaemonSet is TestOperatorConfig for the agent in
// DaemonSet mode of testdata/operator-config-daemonset.yaml: the
// PodMonitors' jobs restricted to the node's pods, unsharded, no
// ServiceMonitor's, as prometheus-operator's generator writes them in
// that mode (opconfig --agent reads the mode from the object).
func TestOperatorConfigDaemonSet(t *testing.T) {
	objs := operatorConfig(t, "testdata/operator-config-daemonset.yaml")
	require.NotNil(t, objs.DaemonSet)
	cfg := string(promfixture.Gunzip(t, objs.ConfigSecret.Data[promserver.ConfigSecretKey]))
	require.Equal(t, 3, strings.Count(cfg, "field: spec.nodeName=$(NODE_NAME)"), "each PodMonitor endpoint's job")
}

// operatorConfig renders the PrometheusAgent of the fixture path, with its
// Secrets and monitors, through FromAgent, checks its configuration is
// the one prometheus-operator's generator writes for it (bin/opconfig
// --agent), both as Prometheus parses them, and returns the objects.
func operatorConfig(t *testing.T, path string) *promserver.Objects {
	t.Helper()
	opconfig, err := toolbin.Path("opconfig")
	require.NoError(t, err)
	in := promserver.Inputs{Namespaces: map[string]labels.Set{"monitoring": {}}, Secrets: map[string]*corev1.Secret{}}
	promfixture.ReadDocuments(t, path, func(kind string, doc []byte) {
		switch kind {
		case monitoringv1alpha1.PrometheusAgentsKind:
			server, unsupported := FromAgent(promfixture.DecodeDocument[monitoringv1alpha1.PrometheusAgent](t, doc))
			require.Empty(t, unsupported)
			in.Server, in.Layout = server.PrometheusServer, server.Layout
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
	objs, err := promserver.Render(in, promserver.WorkloadOptions{DefaultReloaderImage: "podreload:test"}, nil)
	require.NoError(t, err)
	require.Empty(t, objs.Rejected)
	got := promfixture.Gunzip(t, objs.ConfigSecret.Data[promserver.ConfigSecretKey])

	want := run(t, nil, opconfig, "--agent", path)
	require.Equal(t, string(run(t, want, opconfig, "--parse")), string(run(t, got, opconfig, "--parse")))
	return objs
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

// TestRenderRefusesTSDBSettings: an agent with more than one TSDB
// setting is refused, where prometheus-operator's agent generator writes
// a storage section for each, which Prometheus refuses; one is rendered.
func TestRenderRefusesTSDBSettings(t *testing.T) {
	a := testAgent("monitoring", "edge")
	a.Spec.TSDB = &monitoringv1.TSDBSpec{OutOfOrderTimeWindow: ptr.To(monitoringv1.Duration("5m"))}
	server, unsupported := FromAgent(a)
	require.Empty(t, unsupported)
	_, err := promserver.Render(promserver.Inputs{Server: server.PrometheusServer, Layout: server.Layout}, promserver.WorkloadOptions{}, nil)
	require.NoError(t, err)

	a.Spec.TSDB.ChunkEncoding = &monitoringv1.ChunkEncodingSpec{Floats: ptr.To(monitoringv1.ChunkEncodingFloatsXor2)}
	a.Spec.Version = "v3.13.0"
	server, _ = FromAgent(a)
	_, err = promserver.Render(promserver.Inputs{Server: server.PrometheusServer, Layout: server.Layout}, promserver.WorkloadOptions{}, nil)
	require.EqualError(t, err, "render agent config: spec.tsdb: prometheus-operator writes one storage section per setting of an agent, which Prometheus refuses: set one of outOfOrderTimeWindow, staleSeriesCompactionThreshold and chunkEncoding.floats")
}
