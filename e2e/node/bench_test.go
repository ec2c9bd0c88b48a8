package node

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/internal/testenv/docsection"
	"github.com/podreload/podreload/internal/testenv/node"
)

// benchDocsEnv names the file (docs/benchmarks.md) the benchmark writes its
// section into; unset, it only logs.
const benchDocsEnv = "PODRELOAD_BENCH_DOCS"

// benchEdits is the number of PrometheusRule edits timed per setting.
const benchEdits = 20

// edit is one PrometheusRule edit's way through the node, each stage
// timed from the API write.
type edit struct {
	controller, projected, reloaded, served time.Duration
}

// BenchmarkNodeRuleEdit times PrometheusRule edits until the example's
// Prometheus serves them, on a real node: with the API source (the
// default) and, in the same run, through the kubelet's projection with its
// default syncFrequency and with 1s. Stages: API write, the controller's
// write of the rule ConfigMap, the rule file written into the pod (by the
// kubelet's projection, or by config-reloader from its watch), Prometheus'
// reload (the time it says it finished), the rule served.
func BenchmarkNodeRuleEdit(b *testing.B) {
	for _, setting := range []struct {
		name   string
		source string
		sync   time.Duration
	}{
		{"source=api", v1alpha1.SourceAPI, 0},
		{"source=volume syncFrequency=default(1m)", v1alpha1.SourceVolume, 0},
		{"source=volume syncFrequency=1s", v1alpha1.SourceVolume, time.Second},
	} {
		b.Run(setting.name, func(b *testing.B) {
			var edits []edit
			for b.Loop() {
				edits = runEdits(b, setting.source, setting.sync)
			}
			// Each setting has its own section: the default sync
			// takes twenty minutes, and a setting may be run alone
			// (-bench 'NodeRuleEdit/source=api').
			r := report(setting.name, edits)
			b.Log(r)
			if path := os.Getenv(benchDocsEnv); path != "" {
				require.NoError(b, docsection.Replace(path, "node "+setting.name, "e2e/node/bench_test.go", r))
			}
		})
	}
}

func runEdits(b *testing.B, source string, sync time.Duration) []edit {
	cl := startCluster(b, node.Options{SyncFrequency: sync})
	cl.source = source
	cl.deployController(b)
	pod := cl.deployExample(b)
	var edits []edit
	for i := range benchEdits {
		record := fmt.Sprintf("podreload:bench:edit_%d", i)
		start := time.Now()
		cl.addRule(b, record)
		var e edit
		eventuallyEvery(b, time.Minute, 20*time.Millisecond, "controller wrote "+record, func() error {
			cm, err := cl.kube.CoreV1().ConfigMaps("default").Get(b.Context(), server+"-rulefiles-0", metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, gz := range cm.BinaryData {
				zr, err := gzip.NewReader(bytes.NewReader(gz))
				if err != nil {
					return err
				}
				if b, err := io.ReadAll(zr); err == nil && bytes.Contains(b, []byte(record)) {
					return nil
				}
			}
			return fmt.Errorf("not in ConfigMap")
		})
		e.controller = time.Since(start)
		eventuallyEvery(b, projectionTimeout, 10*time.Millisecond, "rule file of "+record+" in the pod", func() error {
			return inPod(cl.node, pod, record)
		})
		e.projected = time.Since(start)
		eventuallyEvery(b, time.Minute, 20*time.Millisecond, "Prometheus reloaded after "+record, func() error {
			at, err := cl.lastReload(b, serverPod)
			if err == nil && at.Before(start) {
				return fmt.Errorf("last reload at %s, before the edit", at.Format(time.RFC3339Nano))
			}
			e.reloaded = at.Sub(start)
			return err
		})
		eventuallyEvery(b, time.Minute, 20*time.Millisecond, "Prometheus serves "+record, func() error {
			return cl.hasRule(b, serverPod, record)
		})
		e.served = time.Since(start)
		edits = append(edits, e)
	}
	return edits
}

// lastReload returns when the pod's Prometheus last reloaded its
// configuration successfully, from its own metric.
func (cl *cluster) lastReload(b *testing.B, pod string) (time.Time, error) {
	return cl.lastReloadMetric(b, pod, 9090, "prometheus_config_last_reload_success_timestamp_seconds")
}

// lastReloadMetric reads metric, a Unix time in seconds, from the
// /metrics that pod serves on port, through the API server's proxy.
func (cl *cluster) lastReloadMetric(t testing.TB, pod string, port int, metric string) (time.Time, error) {
	out, err := cl.kube.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/pods/" + pod + ":" + strconv.Itoa(port) + "/proxy/metrics").DoRaw(t.Context())
	if err != nil {
		return time.Time{}, fmt.Errorf("GET /metrics of %s: %w", pod, err)
	}
	for line := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(line, metric+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("parse %s: %w", line, err)
			}
			return time.UnixMicro(int64(f * 1e6)), nil
		}
	}
	return time.Time{}, fmt.Errorf("no %s in the /metrics of %s", metric, pod)
}

// quantile is the p-quantile of f over items, to the millisecond.
func quantile[T any](items []T, f func(T) time.Duration, p float64) time.Duration {
	ds := make([]time.Duration, 0, len(items))
	for _, e := range items {
		ds = append(ds, f(e))
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(p*float64(len(ds))))].Round(time.Millisecond)
}

// inPod returns nil once a rule file of the pod holds s, in the emptyDir
// config-reloader writes the rules into, from the ConfigMap volumes (the
// kubelet's projection) or from the API.
func inPod(n *node.Node, pod *corev1.Pod, s string) error {
	// Whatever the source, the config-reloader writes the rule files
	// there, gunzipped.
	pattern := filepath.Join(n.VolumeDir(string(pod.UID), "kubernetes.io~empty-dir", "rules"), "*", "*")
	files, err := filepath.Glob(pattern)
	if err != nil {
		return err
	}
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(s)) {
			return nil
		}
	}
	return fmt.Errorf("not in %d rule files", len(files))
}

func report(name string, edits []edit) string {
	if len(edits) == 0 {
		return ""
	}
	q := func(f func(edit) time.Duration, p float64) time.Duration { return quantile(edits, f, p) }
	var w strings.Builder
	fmt.Fprintf(&w, "\n%d PrometheusRule edits on a real node (internal/testenv/node), %s, each timed from the API write:\n\n", len(edits), name)
	fmt.Fprintf(&w, "| stage | p50 | p99 |\n|---|---|---|\n")
	stages := []struct {
		name string
		f    func(edit) time.Duration
	}{
		{"API write → controller wrote the rule ConfigMap", func(e edit) time.Duration { return e.controller }},
		{"→ the rule file written in the pod (by config-reloader, from the kubelet's projection or from the API)", func(e edit) time.Duration { return e.projected }},
		{"→ Prometheus reloaded (its prometheus_config_last_reload_success_timestamp_seconds)", func(e edit) time.Duration { return e.reloaded }},
		{"→ Prometheus serves the rule", func(e edit) time.Duration { return e.served }},
	}
	for _, s := range stages {
		fmt.Fprintf(&w, "| %s | %s | %s |\n", s.name, q(s.f, 0.5), q(s.f, 0.99))
	}
	return w.String()
}
