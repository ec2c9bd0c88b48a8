package promserver

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
	Hash  string
	at    time.Time
	timed bool // applied and timed, or not to be timed
}

// ObserveApplied times the content of status from its write to every
// ready replica running it; before is the content hash the status showed
// until now. Only what this controller wrote is timed: content seen first
// in the status, written by an earlier controller, is not.
func (r *Reconciler) ObserveApplied(key types.NamespacedName, before string, status v1alpha1.PrometheusServerStatus) {
	r.Mu.Lock()
	defer r.Mu.Unlock()
	w, ok := r.Written[key]
	switch {
	case status.ContentHash != before:
		w = written{Hash: status.ContentHash, at: time.Now()}
	case !ok || w.Hash != status.ContentHash:
		w = written{Hash: status.ContentHash, timed: true}
	}
	if !w.timed && meta.IsStatusConditionTrue(status.Conditions, ConditionConfigApplied) {
		r.Metrics.applySeconds.Observe(time.Since(w.at).Seconds())
		w.timed = true
	}
	r.Written[key] = w
}

// ConditionConfigApplied is the condition of what the replicas run
// (sidecar.Applied).
const ConditionConfigApplied = sidecar.ConditionConfigApplied
