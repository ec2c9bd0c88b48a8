package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// timing is how long a change to a PrometheusRule took to reach
// Prometheus, in total and by stage.
type timing struct {
	// total runs from the API server accepting the change to Prometheus
	// serving it.
	total time.Duration
	// controller: until the rule ConfigMap's update is seen by a watch.
	controller time.Duration
	// projection: until the config-reloader sends its reload request,
	// which it does on seeing the kubelet's atomic writer swap ..data in,
	// or, with the API source, its watch event.
	projection time.Duration
	// write is how long the atomic writer's Write took, within
	// projection: it swaps ..data, then removes the previous version; 0
	// with the API source.
	write time.Duration
	// reload: Prometheus' reload, the request's duration.
	reload time.Duration
	// serve: from the end of the reload request until Prometheus' API, as
	// polled, serves the rules; 0 when it did before the reloader read the
	// answer to its request.
	serve time.Duration
}

func (d timing) String() string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	return fmt.Sprintf("%s: controller %s, config-reloader (API watch, write, reload request) %s, Prometheus reload %s, API poll %s",
		ms(d.total), ms(d.controller), ms(d.projection), ms(d.reload), ms(d.serve))
}

// timeRuleChange makes change to a rule and times its way to Prometheus
// serving the rule groups want.
func (e *examplePipeline) timeRuleChange(t testing.TB, change func(), want map[string][]string) timing {
	t.Helper()
	ctx := t.Context()
	var cms corev1.ConfigMapList
	rules := []client.ListOption{client.InNamespace("default"), client.MatchingLabels{"podreload.dev/rulefiles": "example"}}
	require.NoError(t, e.cl.c.List(ctx, &cms, rules...))
	w, err := e.cl.c.Watch(ctx, &corev1.ConfigMapList{}, append(rules, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: cms.ResourceVersion}})...)
	require.NoError(t, err)
	defer w.Stop()
	for drained := e.pod.kubelet == nil; !drained; { // Earlier projections.
		select {
		case <-e.pod.kubelet.Projections():
		default:
			drained = true
		}
	}
	reloaded := e.sidecarFloat(t, "reloader_last_reload_success_timestamp_seconds")
	sum := e.sidecarFloat(t, "reloader_reload_duration_seconds_sum")

	change()
	start := time.Now()
	var d timing
	var rv string
	select {
	case ev := <-w.ResultChan():
		require.Contains(t, []watch.EventType{watch.Added, watch.Modified}, ev.Type, "%v", ev.Object)
		d.controller = time.Since(start)
		rv = ev.Object.(*corev1.ConfigMap).ResourceVersion
	case <-time.After(deadline):
		t.Fatal("no rule ConfigMap written")
	}
	for {
		groups, err := e.ruleGroups(ctx)
		if err == nil && mapsEqual(groups, want) {
			d.total = time.Since(start)
			break
		}
		require.Less(t, time.Since(start), deadline, "Prometheus serves %v, want %v (%v)", groups, want, err)
		time.Sleep(time.Millisecond) // Polling Prometheus' API: the only way to see it.
	}
	for e.pod.kubelet != nil && d.write == 0 {
		select {
		case p := <-e.pod.kubelet.Projections():
			if p.Kind == "configmap" && p.ResourceVersion == rv {
				d.write = p.End.Sub(p.Start)
			}
		case <-time.After(deadline):
			t.Fatalf("no projection of rule ConfigMap version %s", rv)
		}
	}
	// Prometheus may serve the rules before the config-reloader has read
	// its answer.
	var end float64
	eventually(t, "the reload counted", func() error {
		if end = e.sidecarFloat(t, "reloader_last_reload_success_timestamp_seconds"); end <= reloaded {
			return fmt.Errorf("last reload at %v", end)
		}
		return nil
	})
	d.reload = seconds(e.sidecarFloat(t, "reloader_reload_duration_seconds_sum") - sum)
	reloadEnd := time.Unix(0, int64(end*1e9))
	d.projection = reloadEnd.Add(-d.reload).Sub(start) - d.controller
	d.serve = max(0, d.total-reloadEnd.Sub(start))
	return d
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

func mapsEqual(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// sidecarFloat returns a metric of the config-reloader sidecar.
func (e *examplePipeline) sidecarFloat(t testing.TB, name string) float64 {
	t.Helper()
	v, err := metric(t.Context(), e.reloaderURL+"/metrics", name)
	require.NoError(t, err)
	return v
}
