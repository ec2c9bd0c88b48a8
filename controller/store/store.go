// Package store is where the kinds read the Secrets and ConfigMaps their
// objects reference: typed references (Ref), one resolver (Lookup) that
// reads a key and records what a render looked up, found or not, the read
// of those objects from the API server (Read), and the references of each
// owner's last render (Tracker), which map a change to one of them back
// to its owners. It knows no kind.
package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kind is the kind of a referenced object.
type Kind uint8

const (
	// Secret is a Secret.
	Secret Kind = iota
	// ConfigMap is a ConfigMap.
	ConfigMap
)

// Ref names a Secret or a ConfigMap an object references.
type Ref struct {
	// Kind is Secret or ConfigMap.
	Kind Kind
	// Namespace of the object.
	Namespace string
	// Name of the object.
	Name string
}

// ID is "namespace/name": the key of the object in Objects' maps.
func (r Ref) ID() string { return r.Namespace + "/" + r.Name }

// String is "Secret namespace/name" or "ConfigMap namespace/name".
func (r Ref) String() string {
	if r.Kind == ConfigMap {
		return "ConfigMap " + r.ID()
	}
	return "Secret " + r.ID()
}

func compare(a, b Ref) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// Union returns the references of a and b, sorted, each once.
func Union(a, b []Ref) []Ref {
	u := slices.Concat(a, b)
	slices.SortFunc(u, compare)
	return slices.Compact(u)
}

// Subset reports whether every reference of a is in the sorted b.
func Subset(a, b []Ref) bool {
	for _, r := range a {
		if !contains(b, r) {
			return false
		}
	}
	return true
}

func contains(sorted []Ref, r Ref) bool {
	_, ok := slices.BinarySearchFunc(sorted, r, compare)
	return ok
}

// Objects are the Secrets and ConfigMaps a render reads, by "namespace/name".
type Objects struct {
	// Secrets by "namespace/name".
	Secrets map[string]*corev1.Secret
	// ConfigMaps by "namespace/name".
	ConfigMaps map[string]*corev1.ConfigMap
}

// Read reads the objects refs names from the API server through reader;
// the missing ones are left out. Secrets are never cached by the
// controller, and the cache holds only the controller's own ConfigMaps.
func Read(ctx context.Context, reader client.Reader, refs []Ref) (Objects, error) {
	objs := Objects{Secrets: make(map[string]*corev1.Secret, len(refs)), ConfigMaps: map[string]*corev1.ConfigMap{}}
	for _, ref := range refs {
		key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
		if ref.Kind == ConfigMap {
			var cm corev1.ConfigMap
			err := reader.Get(ctx, key, &cm)
			switch {
			case err == nil:
				objs.ConfigMaps[ref.ID()] = &cm
			case !apierrors.IsNotFound(err):
				return Objects{}, fmt.Errorf("get ConfigMap %s: %w", ref.ID(), err)
			}
			continue
		}
		var s corev1.Secret
		err := reader.Get(ctx, key, &s)
		switch {
		case err == nil:
			objs.Secrets[ref.ID()] = &s
		case !apierrors.IsNotFound(err):
			return Objects{}, fmt.Errorf("get Secret %s: %w", ref.ID(), err)
		}
	}
	return objs, nil
}

// Lookup resolves the keys of Secrets and ConfigMaps in Objects, and
// records each object looked up, found or not: a change to any of them
// can change what was rendered.
type Lookup struct {
	objs Objects
	// secrets and configMaps are the objects looked up, by
	// "namespace/name": a render looks up thousands.
	secrets, configMaps map[string]struct{}
}

// NewLookup returns a Lookup in objs.
func NewLookup(objs Objects) *Lookup {
	return &Lookup{objs: objs, secrets: map[string]struct{}{}, configMaps: map[string]struct{}{}}
}

// Secret returns the value of the key sel names in the Secret sel names
// in namespace ns. Its errors name the Secret and the key.
func (l *Lookup) Secret(ns string, sel corev1.SecretKeySelector) ([]byte, error) {
	id := ns + "/" + sel.Name
	l.secrets[id] = struct{}{}
	s := l.objs.Secrets[id]
	if s == nil {
		return nil, fmt.Errorf("secret %q not found (looking for key %q)", id, sel.Key)
	}
	v, ok := s.Data[sel.Key]
	if !ok {
		return nil, fmt.Errorf("secret %q has no key %q", id, sel.Key)
	}
	return v, nil
}

// ConfigMap returns the value of the key sel names, in data or
// binaryData, in the ConfigMap sel names in namespace ns. Its errors name
// the ConfigMap and the key.
func (l *Lookup) ConfigMap(ns string, sel corev1.ConfigMapKeySelector) ([]byte, error) {
	id := ns + "/" + sel.Name
	l.configMaps[id] = struct{}{}
	cm := l.objs.ConfigMaps[id]
	if cm == nil {
		return nil, fmt.Errorf("configmap %q not found (looking for key %q)", id, sel.Key)
	}
	if v, ok := cm.Data[sel.Key]; ok {
		return []byte(v), nil
	}
	if v, ok := cm.BinaryData[sel.Key]; ok {
		return v, nil
	}
	return nil, fmt.Errorf("configmap %q has no key %q", id, sel.Key)
}

// Peek returns the Secret (the ConfigMap, with kind ConfigMap) ns/name
// without recording it, or nil: for what is used only when it is there
// and changes nothing when it is not.
func (l *Lookup) Peek(ref Ref) client.Object {
	if ref.Kind == ConfigMap {
		if cm := l.objs.ConfigMaps[ref.ID()]; cm != nil {
			return cm
		}
		return nil
	}
	if s := l.objs.Secrets[ref.ID()]; s != nil {
		return s
	}
	return nil
}

// Refs returns the objects looked up so far, sorted.
func (l *Lookup) Refs() []Ref {
	refs := make([]Ref, 0, len(l.secrets)+len(l.configMaps))
	for kind, ids := range map[Kind]map[string]struct{}{Secret: l.secrets, ConfigMap: l.configMaps} {
		for id := range ids {
			ns, name, _ := strings.Cut(id, "/")
			refs = append(refs, Ref{Kind: kind, Namespace: ns, Name: name})
		}
	}
	slices.SortFunc(refs, compare)
	return refs
}

// Tracker holds the references of each owner's last render.
type Tracker struct {
	mu   sync.Mutex
	refs map[types.NamespacedName][]Ref
}

// NewTracker returns an empty Tracker.
func NewTracker() *Tracker {
	return &Tracker{refs: map[types.NamespacedName][]Ref{}}
}

// Refs returns the references of owner's last render.
func (t *Tracker) Refs(owner types.NamespacedName) []Ref {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.refs[owner])
}

// Remember keeps refs, sorted, as owner's.
func (t *Tracker) Remember(owner types.NamespacedName, refs []Ref) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refs[owner] = refs
}

// Forget drops what is kept of owner.
func (t *Tracker) Forget(owner types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.refs, owner)
}

// Owners returns the owners whose last render referenced ref.
func (t *Tracker) Owners(ref Ref) []types.NamespacedName {
	t.mu.Lock()
	defer t.mu.Unlock()
	var owners []types.NamespacedName
	for owner, refs := range t.refs {
		if contains(refs, ref) {
			owners = append(owners, owner)
		}
	}
	return owners
}
