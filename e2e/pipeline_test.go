package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// examplePipeline is the example of deploy/example running through every
// real piece: the control plane, the controller, the pod on loopback.
type examplePipeline struct {
	cl          *cluster
	pod         *loopbackPod
	promURL     string
	reloaderURL string
}

// startExample applies deploy/example and starts the pod the controller
// renders for its PrometheusServer.
func startExample(t testing.TB) *examplePipeline {
	return startExampleWith(t, nil)
}

// startExampleWith is startExample with prepare, if not nil, run before
// the pod starts; it returns once the StatefulSet is the one to run.
func startExampleWith(t testing.TB, prepare func(cl *cluster)) *examplePipeline {
	t.Helper()
	cl := startCluster(t)
	cl.apply(t, "../deploy/example")
	if prepare != nil {
		prepare(cl)
	}
	sts := cl.statefulSet(t, client.ObjectKey{Namespace: "default", Name: "example"})
	prom, err := toolbin.Path("prometheus")
	require.NoError(t, err)
	pod := cl.startPod(t, sts, map[string]string{prometheusImage: prom, reloaderImage: ours("config-reloader")})
	e := &examplePipeline{
		cl:          cl,
		pod:         pod,
		promURL:     pod.url(pod.containerPort(t, "prometheus", "web")),
		reloaderURL: pod.url(pod.containerPort(t, "config-reloader", "reloader-web")),
	}
	eventually(t, "Prometheus ready", func() error {
		return errors.Join(pod.containers["prometheus"].exited(), ok(t.Context(), e.promURL+"/-/ready"))
	})
	return e
}

// waitApplied waits until the PrometheusServer's ConfigApplied condition
// is True for a content hash other than before, which the pod reports
// having applied, and returns it: what kubectl wait
// --for=condition=ConfigApplied waits for.
func (e *examplePipeline) waitApplied(t testing.TB, what, before string) string {
	t.Helper()
	var hash string
	eventually(t, what+": ConfigApplied", func() error {
		var srv v1alpha1.PrometheusServer
		if err := e.cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "example"}, &srv); err != nil {
			return err
		}
		hash = srv.Status.ContentHash
		cond := meta.FindStatusCondition(srv.Status.Conditions, "ConfigApplied")
		switch {
		case hash == "" || hash == before:
			return fmt.Errorf("content hash %q", hash)
		case cond == nil || cond.Status != metav1.ConditionTrue:
			return fmt.Errorf("ConfigApplied: %+v", cond)
		}
		var pod corev1.Pod
		if err := e.cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: e.pod.name}, &pod); err != nil {
			return err
		}
		if report := pod.Annotations["podreload.dev/applied"]; !strings.Contains(report, `"hash":"`+hash+`"`) {
			return fmt.Errorf("pod reports %s, want hash %s", report, hash)
		}
		return nil
	})
	return hash
}

// served is what Prometheus serves: its scrape jobs, the external label
// prometheus_replica, its rule groups with their rules, and its remote
// write endpoints ("url username password", the password as Prometheus
// shows it).
type served struct {
	jobs        []string
	replica     string
	cluster     string
	groups      map[string][]string
	remoteWrite []string
}

func (s served) String() string {
	return fmt.Sprintf("jobs %v, prometheus_replica %q, cluster %q, rule groups %v, remote write %q", s.jobs, s.replica, s.cluster, s.groups, s.remoteWrite)
}

// observe reads what Prometheus serves through its API.
func (e *examplePipeline) observe(ctx context.Context) (served, error) {
	var cfg struct {
		YAML string `json:"yaml"`
	}
	if err := getJSON(ctx, e.promURL+"/api/v1/status/config", &cfg); err != nil {
		return served{}, err
	}
	var parsed struct {
		Global struct {
			ExternalLabels map[string]string `yaml:"external_labels"`
		} `yaml:"global"`
		ScrapeConfigs []struct {
			JobName string `yaml:"job_name"`
		} `yaml:"scrape_configs"`
		RemoteWrite []struct {
			URL       string `yaml:"url"`
			BasicAuth struct {
				Username string `yaml:"username"`
				Password string `yaml:"password"`
			} `yaml:"basic_auth"`
		} `yaml:"remote_write"`
	}
	if err := yaml.Unmarshal([]byte(cfg.YAML), &parsed); err != nil {
		return served{}, err
	}
	s := served{replica: parsed.Global.ExternalLabels["prometheus_replica"], cluster: parsed.Global.ExternalLabels["cluster"]}
	for _, j := range parsed.ScrapeConfigs {
		s.jobs = append(s.jobs, j.JobName)
	}
	for _, rw := range parsed.RemoteWrite {
		s.remoteWrite = append(s.remoteWrite, rw.URL+" "+rw.BasicAuth.Username+" "+rw.BasicAuth.Password)
	}
	groups, err := e.ruleGroups(ctx)
	if err != nil {
		return served{}, err
	}
	s.groups = groups
	return s, nil
}

// ruleGroups returns the rule groups Prometheus serves, with the names of
// their rules.
func (e *examplePipeline) ruleGroups(ctx context.Context) (map[string][]string, error) {
	var rules struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Name string `json:"name"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := getJSON(ctx, e.promURL+"/api/v1/rules", &rules); err != nil {
		return nil, err
	}
	groups := map[string][]string{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			groups[g.Name] = append(groups[g.Name], r.Name)
		}
	}
	return groups, nil
}

// waitGroups waits until Prometheus serves exactly the rule groups want.
func (e *examplePipeline) waitGroups(t testing.TB, what string, want map[string][]string) served {
	t.Helper()
	var s served
	eventually(t, what, func() error {
		var err error
		if s, err = e.observe(t.Context()); err != nil {
			return err
		}
		if !maps.EqualFunc(s.groups, want, slices.Equal) {
			return fmt.Errorf("Prometheus serves rule groups %v, want %v", s.groups, want)
		}
		return nil
	})
	return s
}

// reloads returns the number of reloads the config-reloader sidecar made.
func (e *examplePipeline) reloads(t testing.TB) float64 {
	t.Helper()
	n, err := metric(t.Context(), e.reloaderURL+"/metrics", "reloader_reloads_total")
	require.NoError(t, err)
	return n
}

// waitOneReload waits until config-reloader has counted a reload since it
// counted before, and requires exactly one. Prometheus serves new content
// as its reload returns, a moment before config-reloader counts it (a
// cold CI run read the count in between).
func (e *examplePipeline) waitOneReload(t testing.TB, what string, before float64) {
	t.Helper()
	eventually(t, what+": the reload counted", func() error {
		if n := e.reloads(t); n <= before {
			return fmt.Errorf("%v reloads, %v before the change", n, before)
		}
		return nil
	})
	require.Equal(t, before+1, e.reloads(t), "%s: one reload", what)
}

// createBigRules creates n PrometheusRules of 150 KiB gzipped each, too
// large to share a rule ConfigMap: each gets one of its own, after the
// hashed ones (docs/controller.md, Rule ConfigMaps). It adds their groups
// to want.
func (e *examplePipeline) createBigRules(t testing.TB, n int, labels map[string]string, want map[string][]string) {
	t.Helper()
	for i := range n {
		name := fmt.Sprintf("big-%d", i)
		r := exampleRule(name, name, labels, record(strings.ReplaceAll(name, "-", "_")+":up", "up"))
		r.Spec.Groups[0].Rules[0].Labels = map[string]string{"pad": noise(i, 200<<10)} // 150 KiB gzipped
		require.NoError(t, e.cl.c.Create(t.Context(), r))
		want[name] = []string{strings.ReplaceAll(name, "-", "_") + ":up"}
	}
}

// editRule changes a PrometheusRule, again when someone wrote it in
// between.
func (e *examplePipeline) editRule(t testing.TB, name string, fn func(*monitoringv1.PrometheusRule)) {
	t.Helper()
	r := &monitoringv1.PrometheusRule{}
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: name}, r); err != nil {
			return err
		}
		fn(r)
		return e.cl.c.Update(t.Context(), r)
	}))
}

// rejectedEvent waits for the Rejected Event of the PrometheusRule name and
// returns its note.
func (e *examplePipeline) rejectedEvent(t testing.TB, name string) string {
	t.Helper()
	var note string
	eventually(t, "Event on PrometheusRule "+name, func() error {
		var events eventsv1.EventList
		if err := e.cl.c.List(t.Context(), &events, client.InNamespace("default")); err != nil {
			return err
		}
		for _, ev := range events.Items {
			if ev.Regarding.Kind == monitoringv1.PrometheusRuleKind && ev.Regarding.Name == name && ev.Reason == "Rejected" {
				note = ev.Note
				return nil
			}
		}
		return fmt.Errorf("no Rejected Event regarding PrometheusRule %s", name)
	})
	return note
}

func exampleRule(name, group string, labels map[string]string, rules ...monitoringv1.Rule) *monitoringv1.PrometheusRule {
	return &monitoringv1.PrometheusRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: labels},
		Spec:       monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{Name: group, Rules: rules}}},
	}
}

func record(name, expr string) monitoringv1.Rule {
	return monitoringv1.Rule{Record: name, Expr: intstr.FromString(expr)}
}

// TestPipeline creates, changes and breaks custom resources and checks
// what the real Prometheus serves after they went through the controller,
// the kubelet's atomic writer and the config-reloader.
// noise is n random letters and digits, the same for the same seed, which
// gzip compresses to about 0.75 bytes a letter.
func noise(seed, n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

// ruleFiles returns the rule files of a rule ConfigMap the controller
// wrote, by name, as the reloaders write them: each binaryData key X.gz
// gunzipped into X.
func ruleFiles(t testing.TB, cm corev1.ConfigMap) map[string]string {
	t.Helper()
	files := map[string]string{}
	for key, gz := range cm.BinaryData {
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		require.NoError(t, err, key)
		b, err := io.ReadAll(zr)
		require.NoError(t, err, key)
		files[strings.TrimSuffix(key, ".gz")] = string(b)
	}
	return files
}

func TestPipeline(t *testing.T) {
	e := startExample(t)
	team := map[string]string{"team": "example"}

	// The example: a scrape job, a rule group, the pod's name as replica.
	s := e.waitGroups(t, "example rules", map[string][]string{"example": {"job:up:sum", "ExampleTargetDown"}})
	require.Equal(t, []string{"serviceMonitor/default/podreload-controller/0"}, s.jobs)
	require.Equal(t, "example-0", s.replica)
	// The credentials come from a Secret created after the server.
	require.Equal(t, []string{"https://remote-write.example.com/api/v1/write example <secret>"}, s.remoteWrite)
	applied := e.waitApplied(t, "the example", "")
	require.Equal(t, "demo", s.cluster)

	// A change to the server, as a user makes it: once `kubectl wait
	// --for=condition=ConfigApplied` returns, Prometheus runs it.
	e.cl.kubectl(t, "patch", "promsrv", "example", "--type=merge", "-p", `{"spec":{"externalLabels":{"cluster":"demo-2"}}}`)
	e.cl.kubectl(t, "wait", "--for=condition=ConfigApplied", "promsrv/example", "--timeout=60s")
	s, err := e.observe(t.Context())
	require.NoError(t, err)
	require.Equal(t, "demo-2", s.cluster, "live when kubectl wait returns")

	// Each change arrives, with one reload, and the server says it runs.
	step := func(what string, change func(), want map[string][]string) {
		t.Helper()
		before := e.reloads(t)
		change()
		e.waitGroups(t, what, want)
		applied = e.waitApplied(t, what, applied)
		e.waitOneReload(t, what, before)
	}
	step("edit the rule", func() {
		e.editRule(t, "example-rules", func(r *monitoringv1.PrometheusRule) {
			r.Spec.Groups[0].Rules = append(r.Spec.Groups[0].Rules, record("job:up:count", "count by (job) (up)"))
		})
	}, map[string][]string{"example": {"job:up:sum", "ExampleTargetDown", "job:up:count"}})
	step("add a second rule object", func() {
		require.NoError(t, e.cl.c.Create(t.Context(), exampleRule("second", "second", team, record("job:scrape:max", "max by (job) (scrape_duration_seconds)"))))
	}, map[string][]string{"example": {"job:up:sum", "ExampleTargetDown", "job:up:count"}, "second": {"job:scrape:max"}})
	step("delete the first rule object", func() {
		require.NoError(t, e.cl.c.Delete(t.Context(), &monitoringv1.PrometheusRule{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "example-rules"}}))
	}, map[string][]string{"second": {"job:scrape:max"}})

	// Four files too large to share a ConfigMap: one each besides the
	// hashed one, read through the API source, no restart.
	started, err := metric(t.Context(), e.promURL+"/metrics", "process_start_time_seconds")
	require.NoError(t, err)
	want := map[string][]string{"second": {"job:scrape:max"}}
	e.createBigRules(t, 4, team, want)
	e.waitGroups(t, "rules in five ConfigMaps", want)
	var shards int
	eventually(t, "five rule ConfigMaps", func() error {
		var cms corev1.ConfigMapList
		if err := e.cl.c.List(t.Context(), &cms, client.InNamespace("default"), client.MatchingLabels{"podreload.dev/rulefiles": "example"}); err != nil {
			return err
		}
		if shards = len(cms.Items); shards != 5 {
			return fmt.Errorf("%d shards", shards)
		}
		return nil
	})
	again, err := metric(t.Context(), e.promURL+"/metrics", "process_start_time_seconds")
	require.NoError(t, err)
	require.Equal(t, started, again, "Prometheus was not restarted")
	require.NoError(t, e.pod.containers["prometheus"].exited())

	// An invalid rule: an Event, and Prometheus keeps what it had.
	reloads := e.reloads(t)
	require.NoError(t, e.cl.c.Create(t.Context(), exampleRule("broken", "broken", team, record("job:broken", "sum(up"))))
	require.Contains(t, e.rejectedEvent(t, "broken"), "unclosed left parenthesis")
	s, err = e.observe(t.Context())
	require.NoError(t, err)
	require.Equal(t, want, s.groups, "the previous rules stay")
	require.Equal(t, reloads, e.reloads(t), "nothing to reload")

	// Every podreload metric the mixin's dashboard and alerts use is
	// served, the rejected objects' gauge included, by the controller or
	// the sidecar (Prometheus' own, for the agents: TestMixinAgent).
	checkMixinMetrics(t, podreloadMetric, e.cl.metricsURL, e.reloaderURL+"/metrics")

	// The config-reloader dies; a change made meanwhile, and written to
	// the rule ConfigMap, is not lost.
	e.pod.kill(t, "config-reloader")
	e.editRule(t, "second", func(r *monitoringv1.PrometheusRule) {
		r.Spec.Groups[0].Rules = append(r.Spec.Groups[0].Rules, record("job:scrape:min", "min by (job) (scrape_duration_seconds)"))
	})
	eventually(t, "the change written", func() error {
		var cms corev1.ConfigMapList
		if err := e.cl.c.List(t.Context(), &cms, client.InNamespace("default"), client.MatchingLabels{"podreload.dev/rulefiles": "example"}); err != nil {
			return err
		}
		for _, cm := range cms.Items {
			for key, content := range ruleFiles(t, cm) {
				if strings.HasPrefix(key, "default-second-") && strings.Contains(content, "job:scrape:min") {
					return nil
				}
			}
		}
		return errors.New("no rule ConfigMap holds job:scrape:min")
	})
	e.pod.start(t, "config-reloader")
	want["second"] = []string{"job:scrape:max", "job:scrape:min"}
	e.waitGroups(t, "the change made while the config-reloader was down", want)

	t.Run("Probe and ScrapeConfig targets scraped", func(t *testing.T) { testScrapeKinds(t, e) })
}

// TestPipelineVolumeSource runs the example with spec.reloader.source
// volume: the kubelet projects the rule ConfigMaps, gzipped, into the
// config-reloaders only, which write them gunzipped where Prometheus reads
// them; a rule change arrives, the pod reports the content hash the
// controller wrote, and rule ConfigMaps added within the padded volumes
// arrive without a restart.
func TestPipelineVolumeSource(t *testing.T) {
	e := startExampleWith(t, func(cl *cluster) {
		cl.kubectl(t, "patch", "promsrv", "example", "--type=merge", "-p", `{"spec":{"reloader":{"source":"volume"}}}`)
		eventually(t, "the StatefulSet of the volume source", func() error {
			sts := cl.statefulSet(t, client.ObjectKey{Namespace: "default", Name: "example"})
			if !slices.ContainsFunc(sts.Spec.Template.Spec.Containers[1].Args, func(a string) bool { return strings.HasPrefix(a, "--rules-input-dir=") }) {
				return fmt.Errorf("config-reloader args %q", sts.Spec.Template.Spec.Containers[1].Args)
			}
			return nil
		})
	})
	t.Cleanup(func() {
		if t.Failed() { // What the kubelet projected, and what the config-reloader wrote.
			for _, dir := range []string{"/etc/prometheus/rule-configmaps", "/etc/prometheus/rules"} {
				_ = filepath.WalkDir(e.pod.root+dir, func(path string, d fs.DirEntry, err error) error {
					if err == nil && !d.IsDir() {
						fi, _ := os.Stat(path)
						t.Logf("%s (%d bytes)", strings.TrimPrefix(path, e.pod.root), fi.Size())
					}
					return nil
				})
			}
		}
	})
	e.waitGroups(t, "example rules", map[string][]string{"example": {"job:up:sum", "ExampleTargetDown"}})
	applied := e.waitApplied(t, "the example", "")

	before := e.reloads(t)
	e.editRule(t, "example-rules", func(r *monitoringv1.PrometheusRule) {
		r.Spec.Groups[0].Rules = append(r.Spec.Groups[0].Rules, record("job:up:count", "count by (job) (up)"))
	})
	want := map[string][]string{"example": {"job:up:sum", "ExampleTargetDown", "job:up:count"}}
	e.waitGroups(t, "the rule edited", want)
	e.waitApplied(t, "the rule edited", applied)
	e.waitOneReload(t, "the rule edited", before)

	started, err := metric(t.Context(), e.promURL+"/metrics", "process_start_time_seconds")
	require.NoError(t, err)
	team := map[string]string{"team": "example"}
	// Three files too large to share a ConfigMap: one each besides the
	// hashed one, four in all, within the 4 volumes the pod mounts.
	e.createBigRules(t, 3, team, want)
	e.waitGroups(t, "rules in four ConfigMaps", want)
	var cms corev1.ConfigMapList
	require.NoError(t, e.cl.c.List(t.Context(), &cms, client.InNamespace("default"), client.MatchingLabels{"podreload.dev/rulefiles": "example"}))
	require.Len(t, cms.Items, 4)
	again, err := metric(t.Context(), e.promURL+"/metrics", "process_start_time_seconds")
	require.NoError(t, err)
	require.Equal(t, started, again, "Prometheus was not restarted")
}
