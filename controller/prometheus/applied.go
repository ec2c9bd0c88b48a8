package prometheus

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/sidecar"
)

// written is content the controller wrote, for the time every replica
// takes to apply it.
type written struct {
	hash  string
	at    time.Time
	timed bool // applied and timed, or not to be timed
}

// observeApplied times the content of status from its write to every
// ready replica running it; before is the content hash the status showed
// until now. Only what this controller wrote is timed: content seen first
// in the status, written by an earlier controller, is not.
func (r *reconciler) observeApplied(key types.NamespacedName, before string, status v1alpha1.PrometheusServerStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.written[key]
	switch {
	case status.ContentHash != before:
		w = written{hash: status.ContentHash, at: time.Now()}
	case !ok || w.hash != status.ContentHash:
		w = written{hash: status.ContentHash, timed: true}
	}
	if !w.timed && meta.IsStatusConditionTrue(status.Conditions, conditionConfigApplied) {
		r.metrics.applySeconds.Observe(time.Since(w.at).Seconds())
		w.timed = true
	}
	r.written[key] = w
}

// conditionConfigApplied is the condition of what the replicas run
// (sidecar.Applied).
const conditionConfigApplied = sidecar.ConditionConfigApplied
