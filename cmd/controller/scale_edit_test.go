package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// scaleEdits is how many times BenchmarkScale edits one object of each
// kind once the burst has converged.
const scaleEdits = 5

// objectWrite is a change of a config Secret or rule ConfigMap, as a
// watch saw it: its size is the object encoded in JSON, as the API server
// sends it to every watcher (each config-reloader of the API source, each
// kubelet mounting it), managed fields included.
type objectWrite struct {
	at         time.Time
	kind, name string
	bytes      int
}

func written(at time.Time, kind string, obj client.Object, t watch.EventType) objectWrite {
	w := objectWrite{at: at, kind: kind, name: obj.GetName()}
	if t != watch.Deleted {
		b, err := json.Marshal(obj)
		if err == nil {
			w.bytes = len(b)
		}
	}
	return w
}

// editFigures are what the single edits of one kind wrote: bytes and
// latency (update returned to the first object seen changed) of each.
type editFigures struct {
	bytes   []int
	latency []time.Duration
}

func (f editFigures) report(b *testing.B, prefix string) {
	if len(f.bytes) == 0 {
		return
	}
	b.ReportMetric(float64(slices.Max(f.bytes))/1024, prefix+"-max-KiB")
	lat := slices.Sorted(slices.Values(f.latency))
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, prefix+"-p50-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, prefix+"-max-ms")
}

// measureEdits makes scaleEdits single edits with edit, each once the
// controller has settled (settle waits for that and returns its writes so
// far, by kind), and logs what each wrote: the Secrets and ConfigMaps
// changed, their size as sent to a watcher, and the time from the update's
// return to the first of them; and the controller's writes by kind.
func measureEdits(b *testing.B, settle func() series, prog *tracker, kind string, edit func(i int)) editFigures {
	b.Helper()
	var f editFigures
	for i := range scaleEdits {
		before := settle()
		mark := len(prog.snapshot().writes)
		edit(i)
		done := time.Now()
		poll(b, "the controller to write the edit of a "+kind, func() bool {
			return len(prog.snapshot().writes) > mark
		})
		after := settle()
		writes := prog.snapshot().writes[mark:]
		total := 0
		var objs []string
		for _, w := range writes {
			total += w.bytes
			objs = append(objs, fmt.Sprintf("%s %s %d B", w.kind, w.name, w.bytes))
		}
		latency := writes[0].at.Sub(done)
		f.bytes, f.latency = append(f.bytes, total), append(f.latency, latency)
		b.Logf("%s edit %d: %d bytes in %d objects (%s), first written %v after the update; controller writes: %s", kind, i+1,
			total, len(writes), strings.Join(objs, ", "), latency.Round(100*time.Microsecond), after.minus(before))
	}
	return f
}

// measureScaleEdits measures, with measureEdits, the edits of the first
// PrometheusRule (its expression) and of the first ServiceMonitor (its
// interval) of the case sc created in ns.
func measureScaleEdits(b *testing.B, c client.Client, settle func() series, prog *tracker, ns string, sc scaleCase) (rule, monitor editFigures) {
	b.Helper()
	rule = measureEdits(b, settle, prog, "PrometheusRule", func(i int) {
		editObject(b, c, scaleRule(ns, 0), func(r *monitoringv1.PrometheusRule) {
			r.Spec.Groups[0].Rules[0].Expr = intstr.FromString(fmt.Sprintf("vector(%d)", i))
		})
	})
	monitor = measureEdits(b, settle, prog, "ServiceMonitor", func(i int) {
		editObject(b, c, scaleServiceMonitor(ns, 0, sc.endpoints), func(m *monitoringv1.ServiceMonitor) {
			m.Spec.Endpoints[0].Interval = monitoringv1.Duration(fmt.Sprintf("%ds", 31+i))
		})
	})
	return rule, monitor
}

// editObject reads obj's current version and updates it with change.
func editObject[T client.Object](b *testing.B, c client.Client, obj T, change func(T)) {
	b.Helper()
	must(b, c.Get(b.Context(), client.ObjectKeyFromObject(obj), obj))
	change(obj)
	must(b, c.Update(b.Context(), obj))
}

// poll checks cond every 10 ms until it holds, for at most scaleDeadline.
func poll(b *testing.B, what string, cond func() bool) {
	b.Helper()
	deadline := time.NewTimer(scaleDeadline)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			b.Fatalf("waiting for %s: not done after %v", what, scaleDeadline)
		}
	}
}
