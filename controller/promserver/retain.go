package promserver

import (
	"fmt"
	"sync"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// AnnotationDeletionDeadline is the time after which the StatefulSet of a
// shard scaled away, retained (spec.shardRetentionPolicy whenScaled
// Retain), is deleted: RFC 3339, the zero time for never. It is
// prometheus-operator's annotation, so that a deadline set before a
// takeover or a hand-back holds after it.
const AnnotationDeletionDeadline = "operator.prometheus.io/deletion-deadline"

// retainShards tells whether the StatefulSets of the shards server scaled
// away are retained rather than deleted.
func retainShards(server Target) bool {
	p := server.ShardRetention
	return p != nil && ptr.Deref(p.WhenScaled, monitoringv1.DeleteWhenScaledRetentionType) == monitoringv1.RetainWhenScaledRetentionType
}

// retentionGrace is how long a retained shard's StatefulSet stays, as
// prometheus-operator reckons it: the policy's retentionPeriod, else the
// data's retention (spec.retention, prometheus-operator's default when it
// is unset without a retentionSize), 0 (forever) with a size-based
// retention alone.
func retentionGrace(server Target) (time.Duration, error) {
	retention := server.Spec.Retention
	if r := server.ShardRetention.Retain; r != nil {
		retention = r.RetentionPeriod
	} else if retention == "" {
		return 0, nil
	}
	d, err := model.ParseDuration(string(retention))
	if err != nil {
		return 0, fmt.Errorf("shard retention period %q: %w", retention, err)
	}
	return time.Duration(d), nil
}

// shardDeadline is when sts, the StatefulSet of a shard scaled away and
// retained, is to be deleted, from its AnnotationDeletionDeadline: set
// tells whether it has one; a zero time is never.
func shardDeadline(sts *appsv1.StatefulSet) (deadline time.Time, set bool, err error) {
	v, set := sts.Annotations[AnnotationDeletionDeadline]
	if !set {
		return time.Time{}, false, nil
	}
	deadline, err = time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, true, fmt.Errorf("StatefulSet %s/%s: annotation %s: %w", sts.Namespace, sts.Name, AnnotationDeletionDeadline, err)
	}
	return deadline, true, nil
}

// deadlines are the nearest deadline of the shards each server retains.
type deadlines struct {
	mu sync.Mutex
	at map[types.NamespacedName]time.Time
}

// Forget drops key's deadline: its render finds them again.
func (d *deadlines) Forget(key types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.at, key)
}

// At records a deadline of key's, which is kept when it is the nearest.
func (d *deadlines) At(key types.NamespacedName, t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if was, ok := d.at[key]; !ok || t.Before(was) {
		d.at[key] = t
	}
}

// Due returns how long until key's nearest deadline, and whether it is
// still ahead of now: one past is forgotten, for a render that does not
// come (the object paused, handed back) would otherwise be asked for
// again and again; the render at the deadline records those still ahead.
func (d *deadlines) Due(key types.NamespacedName, now time.Time) (time.Duration, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.at[key]
	if !ok || !now.Before(t) {
		delete(d.at, key)
		return 0, false
	}
	return t.Sub(now), true
}
