package sidecar

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// metadataLister lists items as the cached metadata of Secrets, those
// labelled with the LabelState the list selects, in its namespace.
type metadataLister struct {
	client.Reader
	items []metav1.PartialObjectMetadata
	lists int
}

func (l *metadataLister) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	l.lists++
	var o client.ListOptions
	o.ApplyOptions(opts)
	m, ok := list.(*metav1.PartialObjectMetadataList)
	if !ok {
		return errors.New("not a metadata list")
	}
	for _, it := range l.items {
		if it.Namespace == o.Namespace && o.LabelSelector.Matches(labels.Set(it.Labels)) {
			m.Items = append(m.Items, it)
		}
	}
	return nil
}

// stateSecret is the metadata of a state Secret named name, labelled for
// the object "main", controlled by the object of UID controller (none
// when empty).
func stateSecret(name string, controller types.UID) metav1.PartialObjectMetadata {
	m := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{LabelState: "main"}}}
	if controller != "" {
		m.OwnerReferences = []metav1.OwnerReference{{Name: "main", UID: controller, Controller: ptr.To(true)}}
	}
	return m
}

// TestStateSecrets: a state Secret per pod, named after it, labelled with
// the object's name; nil without pods.
func TestStateSecrets(t *testing.T) {
	owner := &metav1.ObjectMeta{Namespace: "ns", Name: "main"}
	l := map[string]string{"app": "x"}
	got := StateSecrets(owner, l, []string{"main-0", "main-1"})
	require.Len(t, got, 2)
	require.Equal(t, "main-1-reloader-state", got[1].Name)
	require.Equal(t, "ns", got[1].Namespace)
	require.Equal(t, map[string]string{"app": "x", LabelState: "main"}, got[1].Labels)
	require.Empty(t, got[1].Data)
	require.Equal(t, map[string]string{"app": "x"}, l, "labels left as they are")
	require.Nil(t, StateSecrets(owner, l, nil))
	require.Equal(t, "--state-secret=$(POD_NAMESPACE)/$(POD_NAME)-reloader-state", StateSecretArg, "what the pod's name gives is the Secret's")
}

// TestCreateStateSecrets: only the Secrets the object does not control
// are created (a Secret of another controller is adopted through create);
// no list without Secrets.
func TestCreateStateSecrets(t *testing.T) {
	owner := &metav1.ObjectMeta{Namespace: "ns", Name: "main", UID: "own"}
	l := &metadataLister{items: []metav1.PartialObjectMetadata{stateSecret("main-0-reloader-state", "own"), stateSecret("main-1-reloader-state", "other")}}
	var created []string
	create := func(s *corev1.Secret) error { created = append(created, s.Name); return nil }
	secrets := StateSecrets(owner, nil, []string{"main-0", "main-1", "main-2"})
	require.NoError(t, CreateStateSecrets(t.Context(), l, owner, secrets, create))
	require.Equal(t, []string{"main-1-reloader-state", "main-2-reloader-state"}, created)
	require.NoError(t, CreateStateSecrets(t.Context(), l, owner, nil, create))
	require.Equal(t, 1, l.lists)
	require.EqualError(t, CreateStateSecrets(t.Context(), l, owner, secrets, func(*corev1.Secret) error { return errors.New("create: denied") }), "create: denied")
}

// TestRetireStateSecrets: the Secrets the object controls that are no
// longer wanted are deleted, by UID; those of another controller, or
// being deleted, are left.
func TestRetireStateSecrets(t *testing.T) {
	owner := &metav1.ObjectMeta{Namespace: "ns", Name: "main", UID: "own"}
	going := stateSecret("main-3-reloader-state", "own")
	going.DeletionTimestamp = &metav1.Time{}
	l := &metadataLister{items: []metav1.PartialObjectMetadata{
		stateSecret("main-0-reloader-state", "own"), stateSecret("main-1-reloader-state", "own"),
		stateSecret("main-2-reloader-state", "other"), going, stateSecret("x-0-reloader-state", ""),
	}}
	var deleted []*corev1.Secret
	del := func(s *corev1.Secret) error { deleted = append(deleted, s); return nil }
	require.NoError(t, RetireStateSecrets(t.Context(), l, owner, StateSecrets(owner, nil, []string{"main-0"}), del))
	require.Len(t, deleted, 1)
	require.Equal(t, metav1.ObjectMeta{Namespace: "ns", Name: "main-1-reloader-state", UID: "uid-main-1-reloader-state"}, deleted[0].ObjectMeta)
	deleted = nil
	require.NoError(t, RetireStateSecrets(t.Context(), l, owner, nil, del))
	require.Len(t, deleted, 2, "all of them, handed back")
}

// TestNotStateWrites: the reloaders' updates of their state Secrets
// render nothing; other updates, and a state Secret's creation, do.
func TestNotStateWrites(t *testing.T) {
	p := NotStateWrites()
	state := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelState: "main"}}}
	other := &corev1.Secret{}
	require.False(t, p.Update(event.UpdateEvent{ObjectOld: state, ObjectNew: state}))
	require.True(t, p.Update(event.UpdateEvent{ObjectOld: other, ObjectNew: other}))
	require.True(t, p.Create(event.CreateEvent{Object: state}))
	require.True(t, p.Delete(event.DeleteEvent{Object: state}))
}
