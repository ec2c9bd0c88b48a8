package node

import (
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/internal/testenv/docsection"
	"github.com/podreload/podreload/internal/testenv/node"
)

// BenchmarkTakeover times the hand-off of a Prometheus of two replicas
// between prometheus-operator's operator and the controller, both ways, on
// a real node: from the annotation's change to every replica ready on the
// other side's sidecar; and the longest gap between two samples of `up`
// (scraped every 5 s) across the replicas' TSDBs over the whole run: the
// time no replica was scraping.
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
		for _, pod := range pods {
			eventuallyEvery(b, 5*time.Minute, 200*time.Millisecond, "pod "+pod+" ready on the other side", func() error {
				p, err := cl.readyPod(b, "default", pod)
				if err != nil {
					return err
				}
				if _, has := p.Annotations[kube.AnnotationInputHash]; has != ours {
					return fmt.Errorf("pod %s: runs the podreload sidecar: %v", pod, has)
				}
				return nil
			})
		}
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

	var stamps []float64
	window := time.Since(start).Round(time.Second) + time.Minute
	for _, pod := range pods {
		// The job label is the Service's name (the scrape pool is the job's).
		stamps = append(stamps, cl.sampleTimes(b, pod, `up{job="prometheus-operated"}`, window)...)
	}
	slices.Sort(stamps)
	gap, gapAt := 0.0, 0.0
	for i := 1; i < len(stamps); i++ {
		if d := stamps[i] - stamps[i-1]; d > gap {
			gap, gapAt = d, stamps[i-1]
		}
	}
	var w strings.Builder
	fmt.Fprintf(&w, "\nHand-off of a Prometheus of 2 replicas with persistent storage between prometheus-operator's operator (v0.93.1) and the controller, on a real node (internal/testenv/node), scraping every 5 s:\n\n")
	fmt.Fprintf(&w, "| | time |\n|---|---|\n")
	fmt.Fprintf(&w, "| taken over: annotation → both replicas ready on podreload's sidecar | %s |\n", to.Round(100*time.Millisecond))
	fmt.Fprintf(&w, "| taken over: a PrometheusRule edit → served by both replicas | %s |\n", edit.Round(time.Millisecond))
	fmt.Fprintf(&w, "| handed back: annotation removed → both replicas ready on prometheus-operator's | %s |\n", back.Round(100*time.Millisecond))
	fmt.Fprintf(&w, "| longest gap between two `up` samples across the replicas, whole run (%d samples) | %.1f s (at %s) |\n",
		len(stamps), gap, time.UnixMilli(int64(gapAt*1000)).UTC().Format(time.TimeOnly))
	return w.String()
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
