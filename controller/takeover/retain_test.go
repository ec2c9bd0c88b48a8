package takeover

import (
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestRetainShards(t *testing.T) {
	retain, del := ptr.To(monitoringv1.RetainWhenScaledRetentionType), ptr.To(monitoringv1.DeleteWhenScaledRetentionType)
	require.False(t, RetainShards(nil))
	require.False(t, RetainShards(&monitoringv1.ShardRetentionPolicy{}))
	require.False(t, RetainShards(&monitoringv1.ShardRetentionPolicy{WhenScaled: del}))
	require.True(t, RetainShards(&monitoringv1.ShardRetentionPolicy{WhenScaled: retain}))

	for _, tc := range []struct {
		policy    monitoringv1.ShardRetentionPolicy
		retention monitoringv1.Duration
		want      time.Duration
	}{
		{monitoringv1.ShardRetentionPolicy{WhenScaled: retain, Retain: &monitoringv1.RetainConfig{RetentionPeriod: "3d"}}, "24h", 72 * time.Hour},
		{monitoringv1.ShardRetentionPolicy{WhenScaled: retain}, "24h", 24 * time.Hour},
		{monitoringv1.ShardRetentionPolicy{WhenScaled: retain}, "", 0},
	} {
		got, err := RetentionGrace(&tc.policy, tc.retention)
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "%+v %s", tc.policy, tc.retention)
	}
	_, err := RetentionGrace(&monitoringv1.ShardRetentionPolicy{WhenScaled: retain}, "soon")
	require.ErrorContains(t, err, `shard retention period "soon"`)
}

func TestShardDeadline(t *testing.T) {
	sts := func(v string) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "prometheus-k8s-shard-1"}}
		if v != "" {
			s.Annotations = map[string]string{AnnotationDeletionDeadline: v}
		}
		return s
	}
	_, set, err := ShardDeadline(sts(""))
	require.NoError(t, err)
	require.False(t, set)
	d, set, err := ShardDeadline(sts("0001-01-01T00:00:00Z"))
	require.NoError(t, err)
	require.True(t, set)
	require.True(t, d.IsZero(), "never")
	d, _, err = ShardDeadline(sts("2026-12-03T10:00:00Z"))
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC), d)
	_, set, err = ShardDeadline(sts("tomorrow"))
	require.True(t, set)
	require.ErrorContains(t, err, "StatefulSet ns/prometheus-k8s-shard-1: annotation "+AnnotationDeletionDeadline)
}

func TestDeadlines(t *testing.T) {
	d := NewDeadlines()
	key := types.NamespacedName{Namespace: "ns", Name: "k8s"}
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	_, ok := d.Due(key, now)
	require.False(t, ok)
	d.At(key, now.Add(time.Minute))
	d.At(key, now.Add(30*time.Second))
	d.At(key, now.Add(2*time.Minute))
	after, ok := d.Due(key, now)
	require.True(t, ok)
	require.Equal(t, 30*time.Second, after, "the nearest")
	_, ok = d.Due(key, now.Add(31*time.Second))
	require.False(t, ok, "past: forgotten")
	_, ok = d.Due(key, now)
	require.False(t, ok, "and gone")
	d.At(key, now.Add(time.Minute))
	d.Forget(key)
	_, ok = d.Due(key, now)
	require.False(t, ok)
}
