package prometheus

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/controller/kube"
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
		if cond := meta.FindStatusCondition(status.Conditions, conditionConfigApplied); assert.NotNil(c, cond) {
			assert.Equal(c, "every ready replica runs "+status.ContentHash[:12], cond.Message)
		}
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
		if cond := meta.FindStatusCondition(cp.status(t, srv).Conditions, conditionConfigApplied); assert.NotNil(c, cond) {
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
	srv.Status.LeftOut = []v1alpha1.LeftOutObject{{Kind: kindPrometheusRule, Namespace: ns, Name: "gone", Reason: "invalid"}}
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
