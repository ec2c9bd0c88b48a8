package node

import (
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/internal/testenv/docsection"
	"github.com/podreload/podreload/internal/testenv/node"
)

// BenchmarkTakeover times the hand-off of a Prometheus of two replicas
// between prometheus-operator's operator and the controller on a real
// node, both ways, plain and under the faults of issue 41, one after the
// other: each from its start to its steady state (every replica ready on
// the other side's sidecar, or an edit served), and the longest gap
// between two samples of `up` (scraped every 5 s) across the replicas'
// TSDBs from its start to settle after its steady state, and over the
// whole run: the time no replica was scraping. The faults: the
// controller's process killed (SIGKILL) right after the annotation and
// right after its removal (restarted by the kubelet, it waits for its own
// unreleased Lease); the annotation flipped 10 times in 30 s; the
// controller scaled to 0 while a ServiceMonitor is edited, then to 1; and
// prometheus-operator's operator killed in the middle of its hand-back
// roll and started again.
func BenchmarkTakeover(b *testing.B) {
	var r string
	for b.Loop() {
		r = runTakeover(b)
	}
	b.Log(r)
	if path := os.Getenv(benchDocsEnv); path != "" {
		require.NoError(b, docsection.Replace(path, "node takeover", "e2e/node/takeover_bench_test.go", r))
	}
}

const (
	// settle is how long the benchmark keeps sampling `up` after each
	// hand-off's steady state, and before the first.
	settle = 20 * time.Second
	// benchFlips is how many times the annotation changes, every
	// benchFlipEvery: 10 times in 30 s.
	benchFlips, benchFlipEvery = 10, 3 * time.Second
	// downFor is how long the controller stays scaled to 0. However
	// long, the replica then started waits for the unreleased Lease:
	// client-go counts its duration from its own first read of it.
	downFor = 30 * time.Second
	// editLabel is the target label the ServiceMonitor's edit adds while
	// the controller is down.
	editLabel = "podreload_bench_edit"
)

// handOff is one hand-off of the run: its time to its steady state, and
// the window of its gap in `up`, from its start to settle after it.
type handOff struct {
	what     string
	took     time.Duration
	from, to time.Time
}

func runTakeover(b *testing.B) string {
	cl := startCluster(b, node.Options{})
	op := cl.startOperator(b, "")
	const name = "bench"
	cl.operatorPrometheus(b, name, 2)
	pods := cl.waitOperatorPrometheus(b, name, 2)
	for _, pod := range pods {
		eventually(b, 2*time.Minute, "targets of "+pod+" up", func() error { return cl.targetUp(b, pod, operatorScrapeJob(name)) })
	}
	start := time.Now()
	cl.deployController(b)
	// Samples on both sides of each hand-off: a benchmark's settle time,
	// not a wait for a condition.
	time.Sleep(settle)

	var handOffs []handOff
	measure := func(what string, f func() time.Duration) {
		from := time.Now()
		took := f()
		time.Sleep(settle)
		handOffs = append(handOffs, handOff{what: what, took: took, from: from, to: time.Now()})
	}
	annotated := func(id string, ours bool) func() time.Duration {
		return func() time.Duration {
			at := time.Now()
			cl.annotateController(b, name, id)
			cl.waitPodsRunningOurs(b, name, pods, ours)
			return time.Since(at)
		}
	}
	measure("taken over: annotation → both replicas ready on podreload's sidecar", annotated(takeoverID, true))
	// A rule edit once taken over, until both replicas serve it.
	edited := time.Now()
	cl.addOperatorRule(b, name, "podreload:takeover_bench:edit")
	for _, pod := range pods {
		eventuallyEvery(b, time.Minute, 20*time.Millisecond, "the edited rule served by "+pod, func() error {
			return cl.hasRule(b, pod, "podreload:takeover_bench:edit")
		})
	}
	edit := time.Since(edited)
	measure("handed back: annotation removed → both replicas ready on prometheus-operator's", annotated("", false))

	measure("taken over, the controller's process killed (SIGKILL) right after the annotation: annotation → both replicas ready on podreload's sidecar", func() time.Duration {
		at := time.Now()
		cl.annotateController(b, name, takeoverID)
		cl.killController(b)
		cl.waitPodsRunningOurs(b, name, pods, true)
		return time.Since(at)
	})
	measure(fmt.Sprintf("the annotation flipped %d times in 30 s, both running, the last flip taking it over: last flip → rolled out on podreload's sidecar", benchFlips), func() time.Duration {
		tick := time.NewTicker(benchFlipEvery)
		defer tick.Stop()
		for i := 1; i <= benchFlips; i++ {
			id := takeoverID
			if i%2 == 1 {
				id = ""
			}
			cl.annotateController(b, name, id)
			if i < benchFlips {
				<-tick.C
			}
		}
		last := time.Now()
		cl.waitRolledOut(b, name, pods, true)
		return time.Since(last)
	})
	measure(fmt.Sprintf("taken over, the controller down (scaled to 0) for %s while a ServiceMonitor is edited: scaled to 1 → the edit served by both replicas", downFor), func() time.Duration {
		cl.scaleController(b, 0)
		cl.addOperatorRelabeling(b, name, editLabel)
		time.Sleep(downFor) // The outage.
		for _, pod := range pods {
			require.Error(b, cl.servesConfig(b, pod, editLabel), "%s serves the edit with the controller down", pod)
		}
		at := time.Now()
		cl.scaleController(b, 1)
		for _, pod := range pods {
			eventuallyEvery(b, 2*time.Minute, 20*time.Millisecond, "the ServiceMonitor's edit served by "+pod, func() error {
				return cl.servesConfig(b, pod, editLabel)
			})
		}
		return time.Since(at)
	})
	measure("handed back, the controller's process killed (SIGKILL) right after the annotation's removal: annotation removed → both replicas ready on prometheus-operator's, the reloaders' Role deleted", func() time.Duration {
		at := time.Now()
		cl.annotateController(b, name, "")
		cl.killController(b)
		cl.waitPodsRunningOurs(b, name, pods, false)
		eventually(b, 2*time.Minute, "the reloaders' Role deleted", func() error { return cl.reloaderRoleGone(b, name) })
		return time.Since(at)
	})
	measure("taken over again: annotation → both replicas ready on podreload's sidecar", annotated(takeoverID, true))
	measure("handed back, prometheus-operator's operator killed (SIGKILL) once its roll started (its StatefulSet written) and started again: annotation removed → rolled out on prometheus-operator's", func() time.Duration {
		at := time.Now()
		cl.annotateController(b, name, "")
		eventuallyEvery(b, time.Minute, 20*time.Millisecond, "prometheus-operator's pod template written", func() error {
			sts, err := cl.kube.AppsV1().StatefulSets("default").Get(b.Context(), "prometheus-"+name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			return templateOf(sts, false)
		})
		require.NoError(b, syscall.Kill(op.PID, syscall.SIGKILL))
		op.Stop()
		op = cl.startOperator(b, "")
		cl.waitRolledOut(b, name, pods, false)
		return time.Since(at)
	})

	var stamps []float64
	window := time.Since(start).Round(time.Second) + time.Minute
	for _, pod := range pods {
		// The job label is the Service's name (the scrape pool is the job's).
		stamps = append(stamps, cl.sampleTimes(b, pod, `up{job="prometheus-operated"}`, window)...)
	}
	slices.Sort(stamps)
	at := func(s float64) string { return time.UnixMilli(int64(s * 1000)).UTC().Format(time.TimeOnly) }
	var w strings.Builder
	fmt.Fprintf(&w, "\nHand-off of a Prometheus of 2 replicas with persistent storage between prometheus-operator's operator (v0.93.1) and the controller, on a real node (internal/testenv/node), scraping every 5 s; one hand-off after the other, each sampled %s more once steady:\n\n", settle)
	fmt.Fprintf(&w, "| hand-off: from → its steady state | time | longest gap between two `up` samples across the replicas, from its start to %s after |\n|---|---|---|\n", settle)
	for i, h := range handOffs {
		gap, gapAt := longestGap(stamps, h.from, h.to)
		fmt.Fprintf(&w, "| %s | %s | %.1f s (at %s) |\n", h.what, h.took.Round(100*time.Millisecond), gap, at(gapAt))
		if i == 0 {
			fmt.Fprintf(&w, "| taken over: a PrometheusRule edit → served by both replicas | %s | |\n", edit.Round(time.Millisecond))
		}
	}
	gap, gapAt := longestGap(stamps, time.Time{}, time.Now())
	fmt.Fprintf(&w, "| the whole run (%d samples of `up`) | %s | %.1f s (at %s) |\n", len(stamps), time.Since(start).Round(time.Second), gap, at(gapAt))
	return w.String()
}

// longestGap returns the longest time (seconds) between two successive
// timestamps of stamps (sorted, seconds) from from to to, and the first
// of the two.
func longestGap(stamps []float64, from, to time.Time) (gap, at float64) {
	lo, hi := float64(from.UnixMilli())/1000, float64(to.UnixMilli())/1000
	prev := -1.0
	for _, s := range stamps {
		if s < lo || s > hi {
			continue
		}
		if prev >= 0 && s-prev > gap {
			gap, at = s-prev, prev
		}
		prev = s
	}
	return gap, at
}

// killController kills the process of the controller's container
// (SIGKILL: no cleanup of its own, its Lease not released); the kubelet
// starts it again in the same pod.
func (cl *cluster) killController(b testing.TB) {
	b.Helper()
	var pods corev1.PodList
	require.NoError(b, cl.c.List(b.Context(), &pods, client.InNamespace(controllerNamespace), client.MatchingLabels{"app.kubernetes.io/name": controllerName}))
	require.Len(b, pods.Items, 1)
	var id string
	for _, s := range pods.Items[0].Status.ContainerStatuses {
		if s.Name == "controller" {
			id = s.ContainerID
		}
	}
	pid, err := cl.node.ContainerPID(id)
	require.NoError(b, err)
	require.NoError(b, syscall.Kill(pid, syscall.SIGKILL))
}

// sampleTimes returns the timestamps (seconds) of every raw sample of
// the series of query in the pod's Prometheus over the last window.
func (cl *cluster) sampleTimes(b testing.TB, pod, query string, window time.Duration) []float64 {
	var data struct {
		Result []struct {
			Values [][2]any `json:"values"`
		} `json:"result"`
	}
	q := url.Values{"query": {query + "[" + strconv.Itoa(int(window.Seconds())) + "s]"}}
	require.NoError(b, cl.prometheus(b, pod, "/api/v1/query", q, &data))
	require.NotEmpty(b, data.Result, "no series of %s in %s", query, pod)
	var out []float64
	for _, s := range data.Result {
		for _, v := range s.Values {
			if f, ok := v[0].(float64); ok {
				out = append(out, f)
			}
		}
	}
	return out
}

// templateOf returns nil when the pod template of the StatefulSet is the
// controller's (ours: it has the input hash annotation) or the
// operator's.
func templateOf(sts *appsv1.StatefulSet, ours bool) error {
	if _, has := sts.Spec.Template.Annotations[kube.AnnotationInputHash]; has != ours {
		return fmt.Errorf("StatefulSet %s: the controller's pod template: %v", sts.Name, has)
	}
	return nil
}

// waitRolledOut waits until the StatefulSet of the Prometheus name has
// the controller's pod template (ours) or the operator's and has rolled
// it out, every replica updated and ready, and then as
// waitPodsRunningOurs.
func (cl *cluster) waitRolledOut(t testing.TB, name string, pods []string, ours bool) {
	t.Helper()
	eventually(t, 5*time.Minute, "prometheus-"+name+" rolled out, ours "+strconv.FormatBool(ours), func() error {
		sts, err := cl.kube.AppsV1().StatefulSets("default").Get(t.Context(), "prometheus-"+name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := templateOf(sts, ours); err != nil {
			return err
		}
		st, replicas := sts.Status, ptr.Deref(sts.Spec.Replicas, 1)
		if st.ObservedGeneration != sts.Generation || st.CurrentRevision != st.UpdateRevision || st.UpdatedReplicas != replicas || st.ReadyReplicas != replicas {
			return fmt.Errorf("rolling out: %+v", st)
		}
		return nil
	})
	cl.waitPodsRunningOurs(t, name, pods, ours)
}

// scaleController sets the replicas of the controller's Deployment; to
// 0, it returns once its pod is gone.
func (cl *cluster) scaleController(t testing.TB, replicas int32) {
	t.Helper()
	var d appsv1.Deployment
	require.NoError(t, cl.c.Get(t.Context(), client.ObjectKey{Namespace: controllerNamespace, Name: controllerName}, &d))
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To(replicas)
	require.NoError(t, cl.c.Patch(t.Context(), &d, patch))
	if replicas > 0 {
		return
	}
	eventually(t, time.Minute, "the controller's pod gone", func() error {
		var pods corev1.PodList
		if err := cl.c.List(t.Context(), &pods, client.InNamespace(controllerNamespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d controller pods", len(pods.Items))
		}
		return nil
	})
}

// addOperatorRelabeling adds to the endpoint of the ServiceMonitor of
// operatorPrometheus name a relabeling that sets the target label label.
func (cl *cluster) addOperatorRelabeling(t testing.TB, name, label string) {
	t.Helper()
	var sm monitoringv1.ServiceMonitor
	require.NoError(t, cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: name}, &sm))
	patch := client.MergeFrom(sm.DeepCopy())
	ep := &sm.Spec.Endpoints[0]
	ep.RelabelConfigs = append(ep.RelabelConfigs, monitoringv1.RelabelConfig{Action: "replace", TargetLabel: label, Replacement: ptr.To("1")})
	require.NoError(t, cl.c.Patch(t.Context(), &sm, patch))
}

// servesConfig returns nil once the configuration the pod's Prometheus
// runs holds s.
func (cl *cluster) servesConfig(t testing.TB, pod, s string) error {
	var data struct {
		YAML string `json:"yaml"`
	}
	if err := cl.prometheus(t, pod, "/api/v1/status/config", nil, &data); err != nil {
		return err
	}
	if !strings.Contains(data.YAML, s) {
		return fmt.Errorf("%s does not run a configuration with %s", pod, s)
	}
	return nil
}
