package takeover

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Stored reads objects as the API server stores them, once per
// generation, for the fields their Go type does not know (those of a
// newer prometheus-operator's CRD, which the typed cache drops). The zero
// value reads nothing.
type Stored struct {
	// Reader reads from the API server, unstructured (a manager's API
	// reader); Client tells an object's kind.
	Reader client.Reader
	Client client.Client

	mu   sync.Mutex
	read map[types.NamespacedName]readAt
}

// readAt is what was read of an object at one generation.
type readAt struct {
	uid        types.UID
	generation int64
	unknown    []string
}

// Unknown returns the reasons, one per field (UnknownFields), that the
// fields obj sets and its Go type does not know keep it from being used;
// into is a new object of obj's type, which the stored one is decoded
// into.
func (s *Stored) Unknown(ctx context.Context, obj, into client.Object) ([]string, error) {
	if s.Reader == nil {
		return nil, nil
	}
	key := client.ObjectKeyFromObject(obj)
	s.mu.Lock()
	last, ok := s.read[key]
	s.mu.Unlock()
	if ok && last.uid == obj.GetUID() && last.generation == obj.GetGeneration() {
		return last.unknown, nil
	}
	gvk, err := s.Client.GroupVersionKindFor(obj)
	if err != nil {
		return nil, fmt.Errorf("read %s as stored: %w", key, err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := s.Reader.Get(ctx, key, u); err != nil {
		return nil, fmt.Errorf("read %s %s as stored: %w", gvk.Kind, key, err)
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("read %s %s as stored: %w", gvk.Kind, key, err)
	}
	d, err := Decode(data, into)
	if err != nil {
		return nil, fmt.Errorf("read %s %s as stored: %w", gvk.Kind, key, err)
	}
	unknown := UnknownFields(d)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.read == nil {
		s.read = map[types.NamespacedName]readAt{}
	}
	// What was read is of the generation it has, which a newer cached
	// object compares with.
	s.read[key] = readAt{uid: u.GetUID(), generation: u.GetGeneration(), unknown: unknown}
	return unknown, nil
}

// Forget drops what was read of key, an object gone.
func (s *Stored) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.read, key)
}

// unknownFields are the reasons, one per field, that the fields obj sets
// and its Go type does not know keep it from being taken over (Stored).
func (l *Lifecycle[O, S, V]) unknownFields(ctx context.Context, obj O) ([]string, error) {
	return l.stored.Unknown(ctx, obj, l.variant.New())
}
