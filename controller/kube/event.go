package kube

import (
	"sync"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// MaxEventNote is the longest note of an events.k8s.io/v1 Event; the
// messages of conditions are cut at the same length.
const MaxEventNote = 1024

// Truncate shortens s to at most n bytes, marking the cut, on a rune
// boundary.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// Warn emits, with rec, a Warning Event of a reconcile about regarding
// (and related, when not nil), for reason, its note cut at MaxEventNote.
func Warn(rec recorder.EventRecorder, regarding, related runtime.Object, reason, note string) {
	rec.Eventf(regarding, related, corev1.EventTypeWarning, reason, "Reconcile", "%s", Truncate(note, MaxEventNote))
}

// Told keeps what was last told about each object (the warnings of its
// last reconcile), so that what a reconcile finds again is told once. The
// zero value is ready; it is safe for concurrent use.
type Told[T comparable] struct {
	mu   sync.Mutex
	told map[types.NamespacedName]map[T]struct{}
}

// New returns those of now that were not told about key last time, and
// keeps now as what was.
func (t *Told[T]) New(key types.NamespacedName, now []T) []T {
	keep := make(map[T]struct{}, len(now))
	for _, x := range now {
		keep[x] = struct{}{}
	}
	t.mu.Lock()
	old := t.told[key]
	if t.told == nil {
		t.told = map[types.NamespacedName]map[T]struct{}{}
	}
	t.told[key] = keep
	t.mu.Unlock()
	var out []T
	for _, x := range now {
		if _, ok := old[x]; !ok {
			out = append(out, x)
		}
	}
	return out
}

// Forget drops what was told about key, an object deleted.
func (t *Told[T]) Forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.told, key)
}
