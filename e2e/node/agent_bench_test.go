package node

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podreload/podreload/internal/testenv/docsection"
	"github.com/podreload/podreload/internal/testenv/node"
)

// agentEdit is one PodMonitor edit's way through the node, each stage
// timed from the API write.
type agentEdit struct{ controller, served time.Duration }

// BenchmarkDaemonSetAgentEdit times PodMonitor edits until every agent of
// a PrometheusAgent in DaemonSet mode runs them, on a real node: the
// controller (deploy/), the agent handed to it, its config-reloader with
// the API source (the default); each edit changes a relabeling of the
// PodMonitor's endpoint. Stages: the API write, the controller's write of
// the agent's configuration Secret, every agent pod running the new
// configuration (its /api/v1/status/config).
func BenchmarkDaemonSetAgentEdit(b *testing.B) {
	var edits []agentEdit
	var pods int
	for b.Loop() {
		edits, pods = runAgentEdits(b)
	}
	r := agentReport(edits, pods)
	b.Log(r)
	if path := os.Getenv(benchDocsEnv); path != "" {
		require.NoError(b, docsection.Replace(path, "node daemonset agent edit", "e2e/node/agent_bench_test.go", r))
	}
}

func runAgentEdits(b *testing.B) ([]agentEdit, int) {
	cl := startCluster(b, node.Options{})
	cl.startOperator(b, "")
	cl.deployController(b)
	const name = "bench"
	cl.daemonSetAgent(b, name, cl.receiver(b))
	pods := cl.daemonSetPods(b, name)
	var edits []agentEdit
	for i := range benchEdits {
		value := fmt.Sprintf("edit-%d", i)
		start := time.Now()
		cl.editPodMonitor(b, name, value)
		var e agentEdit
		eventuallyEvery(b, time.Minute, 10*time.Millisecond, "controller wrote "+value, func() error {
			secret, err := cl.kube.CoreV1().Secrets("default").Get(b.Context(), "prom-agent-"+name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			zr, err := gzip.NewReader(bytes.NewReader(secret.Data["prometheus.yaml.gz"]))
			if err != nil {
				return err
			}
			config, err := io.ReadAll(zr)
			if err != nil {
				return err
			}
			if !bytes.Contains(config, []byte("replacement: "+value)) {
				return fmt.Errorf("not in the configuration Secret")
			}
			return nil
		})
		e.controller = time.Since(start)
		for _, pod := range pods {
			eventuallyEvery(b, time.Minute, 10*time.Millisecond, pod+" runs "+value, func() error {
				return cl.agentConfigHas(b, pod, "replacement: "+value)
			})
		}
		e.served = time.Since(start)
		edits = append(edits, e)
	}
	return edits, len(pods)
}

func agentReport(edits []agentEdit, pods int) string {
	if len(edits) == 0 {
		return ""
	}
	q := func(f func(agentEdit) time.Duration, p float64) time.Duration { return quantile(edits, f, p) }
	controller := func(e agentEdit) time.Duration { return e.controller }
	served := func(e agentEdit) time.Duration { return e.served }
	var w strings.Builder
	fmt.Fprintf(&w, "\n%d PodMonitor edits (a relabeling) on a real node (internal/testenv/node), a PrometheusAgent in DaemonSet mode (%d agent pods, one per node) handed to the controller, config-reloader with the API source, each timed from the API write:\n\n", len(edits), pods)
	fmt.Fprintf(&w, "| stage | p50 | p99 |\n|---|---|---|\n")
	fmt.Fprintf(&w, "| API write → controller wrote the agent's configuration Secret | %s | %s |\n", q(controller, 0.5), q(controller, 0.99))
	fmt.Fprintf(&w, "| → every agent pod runs it (`/api/v1/status/config`) | %s | %s |\n", q(served, 0.5), q(served, 0.99))
	return w.String()
}
