package sidecar

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// The config-reloaders keep the last state the server accepted, and the
// content it rejected after it, so that no restart starts the server on
// content it rejected (issue 31). On a persistent data volume, the kind
// gives them a directory of it (--state-dir). Without one, its storage is
// an emptyDir that goes with the pod: the reloaders mirror their state
// dir in a Secret per pod (--state-secret, StateSecretArg), which a new
// pod's init container reads. The controller creates those Secrets empty
// (CreateStateSecrets), as a Role cannot grant create by name, and never
// writes them after (their data is the reloaders'), but to delete those
// no longer wanted (RetireStateSecrets).
const (
	// LabelState marks the state Secrets of an object's pods with the
	// object's name.
	LabelState = "podreload.dev/reloader-state"
	// stateSecretSuffix ends the name of a pod's state Secret.
	stateSecretSuffix = "-reloader-state"
	// StateSecretArg is config-reloader's --state-secret, the pod's own.
	StateSecretArg = "--state-secret=$(POD_NAMESPACE)/$(POD_NAME)" + stateSecretSuffix
)

// StateSecretNames are the names of the state Secrets of pods.
func StateSecretNames(pods []string) []string {
	names := make([]string, len(pods))
	for i, pod := range pods {
		names[i] = pod + stateSecretSuffix
	}
	return names
}

// StateSecrets renders the state Secrets of pods, the pods of owner,
// empty, in owner's namespace, labelled labels and LabelState (owner's
// name); nil without pods. Owner references are not set.
func StateSecrets(owner metav1.Object, labels map[string]string, pods []string) []*corev1.Secret {
	var secrets []*corev1.Secret
	for _, name := range StateSecretNames(pods) {
		l := maps.Clone(labels)
		if l == nil {
			l = map[string]string{}
		}
		l[LabelState] = owner.GetName()
		secrets = append(secrets, &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: owner.GetNamespace(), Labels: l},
			Type:       corev1.SecretTypeOpaque,
		})
	}
	return secrets
}

// CreateStateSecrets creates, with create (which makes owner their
// controller, and adopts a Secret that exists with its data as it is),
// those of secrets, owner's state Secrets, that owner does not control
// yet; it leaves the others, whose data the reloaders write, as they are.
// It reads the cached metadata of Secrets with metadata, and nothing
// without secrets.
func CreateStateSecrets(ctx context.Context, metadata client.Reader, owner metav1.Object, secrets []*corev1.Secret, create func(*corev1.Secret) error) error {
	if len(secrets) == 0 {
		return nil
	}
	live, err := listStateSecrets(ctx, metadata, owner)
	if err != nil {
		return err
	}
	for _, s := range secrets {
		if slices.ContainsFunc(live, func(m metav1.PartialObjectMetadata) bool {
			return m.Name == s.Name && metav1.IsControlledBy(&m, owner)
		}) {
			continue
		}
		if err := create(s); err != nil {
			return err
		}
	}
	return nil
}

// RetireStateSecrets deletes, with del, the state Secrets owner controls
// that secrets does not hold (those of pods scaled down, or all when the
// storage became a claim or the object is handed back): an old state
// must not reach a pod of the same name later. del gets the Secret's
// namespace, name and UID.
func RetireStateSecrets(ctx context.Context, metadata client.Reader, owner metav1.Object, secrets []*corev1.Secret, del func(*corev1.Secret) error) error {
	live, err := listStateSecrets(ctx, metadata, owner)
	if err != nil {
		return err
	}
	for i := range live {
		m := &live[i]
		if !metav1.IsControlledBy(m, owner) || m.DeletionTimestamp != nil ||
			slices.ContainsFunc(secrets, func(s *corev1.Secret) bool { return s.Name == m.Name }) {
			continue
		}
		if err := del(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name, UID: m.UID}}); err != nil {
			return err
		}
	}
	return nil
}

// listStateSecrets lists the metadata of the state Secrets of owner.
func listStateSecrets(ctx context.Context, metadata client.Reader, owner metav1.Object) ([]metav1.PartialObjectMetadata, error) {
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := metadata.List(ctx, &list, client.InNamespace(owner.GetNamespace()), client.MatchingLabels{LabelState: owner.GetName()}); err != nil {
		return nil, fmt.Errorf("list reloader state Secrets: %w", err)
	}
	return list.Items, nil
}

// NotStateWrites leaves out the updates of state Secrets: the reloaders
// write them, which changes nothing the controller renders. Their
// creation and deletion come through.
func NotStateWrites() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		_, ok := e.ObjectNew.GetLabels()[LabelState]
		return !ok
	}}
}
