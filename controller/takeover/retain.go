package takeover

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

// RetainShards tells whether p, a Prometheus's spec.shardRetentionPolicy,
// retains the StatefulSets of the shards scaled away rather than deleting
// them.
func RetainShards(p *monitoringv1.ShardRetentionPolicy) bool {
	return p != nil && ptr.Deref(p.WhenScaled, monitoringv1.DeleteWhenScaledRetentionType) == monitoringv1.RetainWhenScaledRetentionType
}

// RetentionGrace is how long a retained shard's StatefulSet stays, as
// prometheus-operator reckons it: p's retentionPeriod, else the data's
// retention (spec.retention with prometheus-operator's default when it is
// unset without a retentionSize or retentionPercentage), 0 (forever) when
// that is empty (a size-based retention alone).
func RetentionGrace(p *monitoringv1.ShardRetentionPolicy, retention monitoringv1.Duration) (time.Duration, error) {
	if r := p.Retain; r != nil {
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

// ShardDeadline is when sts, the StatefulSet of a shard scaled away and
// retained, is to be deleted, from its AnnotationDeletionDeadline: set
// tells whether it has one; a zero time is never.
func ShardDeadline(sts *appsv1.StatefulSet) (deadline time.Time, set bool, err error) {
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

// Deadlines are the nearest deadline of the shards each object retains,
// when it is to be reconciled again.
type Deadlines struct {
	mu sync.Mutex
	at map[types.NamespacedName]time.Time
}

// NewDeadlines returns Deadlines that hold none.
func NewDeadlines() *Deadlines {
	return &Deadlines{at: map[types.NamespacedName]time.Time{}}
}

// Forget drops key's deadline: its render finds them again.
func (d *Deadlines) Forget(key types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.at, key)
}

// At records a deadline of key's, which is kept when it is the nearest.
func (d *Deadlines) At(key types.NamespacedName, t time.Time) {
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
func (d *Deadlines) Due(key types.NamespacedName, now time.Time) (time.Duration, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.at[key]
	if !ok || !now.Before(t) {
		delete(d.at, key)
		return 0, false
	}
	return t.Sub(now), true
}
