package rulefiles

import (
	"bytes"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// Written keeps the rule ConfigMaps last written for a version of a
// server (V tells the versions apart), which a render that holds the
// rules' changes back, in a burst of changes, writes again instead of
// those of the rules' changes. The zero value knows none; it is safe for
// concurrent use.
type Written[V comparable] struct {
	mu sync.Mutex
	// cms are the ConfigMaps last written, as rendered, for version; nil
	// when unknown.
	cms     []*corev1.ConfigMap
	version V
}

// Wrote records cms, the rule ConfigMaps written for version, as
// rendered (their metadata not set by the writes); nil when what was
// written is not known (a write failed).
func (w *Written[V]) Wrote(version V, cms []*corev1.ConfigMap) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cms, w.version = cms, version
}

// Hold returns the rule ConfigMaps to write for version instead of
// shards, those rendered from its rules: with hold, copies of those last
// written for version when w knows them; and whether they differ from
// shards, held back.
func (w *Written[V]) Hold(version V, shards []*corev1.ConfigMap, hold bool) (_ []*corev1.ConfigMap, held bool) {
	if !hold {
		return shards, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cms == nil || w.version != version {
		return shards, false
	}
	kept := Clone(w.cms)
	return kept, !sameFiles(shards, kept)
}

// Clone returns deep copies of cms, never nil.
func Clone(cms []*corev1.ConfigMap) []*corev1.ConfigMap {
	out := make([]*corev1.ConfigMap, len(cms))
	for i, cm := range cms {
		out[i] = cm.DeepCopy()
	}
	return out
}

// sameFiles reports whether a and b hold the same ConfigMaps, by name,
// with the same files.
func sameFiles(a, b []*corev1.ConfigMap) bool {
	return slices.EqualFunc(a, b, func(x, y *corev1.ConfigMap) bool {
		return x.Name == y.Name && maps.Equal(x.Data, y.Data) && maps.EqualFunc(x.BinaryData, y.BinaryData, bytes.Equal)
	})
}
