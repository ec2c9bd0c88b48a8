package prometheusserver

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/rulefiles"
)

// testBurst creates monitors and rules from several clients at once while
// the replicas report each content the status shows, as the
// config-reloaders do: the controller converges on all of them, every
// ready replica applied, with no write refused with 409 Conflict, fewer
// renders than objects, and the reports rendering nothing.
func (cp *controlPlane) testBurst(t *testing.T) {
	const objects, clients = 120, 8
	ns := cp.namespace(t, "burst", nil)
	run := cp.start(t, kube.Options{Namespaces: []string{ns}})
	srv := server(ns, "main", func(s *v1alpha1.PrometheusServerSpec) {
		s.Replicas = ptr.To[int32](2)
		s.ServiceMonitorSelector = &metav1.LabelSelector{}
		s.RuleSelector = &metav1.LabelSelector{}
	})
	cp.create(t, srv)
	for _, name := range []string{"main-0", "main-1"} {
		pod := testPod(srv, name, false, nil)
		cp.create(t, &pod)
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		require.NoError(t, cp.c.Status().Update(t.Context(), &pod))
	}
	eventually(t, func(c *assert.CollectT) { assert.NotEmpty(c, cp.status(t, srv).ContentHash) })
	base := metricValue(t, run.reg, "podreload_controller_reconciles_total")

	// The replicas: each content the status shows, reported applied.
	stop := make(chan struct{})
	var reporters sync.WaitGroup
	reporters.Go(func() {
		reported := ""
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			var got v1alpha1.PrometheusServer
			if cp.c.Get(t.Context(), client.ObjectKeyFromObject(srv), &got) != nil || got.Status.ContentHash == reported {
				continue
			}
			reported = got.Status.ContentHash
			b, err := json.Marshal(contract.Applied{Hash: reported, Time: time.Now().UTC().Format(time.RFC3339)})
			assert.NoError(t, err)
			for _, name := range []string{"main-0", "main-1"} {
				assert.NoError(t, cp.c.Patch(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
					client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, contract.AppliedAnnotation, b))))
			}
		}
	})
	var creators sync.WaitGroup
	for c := range clients {
		creators.Go(func() {
			for i := c; i < objects; i += clients {
				name := fmt.Sprintf("burst-%03d", i)
				assert.NoError(t, cp.c.Create(t.Context(), serviceMonitor(ns, name, nil)))
				assert.NoError(t, cp.c.Create(t.Context(), prometheusRule(ns, name, nil, "up")))
			}
		})
	}
	creators.Wait()
	eventually(t, func(c *assert.CollectT) {
		status := cp.status(t, srv)
		assert.Equal(c, int32(objects), status.ServiceMonitors.Selected)
		assert.Equal(c, int32(objects), status.Rules.Selected)
		if cond := meta.FindStatusCondition(status.Conditions, promserver.ConditionConfigApplied); assert.NotNil(c, cond) {
			assert.Equal(c, "every ready replica runs "+status.ContentHash[:12], cond.Message)
		}
		assert.Equal(c, cp.contentHash(t, srv), status.ContentHash, "the content written")
	})
	close(stop)
	reporters.Wait()
	run.settle(t)

	assert.Empty(t, run.Conflicts(), "writes refused with 409 Conflict")
	assert.Zero(t, metricValue(t, run.reg, "podreload_controller_write_conflicts_total"))
	renders := metricValue(t, run.reg, "podreload_controller_reconciles_total") - base
	t.Logf("%d creates: %.0f renders, %d write requests", 2*objects, renders, len(run.Writes()))
	assert.Less(t, renders, float64(objects), "renders for %d creates", 2*objects)

	// A report alone updates the status without a render.
	b, err := json.Marshal(contract.Applied{Rejection: &contract.Rejection{Message: "bad rule", Time: time.Now().UTC().Format(time.RFC3339)}})
	require.NoError(t, err)
	before := metricValue(t, run.reg, "podreload_controller_reconciles_total")
	require.NoError(t, cp.c.Patch(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main-1"}},
		client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, contract.AppliedAnnotation, b))))
	eventually(t, func(c *assert.CollectT) {
		if cond := meta.FindStatusCondition(cp.status(t, srv).Conditions, promserver.ConditionConfigApplied); assert.NotNil(c, cond) {
			assert.Equal(c, "Rejected", cond.Reason)
		}
	})
	assert.Equal(t, before, metricValue(t, run.reg, "podreload_controller_reconciles_total"), "renders for a report")
}

// testStatusUpgrade: a status an earlier version of the controller
// patched (a left-out object, a rejected count) loses the fields the
// controller no longer sets at its first apply.
func (cp *controlPlane) testStatusUpgrade(t *testing.T) {
	ns := cp.namespace(t, "status-upgrade", nil)
	srv := server(ns, "main", nil)
	cp.create(t, srv)
	base := srv.DeepCopy()
	srv.Status.Rules = v1alpha1.Selection{Selected: 1, Rejected: 1}
	srv.Status.LeftOut = []v1alpha1.LeftOutObject{{Kind: promserver.KindPrometheusRule, Namespace: ns, Name: "gone", Reason: "invalid"}}
	srv.Status.LeftOutCount = 1
	require.NoError(t, cp.c.Status().Patch(t.Context(), srv, client.MergeFrom(base), client.FieldOwner("earlier-controller")))

	cp.start(t, kube.Options{Namespaces: []string{ns}})
	eventually(t, func(c *assert.CollectT) {
		status := cp.status(t, srv)
		assert.NotEmpty(c, status.ContentHash)
		assert.Empty(c, status.LeftOut)
		assert.Zero(c, status.LeftOutCount)
		assert.Equal(c, v1alpha1.Selection{}, status.Rules)
	})
}

func TestPrune(t *testing.T) {
	u := map[string]any{
		"a": nil,
		"b": map[string]any{"c": nil, "d": map[string]any{}},
		"e": map[string]any{"f": int64(1), "g": nil},
		"h": []any{map[string]any{"i": nil, "j": "k"}},
		"l": int64(0),
	}
	assert.Equal(t, map[string]any{
		"e": map[string]any{"f": int64(1)},
		"h": []any{map[string]any{"j": "k"}},
		"l": int64(0),
	}, prune(u))
}

// testRulesHeld hands the key of a server to its reconciler by hand, on
// a clock of its own, as the work queue does in a burst of events (the
// timing is TestCoalescer's): the render at the bound writes the
// configuration with the rule ConfigMaps as written before, and a status
// whose content hash is that of what is written; the render after the
// burst writes each rule ConfigMap once, and the status with them.
func (cp *controlPlane) testRulesHeld(t *testing.T) {
	ns := cp.namespace(t, "held", nil)
	var now time.Duration
	run, m, logger := cp.manager(t, kube.Options{Namespaces: []string{ns}})
	k, err := newServerKind(m, logger, run.reg, testWorkloadOptions())
	require.NoError(t, err)
	r := k.r
	r.Coalescer = kube.NewCoalescer(func() time.Time { return time.Unix(0, 0).Add(now) })
	run.run(t, m)

	srv := server(ns, "main", func(s *v1alpha1.PrometheusServerSpec) {
		s.ServiceMonitorSelector = &metav1.LabelSelector{}
		s.RuleSelector = &metav1.LabelSelector{}
	})
	rules := []*monitoringv1.PrometheusRule{prometheusRule(ns, "rule-0", nil, "up")}
	cp.create(t, srv, rules[0], serviceMonitor(ns, "monitor-0", nil))
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(srv)}
	// handOver hands the key over at the time at, once the reconciler's
	// cache holds what the API server does, and reports whether it
	// rendered.
	handOver := func(at time.Duration, monitors int) bool {
		t.Helper()
		cp.waitCached(t, r.Client, ns, len(rules), monitors)
		now = at
		res, err := r.Reconcile(t.Context(), req)
		require.NoError(t, err)
		return res.IsZero()
	}
	// rulesWritten are the write requests of rule ConfigMaps among writes.
	rulesWritten := func(writes []string) []string {
		var out []string
		for _, w := range writes {
			if strings.Contains(w, "/configmaps") {
				out = append(out, w)
			}
		}
		return out
	}
	// checkStatus checks that the status tells the content written.
	checkStatus := func(message string) v1alpha1.PrometheusServerStatus {
		t.Helper()
		status := cp.status(t, srv)
		assert.Equal(t, cp.contentHash(t, srv), status.ContentHash, "the content written")
		if cond := meta.FindStatusCondition(status.Conditions, promserver.ConditionReconciled); assert.NotNil(t, cond) {
			assert.Contains(t, cond.Message, message)
		}
		return status
	}

	require.True(t, handOver(0, 1), "the first event renders at once")
	first := cp.waitJobs(t, srv, "serviceMonitor/held/monitor-0/0")
	cp.waitRules(t, srv, []string{fileOf(rules[0])})
	checkStatus("1 rule file ConfigMaps written")
	before := len(run.Writes())

	// A burst: rules too large to share one ConfigMap, and monitors.
	for i := 1; i <= 8; i++ {
		rule := paddedRule(ns, fmt.Sprintf("rule-%d", i), 10<<10)
		cp.create(t, rule, serviceMonitor(ns, fmt.Sprintf("monitor-%d", i), nil))
		rules = append(rules, rule)
	}
	// Events every 50 ms from 50 ms: the first unrendered at 50 ms, its
	// bound at 3.05 s.
	at := 50 * time.Millisecond
	for ; !handOver(at, 9); at += 50 * time.Millisecond {
		require.Less(t, at, kube.MaxWait+time.Second, "no render at the bound")
	}
	require.Equal(t, 50*time.Millisecond+kube.MaxWait, at, "rendered at the bound")
	held := run.Writes()[before:]
	assert.Empty(t, rulesWritten(held), "rule ConfigMaps written at the bound")
	assert.Contains(t, held, "PUT /api/v1/namespaces/"+ns+"/secrets/"+promserver.ConfigSecretName(srv), "the configuration written at the bound")
	config := cp.config(t, srv)
	assert.Len(t, jobs(t, config), 9, "the monitors of the burst")
	assert.Equal(t, ruleFilesOf(t, first), ruleFilesOf(t, config), "rule_files of the ConfigMaps kept")
	assert.Equal(t, [][]string{{fileOf(rules[0])}}, cp.ruleFiles(t, srv))
	status := checkStatus("the rules' changes are written once the burst of changes pauses")
	assert.Equal(t, int32(9), status.Rules.Selected)
	before = len(run.Writes())

	// The burst ends: one more event, then the quiet gap.
	require.False(t, handOver(at+kube.QuietGap/2, 9))
	require.True(t, handOver(at+kube.QuietGap/2+kube.QuietGap, 9), "the render after the quiet gap")
	written := rulesWritten(run.Writes()[before:])
	var want [][]string
	for _, rule := range rules {
		i := rulefiles.Bucket(fileOf(rule), len(cp.ruleFiles(t, srv)))
		for len(want) <= i {
			want = append(want, nil)
		}
		want[i] = append(want[i], fileOf(rule))
	}
	for i := range want {
		slices.Sort(want[i])
	}
	cp.waitRules(t, srv, want...)
	require.Greater(t, len(want), 1, "the rules fill several ConfigMaps")
	assert.Len(t, written, len(want), "each rule ConfigMap written once: %q", written)
	assert.Equal(t, len(want)-1, count(written, "POST /api/v1/namespaces/"+ns+"/configmaps"), "created: %q", written)
	assert.Equal(t, 1, count(written, "PUT /api/v1/namespaces/"+ns+"/configmaps/"+promserver.RuleShardName(promserver.OwnTarget(srv), 0)), "updated: %q", written)
	checkStatus(fmt.Sprintf("%d rule file ConfigMaps written", len(want)))
	assert.Len(t, ruleFilesOf(t, cp.config(t, srv)), len(want))

	// Nothing changed since: a later event writes nothing.
	before = len(run.Writes())
	require.True(t, handOver(at+time.Minute, 9))
	assert.Empty(t, run.Writes()[before:])
	assert.Empty(t, run.Conflicts())
}

// contentHash is the content hash of the config Secret and the rule
// ConfigMaps of s as the API server has them.
func (cp *controlPlane) contentHash(t *testing.T, s *v1alpha1.PrometheusServer) string {
	var secret corev1.Secret
	require.NoError(t, cp.c.Get(t.Context(), client.ObjectKey{Namespace: s.Namespace, Name: promserver.ConfigSecretName(s)}, &secret))
	var cms corev1.ConfigMapList
	require.NoError(t, cp.c.List(t.Context(), &cms, client.InNamespace(s.Namespace), client.MatchingLabels{promserver.LabelRuleFiles: s.Name}))
	var live []*corev1.ConfigMap
	for i := range cms.Items {
		live = append(live, &cms.Items[i])
	}
	return promserver.ContentHash(secret.Data[promserver.ConfigSecretKey], live)
}

// count is how many times s is in list.
func count(list []string, s string) int {
	n := 0
	for _, e := range list {
		if e == s {
			n++
		}
	}
	return n
}

// ruleFilesOf returns the rule_files of a configuration.
func ruleFilesOf(t *testing.T, config string) []string {
	var cfg struct {
		RuleFiles []string `yaml:"rule_files"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(config), &cfg))
	return cfg.RuleFiles
}

// waitCached waits until the cache c reads from holds the rule
// ConfigMaps, StatefulSets and Services of ns as the API server does,
// and rules PrometheusRules and monitors ServiceMonitors.
func (cp *controlPlane) waitCached(t *testing.T, c client.Reader, ns string, rules, monitors int) {
	t.Helper()
	versions := func(r client.Reader, list client.ObjectList) map[string]string {
		require.NoError(t, r.List(t.Context(), list, client.InNamespace(ns)))
		out := map[string]string{}
		require.NoError(t, meta.EachListItem(list, func(o runtime.Object) error {
			m, err := meta.Accessor(o)
			if err == nil && m.GetLabels()[kube.LabelName] == promserver.App {
				out[m.GetName()] = m.GetResourceVersion()
			}
			return err
		}))
		return out
	}
	eventually(t, func(ct *assert.CollectT) {
		for _, newList := range []func() client.ObjectList{
			func() client.ObjectList { return &corev1.ConfigMapList{} },
			func() client.ObjectList { return &appsv1.StatefulSetList{} },
			func() client.ObjectList { return &corev1.ServiceList{} },
		} {
			assert.Equal(ct, versions(cp.c, newList()), versions(c, newList()))
		}
		var pr monitoringv1.PrometheusRuleList
		assert.NoError(ct, c.List(t.Context(), &pr, client.InNamespace(ns)))
		assert.Len(ct, pr.Items, rules)
		var sm monitoringv1.ServiceMonitorList
		assert.NoError(ct, c.List(t.Context(), &sm, client.InNamespace(ns)))
		assert.Len(ct, sm.Items, monitors)
	}, "the controller's cache")
}
