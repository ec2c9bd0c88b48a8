package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/controller"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// scaleCase is what a BenchmarkScale run creates: monitors ServiceMonitors
// of endpoints endpoints each and rules PrometheusRules, for a
// PrometheusServer of shards shards.
type scaleCase struct {
	name                       string
	monitors, endpoints, rules int
	shards                     int32
}

func (sc scaleCase) jobs() int { return sc.monitors * sc.endpoints }

// objects returns the burst of the case in ns: its ServiceMonitors and
// PrometheusRules, one of each in turn.
func (sc scaleCase) objects(ns string) []client.Object {
	objs := make([]client.Object, 0, sc.monitors+sc.rules)
	for i := range max(sc.monitors, sc.rules) {
		if i < sc.monitors {
			objs = append(objs, scaleServiceMonitor(ns, i, sc.endpoints))
		}
		if i < sc.rules {
			objs = append(objs, scaleRule(ns, i))
		}
	}
	return objs
}

// scaleCases are the size of wave 1's target, and the one of 20,000
// endpoints over 4 shards.
func scaleCases() []scaleCase {
	return []scaleCase{
		{name: "3k-endpoints", monitors: 1000, endpoints: 3, rules: 1000, shards: 1},
		{name: "20k-endpoints-4-shards", monitors: 2000, endpoints: 10, rules: 1000, shards: 4},
	}
}

const (
	// scaleWorkers create the objects in parallel.
	scaleWorkers = 16
	// scaleDeadline bounds the wait for the controller to converge after
	// the last create.
	scaleDeadline = 2 * time.Minute
)

// jobLine starts each scrape job of a rendered configuration.
var jobLine = regexp.MustCompile(`(?m)^\s*- job_name: `)

// BenchmarkScale runs the controller binary (`make build`) against a real
// kube-apiserver and etcd, for each of scaleCases: creates its
// ServiceMonitors and PrometheusRules of 10 rules each, all selected by
// one PrometheusServer, as fast as 16 clients can, and measures the time
// from the last create to the config Secret holding every scrape job and
// the rule file ConfigMaps every rule file, the controller's writes and
// reconciliations since the first create, and its RSS. One iteration:
// run it with -benchtime 1x.
func BenchmarkScale(b *testing.B) {
	for _, sc := range scaleCases() {
		b.Run(sc.name, func(b *testing.B) { benchmarkScale(b, sc) })
	}
}

func benchmarkScale(b *testing.B, sc scaleCase) {
	if b.N != 1 {
		b.Fatalf("b.N = %d: run BenchmarkScale with -benchtime 1x", b.N)
	}
	apiserver, err := toolbin.Path("kube-apiserver")
	if err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(filepath.Dir(apiserver), program)
	if _, err := os.Stat(bin); err != nil {
		b.Fatalf("%s is missing: run `make build` to build it (%v)", bin, err)
	}
	flags, audit := auditFlags(b, b.TempDir())
	env := controlplane.StartWithFlags(b, flags, filepath.Join("..", "..", "deploy", "crds"))
	c := scaleClient(b, env.Config)
	ctx := b.Context()

	const ns = "scale"
	all := &metav1.LabelSelector{}
	server := &v1alpha1.PrometheusServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
		Spec:       v1alpha1.PrometheusServerSpec{ServiceMonitorSelector: all, RuleSelector: all, Shards: ptr.To(sc.shards)},
	}
	must(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	must(b, c.Create(ctx, server))
	// Watched before the controller starts, so that no write is missed.
	prog := watchProgress(b, c, server, sc)

	ctl := startController(b, bin, env.Kubeconfig)
	// The server's first state: an empty configuration, no rule files.
	waitUntil(b, ctl, "the first configuration", time.Minute, func() bool {
		p := prog.snapshot()
		return p.secrets > 0 && p.jobs == 0
	})
	base := ctl.settle(b)
	b.Logf("before the first create: %s", base)

	objs := sc.objects(ns)
	b.ResetTimer()
	first := time.Now()
	last := createAll(b, c, objs)
	created := time.Now()
	b.Logf("created %d objects in %v (%.0f/s), the last at %v", len(objs), created.Sub(first).Round(time.Millisecond),
		float64(len(objs))/created.Sub(first).Seconds(), last.Sub(first).Round(time.Millisecond))

	var p progress
	waitUntil(b, ctl, fmt.Sprintf("%d scrape jobs and %d rule files", sc.jobs(), sc.rules), scaleDeadline, func() bool {
		if err := prog.err(); err != nil {
			b.Fatal(err)
		}
		p = prog.snapshot()
		return !p.converged.IsZero()
	})
	b.StopTimer()
	at, err := ctl.scrape()
	must(b, err)
	// Later writes would count too: stop when they have.
	end := ctl.settle(b)
	b.Logf("after convergence: %.0f more reconciles, %.0f more writes", end.reconciles-at.reconciles, end.writes-at.writes)
	size := prog.verify(b, sc.jobs())
	rss := ctl.rss(b)
	for _, e := range prog.timeline() {
		b.Logf("%8v %s", e.at.Sub(first).Round(time.Millisecond), e.what)
	}
	b.Logf("after the controller settled: %s; %s", end, rss)
	b.Logf("writes since the first create by kind and verb: %s", end.writesBy.minus(base.writesBy))
	b.Logf("API requests since the first create by code and method: %s", end.requestsBy.minus(base.requestsBy))
	reconciles := end.reconciles - base.reconciles
	b.Logf("controller CPU since the first create: %.2f s; reconciliations took %.2f s, %.0f ms on average",
		end.cpu-base.cpu, end.reconcileTime-base.reconcileTime, 1000*(end.reconcileTime-base.reconcileTime)/reconciles)
	b.Logf("client-side throttling in the controller's log: %d lines", ctl.count(b, "client-side throttling"))
	writes := summarize(auditWrites(b, audit, first, byUserAgent(controller.Name)))
	b.Logf("the controller's writes since the first create, from the API server's audit log: %s", writes)
	settle := func() series { return ctl.settle(b).writesBy }
	ruleEdit, monitorEdit := measureScaleEdits(b, c, settle, prog, ns, sc)

	b.ReportMetric(p.converged.Sub(last).Seconds(), "converge-s")
	b.ReportMetric(p.converged.Sub(first).Seconds(), "total-s")
	b.ReportMetric(last.Sub(first).Seconds(), "create-s")
	b.ReportMetric(p.config.Sub(last).Seconds(), "config-s")
	b.ReportMetric(p.rules.Sub(last).Seconds(), "rules-s")
	b.ReportMetric(end.writes-base.writes, "writes")
	b.ReportMetric(reconciles, "reconciles")
	b.ReportMetric(end.cpu-base.cpu, "cpu-s")
	b.ReportMetric(end.requests-base.requests, "api-requests")
	b.ReportMetric(rss.peak/1e6, "peak-rss-MB")
	b.ReportMetric(rss.now/1e6, "rss-MB")
	b.ReportMetric(rss.anon/1e6, "rss-anon-MB")
	b.ReportMetric(float64(writes.ok), "audit-writes")
	b.ReportMetric(float64(writes.c409), "audit-409s")
	ruleEdit.report(b, "rule-edit")
	monitorEdit.report(b, "monitor-edit")
	writeScaleSection(b, "scale-"+sc.name, scaleFigures{
		controller: "podreload", create: last.Sub(first), converge: p.converged.Sub(last),
		config: p.config.Sub(last), rules: p.rules.Sub(last), writes: writes, reconciles: reconciles,
		cpu: end.cpu - base.cpu, peakRSS: rss.peak, size: size, ruleEdit: ruleEdit, monitorEdit: monitorEdit,
	})
	ctl.stop(b)
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// scaleClient returns a client limited by the API server only.
func scaleClient(b *testing.B, cfg *rest.Config) client.WithWatch {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, monitoringv1.AddToScheme} {
		must(b, add(scheme))
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 100000, 100000
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	must(b, err)
	return c
}

func scaleServiceMonitor(ns string, i, endpoints int) *monitoringv1.ServiceMonitor {
	app := fmt.Sprintf("app-%04d", i)
	sm := &monitoringv1.ServiceMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app, Labels: map[string]string{"team": fmt.Sprintf("team-%02d", i%50)}},
		Spec: monitoringv1.ServiceMonitorSpec{
			JobLabel:     "app.kubernetes.io/name",
			TargetLabels: []string{"team"},
			Selector:     metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": app}},
		},
	}
	for j := range endpoints {
		sm.Spec.Endpoints = append(sm.Spec.Endpoints, monitoringv1.Endpoint{
			Port:          fmt.Sprintf("metrics-%d", j),
			Path:          "/metrics",
			Interval:      "30s",
			ScrapeTimeout: "10s",
			RelabelConfigs: []monitoringv1.RelabelConfig{{
				SourceLabels: []monitoringv1.LabelName{"__meta_kubernetes_pod_node_name"},
				TargetLabel:  "node",
			}},
		})
	}
	return sm
}

// scaleRule has 5 recording and 5 alerting rules over up.
func scaleRule(ns string, i int) *monitoringv1.PrometheusRule {
	g := monitoringv1.RuleGroup{Name: "service.rules", Interval: ptr.To(monitoringv1.Duration("1m"))}
	for j := range 5 {
		g.Rules = append(g.Rules,
			monitoringv1.Rule{
				Record: fmt.Sprintf("service:up:avg_%d", j),
				Expr:   intstr.FromString(fmt.Sprintf(`avg by (job, namespace) (up{service="svc-%d", instance!~"canary-.*"})`, i)),
			},
			monitoringv1.Rule{
				Alert:       fmt.Sprintf("ServiceDown%d", j),
				Expr:        intstr.FromString(fmt.Sprintf(`avg_over_time(up{service="svc-%d"}[5m]) < 0.%d`, i, j+5)),
				For:         ptr.To(monitoringv1.Duration("10m")),
				Labels:      map[string]string{"severity": "warning"},
				Annotations: map[string]string{"summary": "{{ $labels.job }} is up {{ $value | humanizePercentage }} of the time"},
			},
		)
	}
	return &monitoringv1.PrometheusRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("rules-%04d", i)},
		Spec:       monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{g}},
	}
}

// createAll creates objs with scaleWorkers clients in parallel, and
// returns when the last create returned.
func createAll(b *testing.B, c client.Client, objs []client.Object) time.Time {
	work := make(chan client.Object)
	errs := make(chan error, scaleWorkers)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		last time.Time
	)
	for range scaleWorkers {
		wg.Go(func() {
			for o := range work {
				if err := c.Create(b.Context(), o); err != nil {
					errs <- fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
					for range work {
					}
					return
				}
				now := time.Now()
				mu.Lock()
				if now.After(last) {
					last = now
				}
				mu.Unlock()
			}
		})
	}
	for _, o := range objs {
		work <- o
	}
	close(work)
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if err := errors.Join(all...); err != nil {
		b.Fatal(err)
	}
	return last
}

// progress is what the config Secret and the rule file ConfigMaps of a
// server hold, and when they first held every job and rule file.
type progress struct {
	secrets, jobs, files   int
	config, rules          time.Time
	converged              time.Time
	wantJobs, wantFiles    int
	secret                 []byte              // the config Secret's configuration
	main                   string              // the config Secret's name
	parts                  map[string][]byte   // the configurations of its part Secrets, by name
	partJobs               map[string]int      // the jobs of each Secret, the config Secret's included
	shards                 map[string][]string // the rule files of each ConfigMap
	events                 []progressEvent
	writes                 []objectWrite
	secretErr, watchClosed error
}

type progressEvent struct {
	at   time.Time
	what string
}

// tracker follows the objects a server's controller writes, through
// watches.
type tracker struct {
	mu sync.Mutex
	p  progress
}

// watchProgress watches the config Secret and the rule file ConfigMaps of
// server until the benchmark ends.
func watchProgress(b *testing.B, c client.WithWatch, server *v1alpha1.PrometheusServer, sc scaleCase) *tracker {
	return watchObjects(b, c, sc, server.Namespace, promserver.ConfigSecretName(server),
		client.MatchingLabels{"podreload.dev/config": server.Name}, client.MatchingLabels{promserver.LabelRuleFiles: server.Name})
}

// watchObjects watches, in namespace ns, the Secrets labelled secrets that
// hold a configuration (the config Secret main and its parts) and the rule
// ConfigMaps labelled rules, until the benchmark ends.
func watchObjects(b *testing.B, c client.WithWatch, sc scaleCase, ns, main string, secretLabels, ruleLabels client.MatchingLabels) *tracker {
	t := &tracker{p: progress{wantJobs: sc.jobs(), wantFiles: sc.rules, shards: map[string][]string{},
		main: main, parts: map[string][]byte{}, partJobs: map[string]int{}}}
	secrets, err := c.Watch(b.Context(), &corev1.SecretList{}, client.InNamespace(ns), secretLabels)
	must(b, err)
	shards, err := c.Watch(b.Context(), &corev1.ConfigMapList{}, client.InNamespace(ns), ruleLabels)
	must(b, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case ev, ok := <-secrets.ResultChan():
				if !ok {
					t.closed("Secret")
					return
				}
				t.secretEvent(ev)
			case ev, ok := <-shards.ResultChan():
				if !ok {
					t.closed("ConfigMap")
					return
				}
				t.shardEvent(ev)
			}
		}
	}()
	b.Cleanup(func() {
		secrets.Stop()
		shards.Stop()
		<-done
	})
	return t
}

func (t *tracker) closed(kind string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.p.watchClosed == nil {
		t.p.watchClosed = fmt.Errorf("the %s watch closed", kind)
	}
}

func (t *tracker) secretEvent(ev watch.Event) {
	s, ok := ev.Object.(*corev1.Secret)
	now := time.Now()
	if !ok {
		return
	}
	if _, config := s.Data[promserver.ConfigSecretKey]; !config && ev.Type != watch.Deleted {
		return // Another Secret of prometheus-operator's (TLS assets, web configuration).
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.p.writes = append(t.p.writes, written(now, "Secret", s, ev.Type))
	if ev.Type == watch.Deleted {
		delete(t.p.parts, s.Name)
		delete(t.p.partJobs, s.Name)
	} else {
		jobs, err := countJobs(s.Data[promserver.ConfigSecretKey])
		t.p.secrets++
		if err != nil {
			t.p.secretErr = err
			return
		}
		if s.Name == t.p.main {
			t.p.secret = s.Data[promserver.ConfigSecretKey]
		} else {
			t.p.parts[s.Name] = s.Data[promserver.ConfigSecretKey]
		}
		t.p.partJobs[s.Name] = jobs
	}
	t.p.jobs = 0
	for _, n := range t.p.partJobs {
		t.p.jobs += n
	}
	t.event(now, fmt.Sprintf("Secret %s %s: %d jobs (%d bytes gzipped); %d in %d Secrets", s.Name, ev.Type, t.p.partJobs[s.Name],
		len(s.Data[promserver.ConfigSecretKey]), t.p.jobs, len(t.p.partJobs)))
	if t.p.jobs != t.p.wantJobs {
		t.p.config, t.p.converged = time.Time{}, time.Time{}
	} else if t.p.config.IsZero() {
		t.p.config = now
	}
	t.check(now)
}

func (t *tracker) shardEvent(ev watch.Event) {
	cm, ok := ev.Object.(*corev1.ConfigMap)
	now := time.Now()
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.p.writes = append(t.p.writes, written(now, "ConfigMap", cm, ev.Type))
	if ev.Type == watch.Deleted {
		delete(t.p.shards, cm.Name)
	} else {
		// Rule files are stored gzipped in BinaryData since 85ee542; a
		// shard an older controller wrote holds them in Data.
		t.p.shards[cm.Name] = slices.Concat(slices.Collect(maps.Keys(cm.Data)), slices.Collect(maps.Keys(cm.BinaryData)))
	}
	// Distinct files: one moving between ConfigMaps is in both for a
	// moment.
	files := map[string]bool{}
	for _, keys := range t.p.shards {
		for _, k := range keys {
			files[strings.TrimSuffix(k, ".gz")] = true
		}
	}
	t.p.files = len(files)
	t.event(now, fmt.Sprintf("ConfigMap %s %s: %d rule files; %d in %d ConfigMaps", cm.Name, ev.Type, len(t.p.shards[cm.Name]), t.p.files, len(t.p.shards)))
	if t.p.files != t.p.wantFiles {
		t.p.rules, t.p.converged = time.Time{}, time.Time{}
	} else if t.p.rules.IsZero() {
		t.p.rules = now
	}
	t.check(now)
}

// check marks the first moment both the configuration and the rule files
// are complete.
func (t *tracker) check(now time.Time) {
	if t.p.converged.IsZero() && !t.p.config.IsZero() && !t.p.rules.IsZero() {
		t.p.converged = now
		t.event(now, "converged")
	}
}

func (t *tracker) event(at time.Time, what string) {
	t.p.events = append(t.p.events, progressEvent{at: at, what: what})
}

func (t *tracker) snapshot() progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.p
	p.parts, p.partJobs, p.shards = maps.Clone(p.parts), maps.Clone(p.partJobs), maps.Clone(p.shards)
	p.writes = slices.Clone(p.writes)
	return p
}

func (t *tracker) timeline() []progressEvent {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]progressEvent(nil), t.p.events...)
}

func (t *tracker) err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return errors.Join(t.p.secretErr, t.p.watchClosed)
}

// verify parses the last configuration in full, its parts included: it
// has want scrape jobs, all different, and names every part. It returns
// its size.
func (t *tracker) verify(b *testing.B, want int) configSize {
	b.Helper()
	p := t.snapshot()
	data, err := gunzip(p.secret)
	must(b, err)
	var cfg struct {
		ScrapeConfigs []struct {
			JobName string `yaml:"job_name"`
		} `yaml:"scrape_configs"`
		ScrapeConfigFiles []string `yaml:"scrape_config_files"`
		RuleFiles         []string `yaml:"rule_files"`
	}
	must(b, yaml.Unmarshal(data, &cfg))
	size, gzipped, jobs := len(data), len(p.secret), cfg.ScrapeConfigs
	var files []string
	for _, name := range slices.Sorted(maps.Keys(p.parts)) {
		files = append(files, contract.PartPath(name))
		part, err := gunzip(p.parts[name])
		must(b, err)
		cfg.ScrapeConfigs = nil
		must(b, yaml.Unmarshal(part, &cfg))
		jobs = append(jobs, cfg.ScrapeConfigs...)
		size, gzipped = size+len(part), gzipped+len(p.parts[name])
	}
	slices.Sort(cfg.ScrapeConfigFiles)
	if !slices.Equal(files, cfg.ScrapeConfigFiles) {
		b.Fatalf("the configuration loads %v, the part Secrets are %v", cfg.ScrapeConfigFiles, files)
	}
	names := map[string]bool{}
	for _, j := range jobs {
		names[j.JobName] = true
	}
	if len(jobs) != want || len(names) != want {
		b.Fatalf("the configuration has %d scrape jobs, %d different; want %d", len(jobs), len(names), want)
	}
	if len(cfg.RuleFiles) == 0 {
		b.Fatal("the configuration has no rule_files")
	}
	b.Logf("configuration: %d bytes, %d gzipped, in %d Secrets; %d scrape jobs; %d rule files in %d ConfigMaps; rule_files %v",
		size, gzipped, 1+len(p.parts), len(names), p.files, len(p.shards), cfg.RuleFiles)
	return configSize{plain: size, gzipped: gzipped, secrets: 1 + len(p.parts), ruleConfigMaps: len(p.shards)}
}

// configSize is the size of a configuration, in all its Secrets, and the
// number of rule ConfigMaps.
type configSize struct{ plain, gzipped, secrets, ruleConfigMaps int }

func gunzip(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("gunzip the configuration: %w", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("gunzip the configuration: %w", err)
	}
	return out, nil
}

// countJobs counts the scrape jobs of a gzipped configuration; verify
// parses the last one in full.
func countJobs(gz []byte) (int, error) {
	data, err := gunzip(gz)
	if err != nil {
		return 0, err
	}
	return len(jobLine.FindAllIndex(data, -1)), nil
}
