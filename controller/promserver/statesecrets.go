package promserver

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/podreload/podreload/controller/kube"
)

// The config-reloaders keep the last state Prometheus accepted, and the
// content it rejected after it, so that no restart starts Prometheus on
// content it rejected (issue 31). On a claim, the state dir is on the data
// volume (reloaderStateDir). Without one, Prometheus' storage is an
// emptyDir that goes with the pod: the reloaders mirror their state dir
// in a Secret per pod (config-reloader's --state-secret), which a new
// pod's init container reads. The controller creates those Secrets empty,
// as a Role cannot grant create by name, and never writes them after
// (their data is the reloaders'), but to empty those no longer wanted.
const (
	// ReloaderStateDir is where, on a persistent data volume, the
	// reloaders keep the state Prometheus last accepted (config-reloader's
	// --state-dir): the TSDB ignores a directory that is not a block.
	ReloaderStateDir = storageMountPath + "/.podreload-reloader"
	// stateSecretSuffix ends the name of a pod's state Secret.
	stateSecretSuffix = "-reloader-state"
	// LabelReloaderState marks the state Secrets of a server with its
	// name.
	LabelReloaderState = "podreload.dev/reloader-state"
	// stateSecretArg is config-reloader's --state-secret, the pod's own.
	stateSecretArg = "--state-secret=$(POD_NAMESPACE)/$(POD_NAME)" + stateSecretSuffix
)

// stateInSecrets reports whether the reloaders of server keep their state
// in Secrets: its storage is not a claim, its pods are a StatefulSet's,
// and they have a token to write them with. Without a token (a server
// taken over with automountServiceAccountToken false) the state is on the
// data volume whatever it is: with an emptyDir, it outlives a restart of
// the containers, not the pod.
func stateInSecrets(server Target) bool {
	if server.Layout.DaemonSet() {
		return false // The state is on the emptyDir (layout_daemonset.go).
	}
	if server.Spec.NoServiceAccountToken {
		return false
	}
	_, _, claims := storageVolume(server.Spec.Storage)
	if server.Layout.Operator() {
		_, _, claims = operatorStorage(server)
	}
	return len(claims) == 0
}

// stateSecretNames are the names of the state Secrets of server's pods,
// every shard's; none when its storage is a claim.
func stateSecretNames(server Target) []string {
	if !stateInSecrets(server) {
		return nil
	}
	pods := podNames(server)
	names := make([]string, len(pods))
	for i, pod := range pods {
		names[i] = pod + stateSecretSuffix
	}
	return names
}

// renderStateSecrets renders the state Secrets of server's pods, empty.
// Owner references are not set.
func renderStateSecrets(server Target) []*corev1.Secret {
	var secrets []*corev1.Secret
	for _, name := range stateSecretNames(server) {
		secrets = append(secrets, &corev1.Secret{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: server.Namespace, Labels: map[string]string{
				kube.LabelName: App, LabelInstance: server.Name, LabelReloaderState: server.Name,
			}},
			Type: corev1.SecretTypeOpaque,
		})
	}
	return secrets
}

// createStateSecrets creates those of secrets that do not exist, server
// (own) their controller; it leaves the others, whose data the reloaders
// write, as they are. It reads the cached metadata, and an object only
// when the cache does not list it.
func (r *Reconciler) createStateSecrets(ctx context.Context, server Target, own kube.Owner, secrets []*corev1.Secret) error {
	if len(secrets) == 0 {
		return nil
	}
	live, err := r.stateSecrets(ctx, server)
	if err != nil {
		return err
	}
	for _, s := range secrets {
		if slices.ContainsFunc(live, func(m metav1.PartialObjectMetadata) bool {
			return m.Name == s.Name && metav1.IsControlledBy(&m, server)
		}) {
			continue
		}
		// Created, or adopted with its data left as it is.
		if err := kube.Write(ctx, r.Writer, own, s, func(_, _ *corev1.Secret) bool { return false }); err != nil {
			return err
		}
	}
	return nil
}

// RetireStateSecrets deletes the state Secrets server controls that
// secrets does not hold (those of pods scaled down, or all when the
// storage became a claim or a Prometheus is handed back): an old state
// must not reach a pod of the same name later.
func (r *Reconciler) RetireStateSecrets(ctx context.Context, server Target, secrets []*corev1.Secret) error {
	live, err := r.stateSecrets(ctx, server)
	if err != nil {
		return err
	}
	for i := range live {
		m := &live[i]
		if !metav1.IsControlledBy(m, server) || m.DeletionTimestamp != nil ||
			slices.ContainsFunc(secrets, func(s *corev1.Secret) bool { return s.Name == m.Name }) {
			continue
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name, UID: m.UID}}
		if err := r.Writer.Delete(ctx, "Secret", s); err != nil {
			return err
		}
		r.Logger.Info("deleted the reloader state Secret of a pod no longer wanted", "server", client.ObjectKeyFromObject(server), "secret", m.Name)
	}
	return nil
}

// stateSecrets lists the cached metadata of the state Secrets of server.
func (r *Reconciler) stateSecrets(ctx context.Context, server Target) ([]metav1.PartialObjectMetadata, error) {
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := r.metadata.List(ctx, &list, client.InNamespace(server.Namespace), client.MatchingLabels{LabelReloaderState: server.Name}); err != nil {
		return nil, fmt.Errorf("list reloader state Secrets: %w", err)
	}
	return list.Items, nil
}

// notStateWrites leaves out the updates of state Secrets: the reloaders
// write them, which changes nothing the controller renders. Their
// creation and deletion come through.
func notStateWrites() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		_, ok := e.ObjectNew.GetLabels()[LabelReloaderState]
		return !ok
	}}
}
