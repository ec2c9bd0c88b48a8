package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/testlog"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, controlplane.InformerLeaks()...)
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"unknown flag", []string{"--no-such-flag"}, "controller: unknown long flag '--no-such-flag'\n"},
		{"bad duration", []string{"--resync-interval=soon"}, "controller: time: invalid duration \"soon\"\n"},
		{"bad memlimit ratio", []string{"--auto-gomemlimit-ratio=half"}, "controller: strconv.ParseFloat: parsing \"half\": invalid syntax\n"},
		{"unknown command flag", []string{"crds", "--namespace=default"}, "controller: unknown long flag '--namespace'\n"},
		{"run flag before crds", []string{"--namespace=default", "crds"}, "controller: unexpected crds\n"},
		{"missing kubeconfig", []string{"--kubeconfig=/nonexistent/kubeconfig"}, `msg="load kubeconfig" err="stat /nonexistent/kubeconfig: no such file or directory"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr testlog.Buffer
			require.Equal(t, 2, run(t.Context(), tc.args, io.Discard, &stderr))
			require.Contains(t, stderr.String(), tc.stderr)
		})
	}
}

// TestRun runs the controller against a real kube-apiserver and etcd: it
// becomes ready, serves its metrics and controller-runtime's, and exits 0
// when stopped.
func TestRun(t *testing.T) {
	kubeconfig := controlplane.Start(t, filepath.Join("..", "..", "deploy", "crds")).Kubeconfig

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	ctx, cancel := context.WithCancel(t.Context())
	var stderr testlog.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--kubeconfig=" + kubeconfig, "--web.listen-address=" + addr, "--namespace=default", "--log.level=debug"}, io.Discard, &stderr)
	}()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		code, body := get("/-/ready")
		assert.Equal(c, http.StatusOK, code, body)
	}, 30*time.Second, 20*time.Millisecond, stderr.String())
	// controller-runtime sets its worker gauge once the workers start,
	// just after the caches are synced and the controller ready.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		code, body := get("/metrics")
		assert.Equal(c, http.StatusOK, code, body)
		for _, name := range []string{"podreload_controller_reconciles_total", "controller_runtime_active_workers", "go_goroutines", "controller_build_info"} {
			assert.Contains(c, body, "\n"+name, "metric %s", name)
		}
	}, 30*time.Second, 20*time.Millisecond)
	code, _ := get("/healthz")
	require.Equal(t, http.StatusOK, code)

	cancel()
	select {
	case code := <-done:
		require.Equal(t, 0, code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the controller did not stop")
	}
	require.True(t, strings.Contains(stderr.String(), `msg=starting`), stderr.String())
}

// TestCRDs checks that `controller crds` prints the files of deploy/crds,
// all of them or podreload's own, and that its output piped to `kubectl
// apply --server-side -f -` installs CRDs a real API server establishes.
func TestCRDs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "deploy", "crds", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 10, "deploy/crds: run make generate")
	var all, ours []byte
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		all = append(all, data...)
		if !strings.HasPrefix(filepath.Base(f), upstreamCRDPrefix) {
			ours = append(ours, data...)
		}
		var crd metav1.PartialObjectMetadata
		require.NoError(t, yaml.Unmarshal(data, &crd), f)
		require.Equal(t, "CustomResourceDefinition", crd.Kind, f)
		names = append(names, "crd/"+crd.Name)
	}
	require.Contains(t, names, "crd/prometheusservers.podreload.dev")

	crds := func(t *testing.T, args ...string) []byte {
		t.Helper()
		var stdout bytes.Buffer
		var stderr testlog.Buffer
		require.Equal(t, 0, run(t.Context(), append([]string{"crds"}, args...), &stdout, &stderr), stderr.String())
		require.Empty(t, stderr.String())
		return stdout.Bytes()
	}
	t.Run("the files of deploy/crds", func(t *testing.T) {
		got := crds(t)
		require.True(t, bytes.Equal(all, got), "printed %d bytes, the files hold %d: %s", len(got), len(all), firstDifference(all, got))
	})
	t.Run("without upstream, podreload's own", func(t *testing.T) {
		require.NotEqual(t, len(all), len(ours))
		got := crds(t, "--no-upstream")
		require.True(t, bytes.Equal(ours, got), "printed %d bytes, the files hold %d: %s", len(got), len(ours), firstDifference(ours, got))
	})

	t.Run("kubectl apply --server-side establishes them", func(t *testing.T) {
		kubeconfig := controlplane.Start(t).Kubeconfig
		kubectl, err := toolbin.Path("kubectl")
		require.NoError(t, err)
		kubectlRun := func(stdin []byte, args ...string) string {
			t.Helper()
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
			cmd.Stdin = bytes.NewReader(stdin)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "kubectl %s: %s", strings.Join(args, " "), out)
			return string(out)
		}
		out := kubectlRun(crds(t), "apply", "--server-side", "-f", "-")
		require.Equal(t, len(names), strings.Count(out, " serverside-applied\n"), out)
		kubectlRun(nil, append([]string{"wait", "--for=condition=Established", "--timeout=60s"}, names...)...)
		// Served: every kind can be listed.
		out = kubectlRun(nil, "get", "--all-namespaces", "prometheusservers,servicemonitors,podmonitors,probes,scrapeconfigs,prometheusrules")
		require.Equal(t, "No resources found\n", out)
	})
}

// firstDifference describes the first line that differs between want and
// got.
func firstDifference(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := range min(len(w), len(g)) {
		if w[i] != g[i] {
			return fmt.Sprintf("line %d: printed %q, the files %q", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("printed %d lines, the files %d", len(g), len(w))
}

// TestTakeoverCheck checks what `controller takeover-check` tells of
// the objects in YAML files: a Prometheus, an Alertmanager and a
// PrometheusAgent it can take over (the Alertmanagers with a note of the
// AlertmanagerConfigs alertmanagerConfigFileSystemMode leaves out, or none
// under AllowAll), one of each kind refused (exit status
// 1), an agent in DaemonSet mode taken over and one that sets what
// prometheus-operator refuses in that mode, the other kinds skipped.
func TestTakeoverCheck(t *testing.T) {
	var stdout bytes.Buffer
	var stderr testlog.Buffer
	code := run(t.Context(), []string{"takeover-check", filepath.Join("testdata", "takeover-check.yaml")}, &stdout, &stderr)
	require.Empty(t, stderr.String())
	require.Equal(t, 1, code, "a Prometheus is refused")
	require.Equal(t, `Prometheus monitoring/k8s (controller-id "podreload"):
  can be taken over: annotate it with operator.prometheus.io/controller-id=<the controller's --controller-id>
  rolls once, one pod at a time, to podreload's sidecar: StatefulSet prometheus-k8s (2 replicas each); PVCs and data stay
Prometheus team-a/topology-shards (controller-id ""):
  refused, not supported yet: spec.shardingStrategy; annotated, it stays untouched
Alertmanager monitoring/main (controller-id ""):
  can be taken over: annotate it with operator.prometheus.io/controller-id=<the controller's --controller-id>
  note: spec.alertmanagerConfigFileSystemMode unset (FromAlertmanagerConfigMatcherStrategy, prometheus-operator v0.95's default): of the AlertmanagerConfigs that reference a file of the Alertmanager container (Telegram's botTokenFile, Pushover's userKeyFile and tokenFile), every one but spec.alertmanagerConfiguration's (matcher strategy OnNamespace) are left out, as prometheus-operator v0.95 leaves them out and earlier versions rendered them; set it to AllowAll to keep rendering them
  rolls once, one pod at a time, to podreload's sidecar: StatefulSet alertmanager-main (3 replicas each); PVCs and data stay
Alertmanager monitoring/except-own (controller-id ""):
  can be taken over: annotate it with operator.prometheus.io/controller-id=<the controller's --controller-id>
  note: spec.alertmanagerConfigFileSystemMode unset (FromAlertmanagerConfigMatcherStrategy, prometheus-operator v0.95's default): of the AlertmanagerConfigs that reference a file of the Alertmanager container (Telegram's botTokenFile, Pushover's userKeyFile and tokenFile), those outside namespace monitoring (matcher strategy OnNamespaceExceptForAlertmanagerNamespace) are left out, as prometheus-operator v0.95 leaves them out and earlier versions rendered them; set it to AllowAll to keep rendering them
  rolls once, one pod at a time, to podreload's sidecar: StatefulSet alertmanager-except-own (1 replicas each); PVCs and data stay
Alertmanager monitoring/allow-all (controller-id ""):
  can be taken over: annotate it with operator.prometheus.io/controller-id=<the controller's --controller-id>
  rolls once, one pod at a time, to podreload's sidecar: StatefulSet alertmanager-allow-all (1 replicas each); PVCs and data stay
Alertmanager team-a/patched-reloader (controller-id ""):
  refused, not supported yet: spec.containers; annotated, it stays untouched
PrometheusAgent monitoring/kps-prometheus (controller-id ""):
  can be taken over: annotate it with operator.prometheus.io/controller-id=<the controller's --controller-id>
  rolls once, one pod at a time, to podreload's sidecar: StatefulSet prom-agent-kps-prometheus (1 replicas each); PVCs and data stay
PrometheusAgent edge/per-node (controller-id ""):
  can be taken over: annotate it with operator.prometheus.io/controller-id=<the controller's --controller-id>
  rolls once, node by node, to podreload's sidecar: DaemonSet prom-agent-per-node
PrometheusAgent edge/per-node-old (controller-id ""):
  invalid, refused by prometheus-operator's validation: spec.replicas: replicas cannot be set when mode is DaemonSet; spec.serviceMonitorSelector: serviceMonitorSelector cannot be set when mode is DaemonSet; annotated, it is taken over and nothing is written until they go
`, stdout.String())

	stdout.Reset()
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("apiVersion: monitoring.coreos.com/v1\nkind: Prometheus\nspec:\n  replicas: two\n"), 0o600))
	require.Equal(t, 2, run(t.Context(), []string{"takeover-check", bad}, &stdout, &stderr))
	require.Contains(t, stderr.String(), bad+": Prometheus:")
}
