package sidecar

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

// ApplyTimes times the content the controller writes for each object,
// from its write to every ready replica running it (ConfigApplied True),
// and keeps the content hash each object's status last showed written.
// Only what this controller wrote is timed: content seen first in a
// status, written by an earlier controller, is not. It is safe for
// concurrent use.
type ApplyTimes struct {
	seconds prometheus.Observer
	now     func() time.Time

	mu      sync.Mutex
	written map[types.NamespacedName]written
}

// written is content the controller wrote, for the time every replica
// takes to apply it.
type written struct {
	hash  string
	at    time.Time
	timed bool // applied and timed, or not to be timed
}

// NewApplyTimes returns ApplyTimes that observe the seconds into
// seconds, on the clock now.
func NewApplyTimes(seconds prometheus.Observer, now func() time.Time) *ApplyTimes {
	return &ApplyTimes{seconds: seconds, now: now, written: map[types.NamespacedName]written{}}
}

// Written is the content hash the status of key last showed written
// (Observe), or "".
func (a *ApplyTimes) Written(key types.NamespacedName) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.written[key].hash
}

// Observe records hash, the content the status of key shows written,
// and whether every ready replica runs it (applied); before is the
// content hash the status showed until now. The first Observe that
// finds applied content written since before observes the time since.
func (a *ApplyTimes) Observe(key types.NamespacedName, before, hash string, applied bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w, ok := a.written[key]
	switch {
	case hash != before:
		w = written{hash: hash, at: a.now()}
	case !ok || w.hash != hash:
		w = written{hash: hash, timed: true}
	}
	if !w.timed && applied {
		a.seconds.Observe(a.now().Sub(w.at).Seconds())
		w.timed = true
	}
	a.written[key] = w
}

// Forget drops what is kept about key, an object deleted.
func (a *ApplyTimes) Forget(key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.written, key)
}
