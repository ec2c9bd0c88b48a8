package takeover

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readAt is the spec of an object read as the API server stores it, at
// one generation: the fields its Go type does not know (UnknownFields).
type readAt struct {
	uid        types.UID
	generation int64
	unknown    []string
}

// unknownFields are the reasons, one per field, that the fields obj sets
// and its Go type does not know (those of a newer prometheus-operator's
// CRD, which the typed cache drops) keep it from being taken over. The
// object is read as the API server stores it (cfg.APIReader,
// unstructured) once per generation: a field of the spec changes it.
func (l *Lifecycle[O, S, V]) unknownFields(ctx context.Context, obj O) ([]string, error) {
	if l.cfg.APIReader == nil {
		return nil, nil
	}
	key := client.ObjectKeyFromObject(obj)
	l.mu.Lock()
	last, ok := l.read[key]
	l.mu.Unlock()
	if ok && last.uid == obj.GetUID() && last.generation == obj.GetGeneration() {
		return last.unknown, nil
	}
	gvk, err := l.cfg.Client.GroupVersionKindFor(obj)
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", l.cfg.Kind, key, err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := l.cfg.APIReader.Get(ctx, key, u); err != nil {
		return nil, fmt.Errorf("read %s %s as stored: %w", l.cfg.Kind, key, err)
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("read %s %s as stored: %w", l.cfg.Kind, key, err)
	}
	d, err := Decode(data, l.variant.New())
	if err != nil {
		return nil, fmt.Errorf("read %s %s as stored: %w", l.cfg.Kind, key, err)
	}
	unknown := UnknownFields(d)
	l.mu.Lock()
	// What was read is of the generation it has, which a newer cached
	// object compares with.
	l.read[key] = readAt{uid: u.GetUID(), generation: u.GetGeneration(), unknown: unknown}
	l.mu.Unlock()
	return unknown, nil
}
