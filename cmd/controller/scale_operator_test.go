package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/operator"
)

// BenchmarkScaleOperator runs prometheus-operator's operator
// (bin/prometheus-operator, `make tools`, with its ServiceAccount's RBAC
// and --log-level=info) on BenchmarkScale's 3k burst: the same API server,
// the same objects created the same way, selected by a Prometheus with the
// same selectors, and the same figures, its writes counted from the API
// server's audit log (its ServiceAccount's requests), its reconciliations
// from its metrics, its CPU and memory from /proc. One iteration: run it
// with -benchtime 1x.
func BenchmarkScaleOperator(b *testing.B) {
	sc := scaleCases()[0]
	if b.N != 1 {
		b.Fatalf("b.N = %d: run BenchmarkScaleOperator with -benchtime 1x", b.N)
	}
	flags, audit := auditFlags(b, b.TempDir())
	env := controlplane.StartWithFlags(b, flags, filepath.Join("..", "..", "deploy", "crds"))
	c := scaleClient(b, env.Config)
	ctx := b.Context()
	op := operator.Start(b, env.Kubeconfig, "", "--log-level=info")
	user := byUser("system:serviceaccount:" + operator.Namespace + ":" + operator.ServiceAccount)

	const ns = "scale"
	all := &metav1.LabelSelector{}
	prom := &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
		Spec: monitoringv1.PrometheusSpec{
			CommonPrometheusFields: monitoringv1.CommonPrometheusFields{ServiceMonitorSelector: all},
			RuleSelector:           all,
		},
	}
	must(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	prog := watchObjects(b, c, sc, ns, "prometheus-"+prom.Name,
		client.MatchingLabels{"managed-by": "prometheus-operator"}, client.MatchingLabels{"prometheus-name": prom.Name})
	must(b, c.Create(ctx, prom))
	poll(b, "the first configuration", func() bool {
		p := prog.snapshot()
		return p.secrets > 0 && p.jobs == 0
	})
	start := time.Now()
	settleAudit(b, audit, time.Time{}, user)
	base := operatorFigures(b, op)

	objs := sc.objects(ns)
	b.ResetTimer()
	first := time.Now()
	last := createAll(b, c, objs)
	b.Logf("created %d objects in %v, the last at %v (the operator started %v before the first)", len(objs),
		time.Since(first).Round(time.Millisecond), last.Sub(first).Round(time.Millisecond), first.Sub(start).Round(time.Millisecond))
	var p progress
	poll(b, fmt.Sprintf("%d scrape jobs and %d rule files", sc.jobs(), sc.rules), func() bool {
		if err := prog.err(); err != nil {
			b.Fatal(err)
		}
		p = prog.snapshot()
		return !p.converged.IsZero()
	})
	b.StopTimer()
	writes := summarize(settleAudit(b, audit, first, user))
	end := operatorFigures(b, op)
	size := prog.verify(b, sc.jobs())
	mem := procMemory(b, op.PID)
	for _, e := range prog.timeline() {
		b.Logf("%8v %s", e.at.Sub(first).Round(time.Millisecond), e.what)
	}
	b.Logf("prometheus-operator's writes since the first create, from the API server's audit log: %s", writes)
	b.Logf("prometheus-operator since the first create: %.0f reconciliations, CPU %.2f s; %s",
		end.reconciles-base.reconciles, end.cpu-base.cpu, mem)

	settle := func() series {
		s := series{}
		for k, n := range summarize(settleAudit(b, audit, first, user)).by {
			s[k] = float64(n)
		}
		return s
	}
	ruleEdit, monitorEdit := measureScaleEdits(b, c, settle, prog, ns, sc)

	b.ReportMetric(p.converged.Sub(last).Seconds(), "converge-s")
	b.ReportMetric(p.converged.Sub(first).Seconds(), "total-s")
	b.ReportMetric(last.Sub(first).Seconds(), "create-s")
	b.ReportMetric(p.config.Sub(last).Seconds(), "config-s")
	b.ReportMetric(p.rules.Sub(last).Seconds(), "rules-s")
	b.ReportMetric(float64(writes.ok), "audit-writes")
	b.ReportMetric(float64(writes.c409), "audit-409s")
	b.ReportMetric(end.reconciles-base.reconciles, "reconciles")
	b.ReportMetric(end.cpu-base.cpu, "cpu-s")
	b.ReportMetric(mem.peak/1e6, "peak-rss-MB")
	b.ReportMetric(mem.now/1e6, "rss-MB")
	b.ReportMetric(mem.anon/1e6, "rss-anon-MB")
	ruleEdit.report(b, "rule-edit")
	monitorEdit.report(b, "monitor-edit")
	writeScaleSection(b, "scale-operator-"+sc.name, scaleFigures{
		controller: "prometheus-operator", create: last.Sub(first), converge: p.converged.Sub(last),
		config: p.config.Sub(last), rules: p.rules.Sub(last), writes: writes, reconciles: end.reconciles - base.reconciles,
		cpu: end.cpu - base.cpu, peakRSS: mem.peak, size: size, ruleEdit: ruleEdit, monitorEdit: monitorEdit,
	})
}

// opFigures are prometheus-operator's counters BenchmarkScaleOperator
// reports.
type opFigures struct{ reconciles, cpu float64 }

// operatorFigures reads the reconciliations of its Prometheus controller
// and its CPU time from the operator's metrics.
func operatorFigures(b *testing.B, op *operator.Process) opFigures {
	resp, err := http.Get(op.MetricsURL)
	must(b, err)
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	must(b, err)
	var f opFigures
	for _, m := range families["prometheus_operator_reconcile_operations_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "controller" && l.GetValue() == "prometheus" {
				f.reconciles += m.GetCounter().GetValue()
			}
		}
	}
	for _, m := range families["process_cpu_seconds_total"].GetMetric() {
		f.cpu += m.GetCounter().GetValue()
	}
	if families["prometheus_operator_reconcile_operations_total"] == nil || families["process_cpu_seconds_total"] == nil {
		b.Fatalf("%s: no prometheus_operator_reconcile_operations_total or process_cpu_seconds_total", op.MetricsURL)
	}
	return f
}
