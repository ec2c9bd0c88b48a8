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
	// projection: until the kubelet's atomic writer has swapped it in.
	projection time.Duration
	// reloader: until the config-reloader sends its reload request.
	reloader time.Duration
	// reload: Prometheus' reload, the request's duration.
	reload time.Duration
	// serve: until Prometheus' API serves the rules, as polled.
	serve time.Duration
}

func (d timing) String() string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	return fmt.Sprintf("%s: controller %s, volume projection %s, config-reloader %s, Prometheus reload %s, API poll %s",
		ms(d.total), ms(d.controller), ms(d.projection), ms(d.reloader), ms(d.reload), ms(d.serve))
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
	for drained := false; !drained; { // Earlier projections.
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
		s, err := e.observe(ctx)
		if err == nil && mapsEqual(s.groups, want) {
			d.total = time.Since(start)
			break
		}
		require.Less(t, time.Since(start), deadline, "Prometheus serves %v, want %v (%v)", s.groups, want, err)
		time.Sleep(2 * time.Millisecond) // Polling Prometheus' API: the only way to see it.
	}
	var projected time.Time
	for projected.IsZero() {
		select {
		case p := <-e.pod.kubelet.Projections():
			if p.Kind == "configmap" && p.ResourceVersion == rv {
				projected = p.End
			}
		case <-time.After(deadline):
			t.Fatalf("no projection of rule ConfigMap version %s", rv)
		}
	}
	d.projection = projected.Sub(start) - d.controller
	end := e.sidecarFloat(t, "reloader_last_reload_success_timestamp_seconds")
	require.Greater(t, end, reloaded, "a reload")
	d.reload = seconds(e.sidecarFloat(t, "reloader_reload_duration_seconds_sum") - sum)
	reloadEnd := time.Unix(0, int64(end*1e9))
	d.reloader = reloadEnd.Add(-d.reload).Sub(projected)
	d.serve = d.total - reloadEnd.Sub(start)
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
