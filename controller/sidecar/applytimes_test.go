package sidecar

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

// TestApplyTimes: content written is timed once, from its write to the
// first status that finds it applied; content first seen in a status
// (an earlier controller's) is kept but not timed.
func TestApplyTimes(t *testing.T) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "apply_seconds", Buckets: []float64{1, 5, 10}})
	now := time.Unix(1000, 0)
	a := NewApplyTimes(h, func() time.Time { return now })
	key := types.NamespacedName{Namespace: "ns", Name: "main"}

	a.Observe(key, "old", "old", true) // First seen: an earlier controller's.
	require.Equal(t, "old", a.Written(key))
	require.Zero(t, histCount(t, h), "not timed")

	a.Observe(key, "old", "new", false) // Written now.
	now = now.Add(3 * time.Second)
	a.Observe(key, "new", "new", false)
	require.Zero(t, histCount(t, h), "not applied yet")
	now = now.Add(4 * time.Second)
	a.Observe(key, "new", "new", true)
	require.Equal(t, uint64(1), histCount(t, h))
	require.InDelta(t, 7, histSum(t, h), 1e-9)
	a.Observe(key, "new", "new", true)
	require.Equal(t, uint64(1), histCount(t, h), "timed once")
	require.Equal(t, "new", a.Written(key))

	a.Forget(key)
	require.Empty(t, a.Written(key))
	a.Observe(key, "new", "new", true)
	require.Equal(t, uint64(1), histCount(t, h), "after a restart: not timed")
}

func histCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	m := &dto.Metric{}
	require.NoError(t, h.Write(m))
	return m.GetHistogram().GetSampleCount()
}

func histSum(t *testing.T, h prometheus.Histogram) float64 {
	t.Helper()
	m := &dto.Metric{}
	require.NoError(t, h.Write(m))
	return m.GetHistogram().GetSampleSum()
}
