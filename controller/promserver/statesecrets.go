package promserver

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/sidecar"
)

// ReloaderStateDir is where, on a persistent data volume, the reloaders
// keep the state Prometheus last accepted (config-reloader's --state-dir,
// sidecar.StateSecrets says why): the TSDB ignores a directory that is
// not a block.
const ReloaderStateDir = storageMountPath + "/.podreload-reloader"

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

// statePods are the pods of server whose reloaders keep their state in
// Secrets: every shard's, or none.
func statePods(server Target) []string {
	if !stateInSecrets(server) {
		return nil
	}
	return podNames(server)
}

// renderStateSecrets renders the state Secrets of server's pods, empty
// (sidecar.StateSecrets). Owner references are not set.
func renderStateSecrets(server Target) []*corev1.Secret {
	return sidecar.StateSecrets(server, map[string]string{kube.LabelName: App, LabelInstance: server.Name}, statePods(server))
}

// createStateSecrets creates those of secrets that server (own) does not
// control yet (sidecar.CreateStateSecrets).
func (r *Reconciler) createStateSecrets(ctx context.Context, server Target, own kube.Owner, secrets []*corev1.Secret) error {
	return sidecar.CreateStateSecrets(ctx, r.metadata, server, secrets, func(s *corev1.Secret) error {
		// Created, or adopted with its data left as it is.
		return kube.Write(ctx, r.Writer, own, s, func(_, _ *corev1.Secret) bool { return false })
	})
}

// RetireStateSecrets deletes the state Secrets server controls that
// secrets does not hold (sidecar.RetireStateSecrets).
func (r *Reconciler) RetireStateSecrets(ctx context.Context, server Target, secrets []*corev1.Secret) error {
	return sidecar.RetireStateSecrets(ctx, r.metadata, server, secrets, func(s *corev1.Secret) error {
		if err := r.Writer.Delete(ctx, "Secret", s); err != nil {
			return err
		}
		r.Logger.Info("deleted the reloader state Secret of a pod no longer wanted", "server", client.ObjectKeyFromObject(server), "secret", s.Name)
		return nil
	})
}
