package prometheusserver

import (
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/takeover"
)

// testShardRetention scales three Prometheus objects taken over from two
// shards to one: the one whose shardRetentionPolicy retains shards for 3s
// keeps its second shard's StatefulSet, annotated with
// prometheus-operator's deletion deadline, until the deadline, then it is
// deleted; the one with a size-based retention alone keeps it with a
// deadline of never; the one without a policy loses it at once.
func (cp *controlPlane) testShardRetention(t *testing.T) {
	ns := cp.namespace(t, "retain", nil)
	retain := ptr.To(monitoringv1.RetainWhenScaledRetentionType)
	sharded := func(name string) *monitoringv1.Prometheus {
		p := operatorPrometheus(ns, name, "podreload")
		p.Spec.Replicas, p.Spec.Shards = ptr.To[int32](1), ptr.To[int32](2)
		return p
	}
	timed, forever, deleted := sharded("timed"), sharded("forever"), sharded("deleted")
	timed.Spec.ShardRetentionPolicy = &monitoringv1.ShardRetentionPolicy{
		WhenScaled: retain, Retain: &monitoringv1.RetainConfig{RetentionPeriod: "3s"},
	}
	forever.Spec.ShardRetentionPolicy = &monitoringv1.ShardRetentionPolicy{WhenScaled: retain}
	forever.Spec.RetentionSize = "1GB"
	cp.create(t, timed, forever, deleted)
	cp.startTakingOver(t, kube.Options{Namespaces: []string{ns}}, &takeover.Options{ControllerID: "podreload"})
	second := func(p *monitoringv1.Prometheus) client.ObjectKey {
		return client.ObjectKey{Namespace: ns, Name: "prometheus-" + p.Name + "-shard-1"}
	}
	for _, p := range []*monitoringv1.Prometheus{timed, forever, deleted} {
		cp.waitFor(t, second(p), &appsv1.StatefulSet{})
	}

	scaled := time.Now()
	for _, p := range []*monitoringv1.Prometheus{timed, forever, deleted} {
		edit(t, cp.c, p, func(p *monitoringv1.Prometheus) { p.Spec.Shards = ptr.To[int32](1) })
	}
	deadline := func(c *assert.CollectT, p *monitoringv1.Prometheus) (time.Time, bool) {
		var sts appsv1.StatefulSet
		if !assert.NoError(c, cp.c.Get(t.Context(), second(p), &sts), "%s: the second shard retained", p.Name) {
			return time.Time{}, false
		}
		v, ok := sts.Annotations[takeover.AnnotationDeletionDeadline]
		if !assert.True(c, ok, "%s: a deletion deadline", p.Name) {
			return time.Time{}, false
		}
		d, err := time.Parse(time.RFC3339, v)
		return d, assert.NoError(c, err, "%s: the deadline %q", p.Name, v)
	}
	eventually(t, func(c *assert.CollectT) {
		if d, ok := deadline(c, timed); ok {
			assert.WithinRange(c, d, scaled.Add(2*time.Second), time.Now().Add(3*time.Second), "the scale-down plus retain.retentionPeriod")
		}
		if d, ok := deadline(c, forever); ok {
			assert.True(c, d.IsZero(), "never, with a size-based retention alone: %v", d)
		}
		err := cp.c.Get(t.Context(), second(deleted), &appsv1.StatefulSet{})
		assert.True(c, apierrors.IsNotFound(err), "no policy: the second shard deleted: %v", err)
	})
	eventually(t, func(c *assert.CollectT) {
		err := cp.c.Get(t.Context(), second(timed), &appsv1.StatefulSet{})
		assert.True(c, apierrors.IsNotFound(err), "the second shard deleted past its deadline: %v", err)
	})
	require.GreaterOrEqual(t, time.Since(scaled), 2*time.Second, "not before its deadline")
	require.NoError(t, cp.c.Get(t.Context(), second(forever), &appsv1.StatefulSet{}), "retained for ever")
}
