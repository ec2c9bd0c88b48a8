package prometheusserver

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	promkind "github.com/podreload/podreload/controller/prometheus"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/rulefiles"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/metricvalue"
	"github.com/podreload/podreload/internal/testenv/promfixture"
	"github.com/podreload/podreload/internal/testenv/testlog"
)

// deadline bounds every wait for the controller to converge.
const deadline = 30 * time.Second

// eventually waits until check passes, trying every 20 ms, and fails t
// with check's last failures if it has not passed within deadline: the
// one way these tests wait for the controller.
func eventually(t *testing.T, check func(c *assert.CollectT), msgAndArgs ...any) {
	t.Helper()
	require.EventuallyWithT(t, check, deadline, 20*time.Millisecond, msgAndArgs...)
}

// TestReconciler runs the controller against a real kube-apiserver and
// etcd (built by `make controlplane`), one control plane for all subtests;
// each subtest has its own namespaces and its own controller, limited to
// them. The API server restart comes last.
func TestReconciler(t *testing.T) {
	env := controlplane.Start(t, filepath.Join("..", "..", "deploy", "crds"))
	cp := &controlPlane{env: env, cfg: env.Config, c: newClient(t, env.Config)}

	t.Run("workloads pass a server-side dry run", cp.testDryRun)
	t.Run("prometheus-operator's layout passes a server-side dry run", cp.testLayoutDryRun)
	t.Run("selection follows changes", cp.testSelection)
	t.Run("probes and scrape configs", cp.testProbesAndScrapeConfigs)
	t.Run("secrets", cp.testSecrets)
	t.Run("secrets of the server", cp.testServerSecrets)
	t.Run("web TLS", cp.testWebTLS)
	t.Run("additional scrape configs", cp.testAdditionalScrapeConfigs)
	t.Run("scrape classes", cp.testScrapeClasses)
	t.Run("rule shards", cp.testShards)
	t.Run("shard scaling", cp.testShardScaling)
	t.Run("immutable field", cp.testImmutable)
	t.Run("drift", cp.testDrift)
	t.Run("access of the API source", cp.testAccess)
	t.Run("reloader state Secrets", cp.testStateSecrets)
	t.Run("reloader state Secrets of a Prometheus taken over", cp.testStateSecretsTakeover)
	t.Run("deploy's RBAC", cp.testDeployRBAC)
	t.Run("config applied", cp.testConfigApplied)
	t.Run("report storm", cp.testReportStorm)
	t.Run("burst", cp.testBurst)
	t.Run("rules held back in a burst", cp.testRulesHeld)
	t.Run("status upgrade", cp.testStatusUpgrade)
	t.Run("upgrade to server-side apply", cp.testUpgrade)
	t.Run("an upgrade keeps the pods' sidecar", cp.testSidecarKept)
	t.Run("configuration split into parts", cp.testSplit)
	t.Run("invalid objects", cp.testInvalid)
	t.Run("invalid server", cp.testInvalidServer)
	t.Run("no-op resync", cp.testNoop)
	t.Run("paused", cp.testPaused)
	t.Run("leader election", cp.testLeaderElection)
	t.Run("take over a Prometheus and hand it back", cp.testTakeover)
	t.Run("a pod gone ends the hand-back of a Prometheus", cp.testTakeoverPodHandBack)
	t.Run("take over with two controllers of the same id", cp.testTakeoverLeader)
	t.Run("shards scaled away, retained", cp.testShardRetention)
	t.Run("a field of a newer prometheus-operator's CRD", cp.testTakeoverNewerCRD)
	t.Run("Secrets of a Prometheus taken over", cp.testTakeoverSecrets)
	t.Run("a Prometheus with its own governing Service and no token", cp.testTakeoverServiceName)
	t.Run("API server restart", cp.testRestart)
}

type controlPlane struct {
	env *controlplane.ControlPlane
	cfg *rest.Config
	c   client.Client
}

// newClient returns a client of the API server cfg reaches, knowing the
// kinds the controller reads and writes.
func newClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	return controlplane.NewClient(t, cfg, v1alpha1.AddToScheme, monitoringv1.AddToScheme, monitoringv1alpha1.AddToScheme)
}

// running is a controller started by a test.
type running struct {
	reg    *prometheus.Registry
	mu     sync.Mutex
	writes []string // "METHOD path" of each write request, in order.
	// conflicts are the write requests answered 409 Conflict.
	conflicts []string
	done      chan error
}

// Conflicts returns the write requests answered 409 Conflict so far.
func (r *running) Conflicts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.conflicts)
}

// Writes returns the write requests made so far.
func (r *running) Writes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.writes)
}

// settle waits until no write has been made for half a second, and
// returns the writes.
func (r *running) settle(t *testing.T) []string {
	t.Helper()
	var settled []string
	var since time.Time
	eventually(t, func(c *assert.CollectT) {
		if w := r.Writes(); len(w) == 0 || !slices.Equal(w, settled) {
			settled, since = w, time.Now()
		}
		assert.True(c, len(settled) > 0 && time.Since(since) >= 500*time.Millisecond, "no write for half a second")
	})
	return settled
}

// settleOrNone waits until no write has been made for a second, and
// returns the writes, which may be none.
func (r *running) settleOrNone(t *testing.T) []string {
	t.Helper()
	var settled []string
	since := time.Now()
	eventually(t, func(c *assert.CollectT) {
		if w := r.Writes(); !slices.Equal(w, settled) {
			settled, since = w, time.Now()
		}
		assert.True(c, time.Since(since) >= time.Second, "no write for a second")
	})
	return settled
}

type recordingTransport struct {
	next http.RoundTripper
	r    *running
}

func (t recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet {
		return t.next.RoundTrip(req)
	}
	t.r.mu.Lock()
	t.r.writes = append(t.r.writes, req.Method+" "+req.URL.Path)
	t.r.mu.Unlock()
	resp, err := t.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusConflict {
		t.r.mu.Lock()
		t.r.conflicts = append(t.r.conflicts, req.Method+" "+req.URL.Path)
		t.r.mu.Unlock()
	}
	return resp, err
}

// start runs a controller limited to namespaces until the test ends,
// recording its write requests. It reaches the API server with
// opts.Config, or as an administrator when that is nil.
func (cp *controlPlane) start(t *testing.T, opts kube.Options) *running {
	t.Helper()
	return cp.startTakingOver(t, opts, nil)
}

// startTakingOver is start, with the Prometheus objects of to taken over
// when it is not nil.
func (cp *controlPlane) startTakingOver(t *testing.T, opts kube.Options, to *takeover.Options) *running {
	t.Helper()
	r, m, logger := cp.manager(t, opts)
	// As controller.New sets the kind up.
	require.NoError(t, Setup(m, logger, r.reg, testWorkloadOptions()))
	if to != nil {
		require.NoError(t, promkind.Setup(m, logger, r.reg, testWorkloadOptions(), *to))
	}
	r.run(t, m)
	return r
}

func testWorkloadOptions() promserver.WorkloadOptions {
	return promserver.WorkloadOptions{DefaultPrometheusImage: "prom/prometheus:test", DefaultReloaderImage: "podreload:test"}
}

// manager returns the manager of a controller limited to namespaces,
// recording its write requests, not started, and its logger. It reaches
// the API server with opts.Config, or as an administrator when that is
// nil.
func (cp *controlPlane) manager(t *testing.T, opts kube.Options) (*running, *kube.Manager, *slog.Logger) {
	t.Helper()
	r := &running{reg: prometheus.NewRegistry(), done: make(chan error, 1)}
	cfg := rest.CopyConfig(cmp.Or(opts.Config, cp.cfg))
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return recordingTransport{next: rt, r: r} }
	cfg.QPS, cfg.Burst = 200, 400
	opts.Config = cfg
	opts.Names, opts.AddToScheme = []string{promserver.App}, []func(*runtime.Scheme) error{promserver.AddToScheme}
	logger := slog.New(slog.NewTextHandler(testlog.Output(t), &slog.HandlerOptions{Level: slog.LevelInfo}))
	m, err := kube.NewManager(logger, r.reg, opts)
	require.NoError(t, err)
	return r, m, logger
}

// run runs m until the test ends, and returns once its caches are synced.
func (r *running) run(t *testing.T, m *kube.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { r.done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-r.done)
	})
	eventually(t, func(ct *assert.CollectT) { assert.NoError(ct, m.Ready()) }, "caches synced")
}

func (cp *controlPlane) namespace(t *testing.T, name string, labels map[string]string) string {
	t.Helper()
	require.NoError(t, cp.c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}))
	return name
}

func (cp *controlPlane) create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		require.NoError(t, cp.c.Create(t.Context(), o), "create %T %s", o, o.GetName())
	}
}

// edit reads obj again, changes it with fn and writes it back, again when
// the controller wrote it in between (controlplane.Edit).
func edit[T client.Object](t *testing.T, c client.Client, obj T, fn func(T)) {
	t.Helper()
	controlplane.Edit(t, c, obj, fn)
}

func server(ns, name string, fn func(*v1alpha1.PrometheusServerSpec)) *v1alpha1.PrometheusServer {
	s := &v1alpha1.PrometheusServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if fn != nil {
		fn(&s.Spec)
	}
	return s
}

func serviceMonitor(ns, name string, labels map[string]string) *monitoringv1.ServiceMonitor {
	return &monitoringv1.ServiceMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Endpoints: []monitoringv1.Endpoint{{Port: "web"}},
		},
	}
}

func prometheusRule(ns, name string, labels map[string]string, exprs ...string) *monitoringv1.PrometheusRule {
	r := &monitoringv1.PrometheusRule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
	g := monitoringv1.RuleGroup{Name: name}
	for i, e := range exprs {
		g.Rules = append(g.Rules, monitoringv1.Rule{Record: fmt.Sprintf("%s:rule:%d", strings.ReplaceAll(name, "-", "_"), i), Expr: intstr.FromString(e)})
	}
	r.Spec.Groups = []monitoringv1.RuleGroup{g}
	return r
}

func labelsOf(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// config returns the decoded configuration of s, or "" when there is none.
func (cp *controlPlane) config(t *testing.T, s *v1alpha1.PrometheusServer) string {
	var secret corev1.Secret
	if err := cp.c.Get(t.Context(), client.ObjectKey{Namespace: s.Namespace, Name: promserver.ConfigSecretName(s)}, &secret); err != nil {
		require.True(t, apierrors.IsNotFound(err), "get config Secret: %v", err)
		return ""
	}
	return string(promfixture.Gunzip(t, secret.Data[promserver.ConfigSecretKey]))
}

// jobs returns the scrape job names of a configuration.
func jobs(t *testing.T, config string) []string {
	var cfg struct {
		ScrapeConfigs []struct {
			JobName string `yaml:"job_name"`
		} `yaml:"scrape_configs"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(config), &cfg))
	names := []string{}
	for _, j := range cfg.ScrapeConfigs {
		names = append(names, j.JobName)
	}
	return names
}

// waitJobs waits until the configuration of s has exactly the jobs want.
func (cp *controlPlane) waitJobs(t *testing.T, s *v1alpha1.PrometheusServer, want ...string) string {
	t.Helper()
	var config string
	eventually(t, func(c *assert.CollectT) {
		config = cp.config(t, s)
		assert.NotEmpty(c, config, "config Secret")
		assert.ElementsMatch(c, want, jobs(t, config))
	})
	return config
}

// ruleFiles returns the rule file names of s, by shard: nil for a shard
// missing below the last one (while extra ones are deleted one by one).
func (cp *controlPlane) ruleFiles(t *testing.T, s *v1alpha1.PrometheusServer) [][]string {
	var cms corev1.ConfigMapList
	require.NoError(t, cp.c.List(t.Context(), &cms, client.InNamespace(s.Namespace), client.MatchingLabels{promserver.LabelRuleFiles: s.Name}))
	var shards [][]string
	for _, cm := range cms.Items {
		var i int
		_, err := fmt.Sscanf(strings.TrimPrefix(cm.Name, s.Name+"-rulefiles-"), "%d", &i)
		require.NoError(t, err)
		for len(shards) <= i {
			shards = append(shards, nil)
		}
		for name := range promfixture.ShardRules(t, &cm) {
			shards[i] = append(shards[i], name)
		}
		slices.Sort(shards[i])
	}
	return shards
}

func fileOf(r *monitoringv1.PrometheusRule) string { return rulefiles.FileName(r) }

// waitRules waits until the rule files of s are exactly want, by shard.
func (cp *controlPlane) waitRules(t *testing.T, s *v1alpha1.PrometheusServer, want ...[]string) {
	t.Helper()
	eventually(t, func(c *assert.CollectT) {
		assert.Equal(c, want, cp.ruleFiles(t, s))
	})
}

// waitFor waits until the object key names exists, and reads it into obj.
func (cp *controlPlane) waitFor(t *testing.T, key client.ObjectKey, obj client.Object) {
	t.Helper()
	eventually(t, func(c *assert.CollectT) {
		assert.NoError(c, cp.c.Get(t.Context(), key, obj))
	})
}

func (cp *controlPlane) status(t *testing.T, s *v1alpha1.PrometheusServer) v1alpha1.PrometheusServerStatus {
	var got v1alpha1.PrometheusServer
	require.NoError(t, cp.c.Get(t.Context(), client.ObjectKeyFromObject(s), &got))
	return got.Status
}

func requireControlledBy(t *testing.T, obj metav1.Object, s *v1alpha1.PrometheusServer) {
	t.Helper()
	ref := metav1.GetControllerOf(obj)
	require.NotNil(t, ref, "%s has no controller", obj.GetName())
	require.Equal(t, s.UID, ref.UID, "%s controller", obj.GetName())
	require.Equal(t, v1alpha1.Kind, ref.Kind)
}

func (cp *controlPlane) testSelection(t *testing.T) {
	a := cp.namespace(t, "sel-a", labelsOf("team", "x"))
	b := cp.namespace(t, "sel-b", labelsOf("team", "x"))
	c := cp.namespace(t, "sel-c", nil)
	cp.start(t, kube.Options{Namespaces: []string{a, b, c}})

	srv := server(a, "main", func(s *v1alpha1.PrometheusServerSpec) {
		s.ServiceMonitorSelector = &metav1.LabelSelector{MatchLabels: labelsOf("scrape", "yes")}
		s.ServiceMonitorNamespaceSelector = &metav1.LabelSelector{MatchLabels: labelsOf("team", "x")}
		s.RuleSelector = &metav1.LabelSelector{MatchLabels: labelsOf("role", "alert")}
	})
	aWeb := serviceMonitor(a, "web", labelsOf("scrape", "yes"))
	bWeb := serviceMonitor(b, "web", labelsOf("scrape", "yes"))
	cWeb := serviceMonitor(c, "web", labelsOf("scrape", "yes"))
	aOther := serviceMonitor(a, "other", labelsOf("scrape", "no"))
	r1 := prometheusRule(a, "r1", labelsOf("role", "alert"), "up")
	r2 := prometheusRule(b, "r2", labelsOf("role", "alert"), "up") // Not the server's namespace.
	cp.create(t, aWeb, bWeb, cWeb, aOther, r1, r2, srv)

	config := cp.waitJobs(t, srv, "serviceMonitor/sel-a/web/0", "serviceMonitor/sel-b/web/0")
	cp.waitRules(t, srv, []string{fileOf(r1)})
	var svc corev1.Service
	cp.waitFor(t, client.ObjectKeyFromObject(srv), &svc)
	requireControlledBy(t, &svc, srv)
	require.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP)
	var sts appsv1.StatefulSet
	cp.waitFor(t, client.ObjectKeyFromObject(srv), &sts)
	requireControlledBy(t, &sts, srv)
	require.Equal(t, "prometheus", sts.Spec.Template.Spec.Containers[0].Name)
	var secret corev1.Secret
	cp.waitFor(t, client.ObjectKey{Namespace: a, Name: promserver.ConfigSecretName(srv)}, &secret)
	requireControlledBy(t, &secret, srv)
	var shard corev1.ConfigMap
	cp.waitFor(t, client.ObjectKey{Namespace: a, Name: promserver.RuleShardName(promserver.OwnTarget(srv), 0)}, &shard)
	requireControlledBy(t, &shard, srv)
	require.Contains(t, promfixture.ShardRules(t, &shard)[fileOf(r1)], "expr: up")

	sum := sha256.Sum256([]byte(config))
	eventually(t, func(c *assert.CollectT) {
		st := cp.status(t, srv)
		assert.Equal(c, v1alpha1.Selection{Selected: 2}, st.ServiceMonitors)
		assert.Equal(c, v1alpha1.Selection{Selected: 1}, st.Rules)
		assert.Equal(c, hex.EncodeToString(sum[:]), st.ConfigHash)
		// The hash the sidecars report, from the objects as stored.
		var secret corev1.Secret
		var shard corev1.ConfigMap
		if assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKey{Namespace: a, Name: promserver.ConfigSecretName(srv)}, &secret)) &&
			assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKey{Namespace: a, Name: promserver.RuleShardName(promserver.OwnTarget(srv), 0)}, &shard)) {
			files := map[string]string{}
			for k, v := range shard.BinaryData {
				files[shard.Name+"/"+k] = string(v)
			}
			assert.Equal(c, contract.Sum(secret.Data[promserver.ConfigSecretKey], files), st.ContentHash)
		}
		assert.Equal(c, srv.Generation, st.ObservedGeneration)
		cond := meta.FindStatusCondition(st.Conditions, promserver.ConditionReconciled)
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionTrue, cond.Status)
		}
		cond = meta.FindStatusCondition(st.Conditions, promserver.ConditionAvailable)
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionFalse, cond.Status, "no pod runs here")
		}
	})

	// Each change reaches the configuration.
	edit(t, cp.c, aWeb, func(sm *monitoringv1.ServiceMonitor) { sm.Spec.Endpoints[0].Interval = "7s" })
	eventually(t, func(c *assert.CollectT) {
		assert.Contains(c, cp.config(t, srv), "scrape_interval: 7s")
	})
	edit(t, cp.c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c}}, func(ns *corev1.Namespace) { ns.Labels = labelsOf("team", "x") })
	cp.waitJobs(t, srv, "serviceMonitor/sel-a/web/0", "serviceMonitor/sel-b/web/0", "serviceMonitor/sel-c/web/0")
	edit(t, cp.c, aOther, func(sm *monitoringv1.ServiceMonitor) { sm.Labels["scrape"] = "yes" })
	cp.waitJobs(t, srv, "serviceMonitor/sel-a/web/0", "serviceMonitor/sel-a/other/0", "serviceMonitor/sel-b/web/0", "serviceMonitor/sel-c/web/0")
	edit(t, cp.c, aWeb, func(sm *monitoringv1.ServiceMonitor) { delete(sm.Labels, "scrape") })
	cp.waitJobs(t, srv, "serviceMonitor/sel-a/other/0", "serviceMonitor/sel-b/web/0", "serviceMonitor/sel-c/web/0")
	require.NoError(t, cp.c.Delete(t.Context(), bWeb))
	cp.waitJobs(t, srv, "serviceMonitor/sel-a/other/0", "serviceMonitor/sel-c/web/0")
	edit(t, cp.c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c}}, func(ns *corev1.Namespace) { ns.Labels = nil })
	cp.waitJobs(t, srv, "serviceMonitor/sel-a/other/0")

	r3 := prometheusRule(a, "r3", labelsOf("role", "alert"), "vector(1)")
	cp.create(t, r3)
	cp.waitRules(t, srv, slices.Sorted(slices.Values([]string{fileOf(r1), fileOf(r3)})))
	require.NoError(t, cp.c.Delete(t.Context(), r1))
	cp.waitRules(t, srv, []string{fileOf(r3)})
	edit(t, cp.c, r3, func(r *monitoringv1.PrometheusRule) { r.Spec.Groups[0].Rules[0].Expr = intstr.FromString("vector(2)") })
	eventually(t, func(c *assert.CollectT) {
		var cm corev1.ConfigMap
		assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKey{Namespace: a, Name: promserver.RuleShardName(promserver.OwnTarget(srv), 0)}, &cm))
		assert.Contains(c, promfixture.ShardRules(t, &cm)[fileOf(r3)], "vector(2)")
	})
}

func (cp *controlPlane) testSecrets(t *testing.T) {
	ns := cp.namespace(t, "secrets", nil)
	cp.start(t, kube.Options{Namespaces: []string{ns}})
	srv := server(ns, "main", func(s *v1alpha1.PrometheusServerSpec) {
		s.ServiceMonitorSelector = &metav1.LabelSelector{}
	})
	sm := serviceMonitor(ns, "auth", nil)
	sm.Spec.Endpoints[0].BasicAuth = &monitoringv1.BasicAuth{
		Username: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "user"},
		Password: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "password"},
	}
	cp.create(t, sm, serviceMonitor(ns, "plain", nil), srv)
	// The Secret is missing: the monitor is left out, the rest is there.
	cp.waitJobs(t, srv, "serviceMonitor/secrets/plain/0")

	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"},
		Data: map[string][]byte{"user": []byte("alice"), "password": []byte("one")}}
	cp.create(t, creds)
	config := cp.waitJobs(t, srv, "serviceMonitor/secrets/auth/0", "serviceMonitor/secrets/plain/0")
	require.Contains(t, config, "password: one")

	edit(t, cp.c, creds, func(s *corev1.Secret) { s.Data["password"] = []byte("two") })
	eventually(t, func(c *assert.CollectT) {
		assert.Contains(c, cp.config(t, srv), "password: two")
	})
}

// paddedRule is a PrometheusRule whose rule file takes about size bytes
// gzipped: padded with random letters (promfixture.NoisyRule).
func paddedRule(ns, name string, size int) *monitoringv1.PrometheusRule {
	r := prometheusRule(ns, name, labelsOf("shard", "test"), "up == 0")
	r.Spec.Groups[0].Rules[0].Labels = promfixture.NoisyRule(name, size*4/3).Spec.Groups[0].Rules[0].Labels
	return r
}

func (cp *controlPlane) testShards(t *testing.T) {
	for _, source := range []string{v1alpha1.SourceAPI, v1alpha1.SourceVolume} {
		t.Run(source, func(t *testing.T) { cp.testShardsOf(t, source) })
	}
}

func (cp *controlPlane) testShardsOf(t *testing.T, source string) {
	ns := cp.namespace(t, "shards-"+source, nil)
	run := cp.start(t, kube.Options{Namespaces: []string{ns}})
	srv := server(ns, "main", func(s *v1alpha1.PrometheusServerSpec) {
		s.RuleSelector = &metav1.LabelSelector{MatchLabels: labelsOf("shard", "test")}
		s.Reloader.Source = source
	})
	small := prometheusRule(ns, "a-small", labelsOf("shard", "test"), "up")
	cp.create(t, srv, small)
	cp.waitRules(t, srv, []string{fileOf(small)})
	var sts appsv1.StatefulSet
	cp.waitFor(t, client.ObjectKeyFromObject(srv), &sts)

	// A shard as an older controller wrote it, its file plain: written
	// again gzipped, in one update.
	edit(t, cp.c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: promserver.RuleShardName(promserver.OwnTarget(srv), 0)}}, func(cm *corev1.ConfigMap) {
		cm.Data, cm.BinaryData = map[string]string{fileOf(small): "groups: []\n"}, nil
	})
	eventually(t, func(c *assert.CollectT) {
		var cm corev1.ConfigMap
		if assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: promserver.RuleShardName(promserver.OwnTarget(srv), 0)}, &cm)) {
			assert.Empty(c, cm.Data)
			assert.Equal(c, []string{fileOf(small) + ".gz"}, slices.Collect(maps.Keys(cm.BinaryData)))
		}
	})

	// Three files of 18 KiB gzipped (some 25 KiB in base64), large ones
	// (largeFile), and the small one: the small one stays in the first
	// ConfigMap, each large one gets one of its own, in name order. With
	// the API source, the configuration names them before they are
	// created; with the volume source, it names a padded set of 4 and does
	// not change.
	before := len(run.Writes())
	var big []*monitoringv1.PrometheusRule
	for _, name := range []string{"b1", "b2", "b3"} {
		r := paddedRule(ns, name, 18<<10)
		cp.create(t, r)
		big = append(big, r)
	}
	cp.waitRules(t, srv, []string{fileOf(small)}, []string{fileOf(big[0])}, []string{fileOf(big[1])}, []string{fileOf(big[2])})
	writes := run.Writes()[before:]
	base := "/api/v1/namespaces/" + ns + "/configmaps"
	config := "PUT /api/v1/namespaces/" + ns + "/secrets/" + promserver.ConfigSecretName(srv)
	create := slices.Index(writes, "POST "+base)
	require.GreaterOrEqual(t, create, 0, "shards created: %q", writes)
	if source == v1alpha1.SourceAPI {
		require.True(t, slices.Contains(writes[:create], config), "configuration written before the new shards: %q", writes)
	} else {
		require.NotContains(t, writes, config)
	}

	// Shrink: the last large file moves to the second ConfigMap, which is
	// last written before the last of the others is deleted (the
	// deletions may be rendered one by one); with the API source, the
	// configuration stops naming them after that.
	before = len(run.Writes())
	for _, r := range big[:2] {
		require.NoError(t, cp.c.Delete(t.Context(), r))
	}
	cp.waitRules(t, srv, []string{fileOf(small)}, []string{fileOf(big[2])})
	if source == v1alpha1.SourceAPI {
		eventually(t, func(c *assert.CollectT) {
			assert.Contains(c, run.Writes()[before:], config)
		})
	}
	writes = run.Writes()[before:]
	lastDelete := max(lastIndex(writes, "DELETE "+base+"/"+promserver.RuleShardName(promserver.OwnTarget(srv), 2)), lastIndex(writes, "DELETE "+base+"/"+promserver.RuleShardName(promserver.OwnTarget(srv), 3)))
	update := lastIndex(writes, "PUT "+base+"/"+promserver.RuleShardName(promserver.OwnTarget(srv), 1))
	require.True(t, update >= 0 && lastDelete > update, "second shard written before the last one is deleted: %q", writes)
	if source == v1alpha1.SourceAPI {
		require.Greater(t, lastIndex(writes, config), lastDelete, "configuration written after the shards are deleted: %q", writes)
	} else {
		require.NotContains(t, writes, config)
	}

	// The pods of the API source have no volume per shard (and those of
	// the volume source mount a padded set of them): the StatefulSet was
	// never written.
	var after appsv1.StatefulSet
	require.NoError(t, cp.c.Get(t.Context(), client.ObjectKeyFromObject(srv), &after))
	require.Equal(t, sts.ResourceVersion, after.ResourceVersion, "StatefulSet untouched")
}

// lastIndex is the index of the last s in list, or -1.
func lastIndex(list []string, s string) int {
	for i := len(list) - 1; i >= 0; i-- {
		if list[i] == s {
			return i
		}
	}
	return -1
}

func (cp *controlPlane) testImmutable(t *testing.T) {
	ns := cp.namespace(t, "immutable", nil)
	run := cp.start(t, kube.Options{Namespaces: []string{ns}})
	srv := server(ns, "main", nil)
	cp.create(t, srv)
	key := client.ObjectKeyFromObject(srv)
	var sts appsv1.StatefulSet
	cp.waitFor(t, key, &sts)
	require.Empty(t, sts.Spec.VolumeClaimTemplates)

	// Volume claim templates cannot change: the update is refused with
	// 422 and the StatefulSet is deleted in the foreground.
	edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) {
		s.Spec.Storage = &v1alpha1.StorageSpec{VolumeClaimTemplate: &monitoringv1.EmbeddedPersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resourceQuantity(t, "1Gi")}},
		}}}
	})
	var deleting appsv1.StatefulSet
	eventually(t, func(c *assert.CollectT) {
		assert.True(c, cp.c.Get(t.Context(), key, &deleting) == nil && deleting.DeletionTimestamp != nil)
	})
	require.Contains(t, deleting.Finalizers, metav1.FinalizerDeleteDependents, "foreground deletion")
	require.Equal(t, 1.0, metricValue(t, run.reg, "podreload_controller_statefulset_recreations_total"))

	// There is no garbage collector here: do its part, the pods being gone.
	edit(t, cp.c, &deleting, func(s *appsv1.StatefulSet) { s.Finalizers = nil })
	eventually(t, func(c *assert.CollectT) {
		var again appsv1.StatefulSet
		if assert.NoError(c, cp.c.Get(t.Context(), key, &again)) {
			assert.NotEqual(c, sts.UID, again.UID, "a new StatefulSet")
			assert.Len(c, again.Spec.VolumeClaimTemplates, 1)
		}
	})
	eventually(t, func(c *assert.CollectT) {
		cond := meta.FindStatusCondition(cp.status(t, srv).Conditions, promserver.ConditionReconciled)
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionTrue, cond.Status, cond.Message)
		}
	})
	require.Equal(t, 1.0, metricValue(t, run.reg, "podreload_controller_statefulset_recreations_total"))
}

func resourceQuantity(t *testing.T, s string) resource.Quantity {
	q, err := resource.ParseQuantity(s)
	require.NoError(t, err)
	return q
}

// metricValue is the sum of the values of the series of a counter or
// gauge.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	return metricvalue.Sum(t, reg, name, labels...)
}

func (cp *controlPlane) testInvalid(t *testing.T) {
	ns := cp.namespace(t, "invalid", nil)
	run := cp.start(t, kube.Options{Namespaces: []string{ns}})
	srv := server(ns, "main", func(s *v1alpha1.PrometheusServerSpec) {
		s.ServiceMonitorSelector = &metav1.LabelSelector{}
		s.RuleSelector = &metav1.LabelSelector{}
	})
	good := serviceMonitor(ns, "good", nil)
	slow := serviceMonitor(ns, "slow", nil)
	slow.Spec.Endpoints[0].Interval = "10s"
	slow.Spec.Endpoints[0].ScrapeTimeout = "20s"
	rule := prometheusRule(ns, "good-rules", nil, "up")
	broken := prometheusRule(ns, "broken-rules", nil, "sum(up")
	cp.create(t, srv, good, slow, rule, broken)

	cp.waitJobs(t, srv, "serviceMonitor/invalid/good/0")
	cp.waitRules(t, srv, []string{fileOf(rule)})
	eventually(t, func(c *assert.CollectT) {
		st := cp.status(t, srv)
		assert.Equal(c, v1alpha1.Selection{Selected: 2, Rejected: 1}, st.ServiceMonitors)
		assert.Equal(c, v1alpha1.Selection{Selected: 2, Rejected: 1}, st.Rules)
		// One `kubectl get promsrv -o yaml` says why.
		assert.Equal(c, int32(2), st.LeftOutCount)
		if assert.Len(c, st.LeftOut, 2) {
			assert.Equal(c, v1alpha1.LeftOutObject{Kind: "PrometheusRule", Namespace: ns, Name: "broken-rules", Reason: st.LeftOut[0].Reason}, st.LeftOut[0])
			assert.Contains(c, st.LeftOut[0].Reason, "unclosed left parenthesis")
			assert.Equal(c, v1alpha1.LeftOutObject{Kind: "ServiceMonitor", Namespace: ns, Name: "slow",
				Reason: `endpoints[0].scrapeTimeout: "20s" is greater than the scrape interval "10s"`}, st.LeftOut[1])
		}
	})
	require.Equal(t, 1.0, metricValue(t, run.reg, "podreload_controller_rejected_resources", "kind", "ServiceMonitor"))
	require.Equal(t, 1.0, metricValue(t, run.reg, "podreload_controller_rejected_resources", "kind", "PrometheusRule"))
	require.Equal(t, 2.0, metricValue(t, run.reg, "podreload_controller_selected_resources", "kind", "PrometheusRule"))

	// A Warning Event on each rejected object names the cause.
	notes := map[string]string{}
	eventually(t, func(c *assert.CollectT) {
		var events eventsv1.EventList
		assert.NoError(c, cp.c.List(t.Context(), &events, client.InNamespace(ns)))
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == "Rejected" {
				notes[e.Regarding.Kind+"/"+e.Regarding.Name] = e.Note
			}
		}
		assert.Len(c, notes, 2)
	})
	require.Equal(t, `left out of PrometheusServer invalid/main: endpoints[0].scrapeTimeout: "20s" is greater than the scrape interval "10s"`, notes["ServiceMonitor/slow"])
	require.Contains(t, notes["PrometheusRule/broken-rules"], "left out of PrometheusServer invalid/main: ")
	require.Contains(t, notes["PrometheusRule/broken-rules"], "unclosed left parenthesis")

	// Fixing the object brings it in.
	edit(t, cp.c, slow, func(sm *monitoringv1.ServiceMonitor) { sm.Spec.Endpoints[0].ScrapeTimeout = "5s" })
	cp.waitJobs(t, srv, "serviceMonitor/invalid/good/0", "serviceMonitor/invalid/slow/0")
	eventually(t, func(c *assert.CollectT) {
		st := cp.status(t, srv)
		assert.Equal(c, int32(1), st.LeftOutCount)
		if assert.Len(c, st.LeftOut, 1) {
			assert.Equal(c, "broken-rules", st.LeftOut[0].Name)
		}
	})
}

// testInvalidServer breaks a PrometheusServer: it is told on the server,
// and what was written for it stays.
func (cp *controlPlane) testInvalidServer(t *testing.T) {
	ns := cp.namespace(t, "invalid-server", nil)
	run := cp.start(t, kube.Options{Namespaces: []string{ns}})
	srv := server(ns, "main", func(s *v1alpha1.PrometheusServerSpec) { s.ServiceMonitorSelector = &metav1.LabelSelector{} })
	cp.create(t, srv, serviceMonitor(ns, "web", nil))
	config := cp.waitJobs(t, srv, "serviceMonitor/invalid-server/web/0")

	edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) {
		s.Spec.ServiceMonitorSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}
	})
	const want = `select ServiceMonitors: parse label selector: "Near" is not a valid label selector operator`
	eventually(t, func(c *assert.CollectT) {
		st := cp.status(t, srv)
		cond := meta.FindStatusCondition(st.Conditions, promserver.ConditionReconciled)
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
			assert.Equal(c, "InvalidSpec", cond.Reason)
			assert.Equal(c, want, cond.Message)
		}
	})
	cp.waitServerEvent(t, srv, "InvalidSpec", want)
	require.Equal(t, config, cp.config(t, srv), "the last configuration stays")
	require.Positive(t, metricValue(t, run.reg, "podreload_controller_reconcile_errors_total"))
}

func (cp *controlPlane) testNoop(t *testing.T) {
	ns := cp.namespace(t, "noop", nil)
	run := cp.start(t, kube.Options{Namespaces: []string{ns}, SyncPeriod: time.Second})
	srv := server(ns, "main", func(s *v1alpha1.PrometheusServerSpec) {
		s.ServiceMonitorSelector = &metav1.LabelSelector{}
		s.RuleSelector = &metav1.LabelSelector{}
		// A claim template: the API server keeps no apiVersion and kind
		// in it, which the controller once wrote at every resync.
		s.Storage = &v1alpha1.StorageSpec{VolumeClaimTemplate: &monitoringv1.EmbeddedPersistentVolumeClaim{
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}}
	})
	sm := serviceMonitor(ns, "web", nil)
	cp.create(t, srv, sm, prometheusRule(ns, "rules", nil, "up"), serviceMonitor(ns, "broken", labelsOf("x", "y")))
	edit(t, cp.c, &monitoringv1.ServiceMonitor{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "broken"}}, func(sm *monitoringv1.ServiceMonitor) {
		sm.Spec.Endpoints[0].Interval, sm.Spec.Endpoints[0].ScrapeTimeout = "1s", "2s"
	})
	cp.waitJobs(t, srv, "serviceMonitor/noop/web/0")
	eventually(t, func(c *assert.CollectT) {
		assert.Equal(c, v1alpha1.Selection{Selected: 2, Rejected: 1}, cp.status(t, srv).ServiceMonitors)
	})

	// Let the writes settle (the Event is sent asynchronously), then wait
	// for resyncs and a change that renders the same: no write at all.
	settled := run.settle(t)
	reconciles := metricValue(t, run.reg, "podreload_controller_reconciles_total")
	edit(t, cp.c, sm, func(sm *monitoringv1.ServiceMonitor) { sm.Labels = labelsOf("unrelated", "label") })
	eventually(t, func(c *assert.CollectT) {
		assert.GreaterOrEqual(c, metricValue(t, run.reg, "podreload_controller_reconciles_total"), reconciles+3)
	})
	require.Equal(t, settled, run.Writes(), "no write for a no-op reconciliation")
	require.Zero(t, metricValue(t, run.reg, "podreload_controller_reconcile_errors_total"))
}

func (cp *controlPlane) testPaused(t *testing.T) {
	ns := cp.namespace(t, "paused", nil)
	run := cp.start(t, kube.Options{Namespaces: []string{ns}})
	srv := server(ns, "main", func(s *v1alpha1.PrometheusServerSpec) {
		s.ServiceMonitorSelector = &metav1.LabelSelector{}
	})
	cp.create(t, srv, serviceMonitor(ns, "one", nil))
	cp.waitJobs(t, srv, "serviceMonitor/paused/one/0")

	reconciles := metricValue(t, run.reg, "podreload_controller_reconciles_total")
	edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) { s.Spec.Paused = true })
	eventually(t, func(c *assert.CollectT) {
		assert.Greater(c, metricValue(t, run.reg, "podreload_controller_reconciles_total"), reconciles)
	})
	writes := len(run.settle(t))
	triggers := metricValue(t, run.reg, "podreload_controller_triggers_total")
	reconciles = metricValue(t, run.reg, "podreload_controller_reconciles_total")
	cp.create(t, serviceMonitor(ns, "two", nil))
	eventually(t, func(c *assert.CollectT) {
		assert.True(c, metricValue(t, run.reg, "podreload_controller_triggers_total") > triggers &&
			metricValue(t, run.reg, "podreload_controller_reconciles_total") > reconciles)
	})
	require.Len(t, run.Writes(), writes, "no write while paused")
	require.ElementsMatch(t, []string{"serviceMonitor/paused/one/0"}, jobs(t, cp.config(t, srv)))

	edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) { s.Spec.Paused = false })
	cp.waitJobs(t, srv, "serviceMonitor/paused/one/0", "serviceMonitor/paused/two/0")
}

func (cp *controlPlane) testLeaderElection(t *testing.T) {
	ns := cp.namespace(t, "leader", nil)
	cp.start(t, kube.Options{Namespaces: []string{ns}, LeaderElection: true, LeaderElectionNamespace: ns})
	eventually(t, func(c *assert.CollectT) {
		var lease coordinationv1.Lease
		if assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: kube.Name}, &lease)) {
			assert.NotEmpty(c, ptr.Deref(lease.Spec.HolderIdentity, ""))
		}
	})
	srv := server(ns, "main", func(s *v1alpha1.PrometheusServerSpec) { s.ServiceMonitorSelector = &metav1.LabelSelector{} })
	cp.create(t, srv, serviceMonitor(ns, "web", nil))
	cp.waitJobs(t, srv, "serviceMonitor/leader/web/0")
}

// testRestart stops the API server under a running controller and starts
// it again: the controller converges on a change made afterwards, without
// restarting.
func (cp *controlPlane) testRestart(t *testing.T) {
	ns := cp.namespace(t, "restart", nil)
	run := cp.start(t, kube.Options{Namespaces: []string{ns}})
	srv := server(ns, "main", func(s *v1alpha1.PrometheusServerSpec) { s.ServiceMonitorSelector = &metav1.LabelSelector{} })
	cp.create(t, srv, serviceMonitor(ns, "before", nil))
	cp.waitJobs(t, srv, "serviceMonitor/restart/before/0")

	cp.env.RestartAPIServer(t)
	cp.create(t, serviceMonitor(ns, "after", nil))
	cp.waitJobs(t, srv, "serviceMonitor/restart/after/0", "serviceMonitor/restart/before/0")
	select {
	case err := <-run.done:
		t.Fatalf("the controller stopped: %v", err)
	default:
	}
}
