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

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/internal/testenv/docsection"
	"github.com/podreload/podreload/internal/testenv/node"
)

// BenchmarkTakeover times the hand-off of a Prometheus of two replicas
// between prometheus-operator's operator and the controller, both ways, on
// a real node: from the annotation's change to every replica ready on the
// other side's sidecar; then taken over again with a fault, the
// controller's process killed (SIGKILL) as the takeover starts (issue
// 41): from the annotation to both replicas ready on podreload's
// sidecar, through the controller's restart by the kubelet and its
// leader election; and the longest gap between two samples of `up`
// (scraped every 5 s) across the replicas' TSDBs over that fault and
// over the whole run: the time no replica was scraping.
func BenchmarkTakeover(b *testing.B) {
	var r string
	for b.Loop() {
		r = runTakeover(b)
	}
	b.Log(r)
	if path := os.Getenv(benchDocsEnv); path != "" {
		require.NoError(b, docsection.Replace(path, "node takeover", "e2e/node/bench_test.go", r))
	}
}

func runTakeover(b *testing.B) string {
	cl := startCluster(b, node.Options{})
	cl.startOperator(b, "")
	const name = "bench"
	cl.operatorPrometheus(b, name, 2)
	pods := cl.waitOperatorPrometheus(b, name, 2)
	for _, pod := range pods {
		eventually(b, 2*time.Minute, "targets of "+pod+" up", func() error { return cl.targetUp(b, pod, operatorScrapeJob(name)) })
	}
	start := time.Now()
	cl.deployController(b)
	// Samples on both sides of each hand-off.
	time.Sleep(30 * time.Second) // A benchmark's settle time, not a wait for a condition.

	handOff := func(id string, ours bool) time.Duration {
		at := time.Now()
		cl.annotateController(b, name, id)
		cl.waitPodsRunningOurs(b, name, pods, ours)
		return time.Since(at)
	}
	to := handOff(takeoverID, true)
	time.Sleep(30 * time.Second)
	// A rule edit once taken over, until both replicas serve it.
	edited := time.Now()
	cl.addOperatorRule(b, name, "podreload:takeover_bench:edit")
	for _, pod := range pods {
		eventuallyEvery(b, time.Minute, 20*time.Millisecond, "the edited rule served by "+pod, func() error {
			return cl.hasRule(b, pod, "podreload:takeover_bench:edit")
		})
	}
	edit := time.Since(edited)
	back := handOff("", false)
	time.Sleep(30 * time.Second)

	// Taken over again, the controller killed as it starts the roll.
	faultAt := time.Now()
	cl.annotateController(b, name, takeoverID)
	cl.killController(b)
	cl.waitPodsRunningOurs(b, name, pods, true)
	fault := time.Since(faultAt)
	time.Sleep(30 * time.Second)
	faultEnd := time.Now()

	var stamps []float64
	window := time.Since(start).Round(time.Second) + time.Minute
	for _, pod := range pods {
		// The job label is the Service's name (the scrape pool is the job's).
		stamps = append(stamps, cl.sampleTimes(b, pod, `up{job="prometheus-operated"}`, window)...)
	}
	slices.Sort(stamps)
	gap, gapAt := longestGap(stamps, time.Time{}, faultEnd)
	faultGap, faultGapAt := longestGap(stamps, faultAt, faultEnd)
	var w strings.Builder
	fmt.Fprintf(&w, "\nHand-off of a Prometheus of 2 replicas with persistent storage between prometheus-operator's operator (v0.93.1) and the controller, on a real node (internal/testenv/node), scraping every 5 s:\n\n")
	fmt.Fprintf(&w, "| | time |\n|---|---|\n")
	fmt.Fprintf(&w, "| taken over: annotation → both replicas ready on podreload's sidecar | %s |\n", to.Round(100*time.Millisecond))
	fmt.Fprintf(&w, "| taken over: a PrometheusRule edit → served by both replicas | %s |\n", edit.Round(time.Millisecond))
	fmt.Fprintf(&w, "| handed back: annotation removed → both replicas ready on prometheus-operator's | %s |\n", back.Round(100*time.Millisecond))
	fmt.Fprintf(&w, "| taken over again, the controller's process killed (SIGKILL) at once: annotation → both replicas ready on podreload's sidecar | %s |\n", fault.Round(100*time.Millisecond))
	fmt.Fprintf(&w, "| longest gap between two `up` samples across the replicas, that takeover with the controller killed (and 30 s after) | %.1f s (at %s) |\n",
		faultGap, time.UnixMilli(int64(faultGapAt*1000)).UTC().Format(time.TimeOnly))
	fmt.Fprintf(&w, "| longest gap between two `up` samples across the replicas, whole run (%d samples) | %.1f s (at %s) |\n",
		len(stamps), gap, time.UnixMilli(int64(gapAt*1000)).UTC().Format(time.TimeOnly))
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
