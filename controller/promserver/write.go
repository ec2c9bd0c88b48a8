package promserver

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/configsecret"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/rulefiles"
	"github.com/podreload/podreload/controller/store"
	"github.com/podreload/podreload/controller/takeover"
)

// write makes the live objects of server match objs, with own as their
// controller, and returns the live
// StatefulSet (nil while there is none). Without a config Secret in objs,
// the last one written stays; with one, its part Secrets are written
// before it, and those it no longer names deleted after it. No rule file disappears from the pods
// between two states: rule shards are created or updated before the extra
// ones are deleted, a file moving between shards is written where it goes
// before it is removed from where it was (rulefiles.Writes: the shards of one
// phase are written at once, kube.WriteAll), and the configuration, whose rule_files name the
// shards, is written before them, or after the deletions when shards go.
// The Role and RoleBinding of the reloaders are written before the
// StatefulSets, so that their pods find them; the StatefulSets of shards
// no longer wanted are deleted last, once the configuration with the new
// shard count is written, and the state Secrets of pods no longer wanted
// emptied after them, and an agent's DaemonSet of the DaemonSet mode. An
// agent in DaemonSet mode gets its DaemonSet instead of the Service and
// StatefulSets (writeDaemonSet). It returns the live StatefulSets, by
// shard, but for those being created again: a *kube.RecreatingError says
// which.
func (r *Reconciler) write(ctx context.Context, server Target, own kube.Owner, objs *Objects) ([]*appsv1.StatefulSet, error) {
	liveRules, extra, err := r.liveShards(ctx, server, objs.RuleShards)
	if err != nil {
		return nil, err
	}
	if err := r.writeAccess(ctx, server, own, objs); err != nil {
		return nil, err
	}
	writeConfig := func() error {
		if objs.ConfigSecret == nil {
			return nil
		}
		// The parts first, in any order: the config Secret names them,
		// and the reloaders wait for every part it names.
		if err := kube.WriteAll(objs.ConfigParts, func(s *corev1.Secret) error {
			return kube.Write(ctx, r.Writer, own, s, kube.SyncSecret)
		}); err != nil {
			return err
		}
		if err := kube.Write(ctx, r.Writer, own, objs.ConfigSecret, kube.SyncSecret); err != nil {
			return err
		}
		return r.deleteExtraParts(ctx, server, objs.ConfigParts)
	}
	if len(extra) == 0 {
		if err := writeConfig(); err != nil {
			return nil, err
		}
	}
	if err := r.writeRuleShards(ctx, own, liveRules, objs.RuleShards); err != nil {
		return nil, err
	}
	for _, cm := range extra {
		if err := r.Writer.Delete(ctx, "ConfigMap", cm); err != nil {
			return nil, err
		}
		r.Logger.Info("deleted rule file ConfigMap", "server", client.ObjectKeyFromObject(server), "configmap", cm.Name)
	}
	if len(extra) > 0 {
		if err := writeConfig(); err != nil {
			return nil, err
		}
	}
	// The pods mount the web configuration: written before them. A server
	// that no longer has one keeps the Secret, which goes with it.
	if objs.WebConfigSecret != nil {
		if err := kube.Write(ctx, r.Writer, own, objs.WebConfigSecret, kube.SyncSecret); err != nil {
			return nil, err
		}
	}
	if s := objs.ThanosSecret; s != nil {
		if err := kube.Write(ctx, r.Writer, own, s, kube.SyncSecret); err != nil {
			return nil, err
		}
	}
	if objs.DaemonSet != nil {
		// No Service, no StatefulSet: the DaemonSet, then the
		// StatefulSet mode's objects deleted (layout_daemonset.go).
		return nil, r.writeDaemonSet(ctx, server, own, objs.DaemonSet)
	}
	if err := r.writeGoverningService(ctx, server, own, objs.Service); err != nil {
		return nil, err
	}
	var (
		live       []*appsv1.StatefulSet
		recreating error
	)
	for _, desired := range objs.StatefulSets {
		if server.Layout.Operator() {
			if err := r.keepImmutable(ctx, own, desired); err != nil {
				return nil, err
			}
		}
		sts, err := r.Writer.ApplyStatefulSet(ctx, own, desired)
		var rec *kube.RecreatingError
		switch {
		case errors.As(err, &rec):
			// The other shards are written all the same.
			recreating = cmp.Or(recreating, err)
		case err != nil:
			return nil, err
		default:
			live = append(live, sts)
		}
	}
	return live, errors.Join(recreating, r.deleteExtraShards(ctx, server, objs.StatefulSets), r.RetireStateSecrets(ctx, server, objs.StateSecrets),
		r.deleteDaemonSet(ctx, server))
}

// writeGoverningService writes svc, the governing Service of server's
// StatefulSets, or, when server names one of the user's (svc nil), checks
// that it is there and selects the pods (takeover.CheckGoverningService).
func (r *Reconciler) writeGoverningService(ctx context.Context, server Target, own kube.Owner, svc *corev1.Service) error {
	if svc == nil && server.Spec.ServiceName != nil {
		return takeover.CheckGoverningService(ctx, r.reader, server.Namespace, *server.Spec.ServiceName, operatorSelectorLabels(server))
	}
	if svc == nil {
		return nil
	}
	if server.Layout.Operator() {
		// prometheus-operated: one per namespace, every Prometheus its owner.
		return kube.WriteShared(ctx, r.Writer, own, svc, kube.SyncService)
	}
	return kube.Write(ctx, r.Writer, own, svc, kube.SyncService)
}

// writeAccess writes the Role and RoleBinding of the reloaders first:
// with the API source, the Role names the part Secrets the reloaders are
// about to read. Then the pods' state Secrets, which the Role names,
// before the pods, which read them.
func (r *Reconciler) writeAccess(ctx context.Context, server Target, own kube.Owner, objs *Objects) error {
	if err := kube.Write(ctx, r.Writer, own, objs.Role, kube.SyncRole); err != nil {
		return err
	}
	if err := kube.Write(ctx, r.Writer, own, objs.RoleBinding, kube.SyncRoleBinding); err != nil {
		return err
	}
	return r.createStateSecrets(ctx, server, own, objs.StateSecrets)
}

// writeRuleShards writes the rule ConfigMaps shards, given the live ones,
// in the phases of rulefiles.Writes, the ConfigMaps of a phase at once.
func (r *Reconciler) writeRuleShards(ctx context.Context, own kube.Owner, live, shards []*corev1.ConfigMap) error {
	for _, phase := range rulefiles.Writes(live, shards) {
		if err := kube.WriteAll(phase, func(cm *corev1.ConfigMap) error {
			return kube.Write(ctx, r.Writer, own, cm, kube.SyncConfigMap)
		}); err != nil {
			return err
		}
	}
	return nil
}

// deleteExtraParts deletes the part Secrets of the configuration that
// server controls and parts does not hold: once the config Secret no
// longer names them.
func (r *Reconciler) deleteExtraParts(ctx context.Context, server Target, parts []*corev1.Secret) error {
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := r.metadata.List(ctx, &list, client.InNamespace(server.Namespace), client.MatchingLabels{LabelConfig: server.Name}); err != nil {
		return fmt.Errorf("list config part Secrets: %w", err)
	}
	for i := range list.Items {
		m := &list.Items[i]
		if !metav1.IsControlledBy(m, server) || m.DeletionTimestamp != nil || !configsecret.IsPart(ConfigSecretOf(server), m.Name) ||
			slices.ContainsFunc(parts, func(s *corev1.Secret) bool { return s.Name == m.Name }) {
			continue
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name, UID: m.UID}}
		if err := r.Writer.Delete(ctx, "Secret", s); err != nil {
			return err
		}
		r.Logger.Info("deleted a config part Secret no longer needed", "server", client.ObjectKeyFromObject(server), "secret", m.Name)
	}
	return nil
}

// deleteExtraShards deletes the StatefulSets server controls that are not
// among sets: those of the shards it no longer has. Their pods go with
// them; their volume claims stay, as a StatefulSet's always do. When
// server retains them (takeover.RetainShards), each is kept until its deadline,
// which it is annotated with first, as prometheus-operator does; the
// server is reconciled again at the nearest one (Retained).
func (r *Reconciler) deleteExtraShards(ctx context.Context, server Target, sets []*appsv1.StatefulSet) error {
	var list appsv1.StatefulSetList
	if err := r.Client.List(ctx, &list, client.InNamespace(server.Namespace), client.MatchingLabels(SelectorLabels(server))); err != nil {
		return fmt.Errorf("list StatefulSets: %w", err)
	}
	key := client.ObjectKeyFromObject(server)
	r.retained.Forget(key)
	for i := range list.Items {
		sts := &list.Items[i]
		if !metav1.IsControlledBy(sts, server) || sts.DeletionTimestamp != nil ||
			slices.ContainsFunc(sets, func(s *appsv1.StatefulSet) bool { return s.Name == sts.Name }) {
			continue
		}
		if takeover.RetainShards(server.ShardRetention) {
			keep, err := r.retainShard(ctx, server, sts)
			if err != nil {
				return err
			}
			if keep {
				continue
			}
		}
		if err := r.Writer.Delete(ctx, "StatefulSet", sts); err != nil {
			return err
		}
		r.Logger.Info("deleted the StatefulSet of a shard no longer wanted", "server", key, "statefulset", sts.Name)
	}
	return nil
}

// retainShard annotates sts, the StatefulSet of a shard server scaled
// away, with its deletion deadline when it has none, and tells whether it
// is kept: until the deadline, which the server is then reconciled at.
func (r *Reconciler) retainShard(ctx context.Context, server Target, sts *appsv1.StatefulSet) (keep bool, err error) {
	deadline, set, err := takeover.ShardDeadline(sts)
	if err != nil {
		// Kept, as prometheus-operator keeps it, until the annotation is
		// fixed or removed.
		r.Logger.Warn("shard retention: the StatefulSet is kept", "server", client.ObjectKeyFromObject(server), "err", err)
		return true, nil
	}
	now := r.now()
	if !set {
		grace, err := takeover.RetentionGrace(server.ShardRetention, server.Spec.Retention)
		if err != nil {
			return true, err
		}
		if grace > 0 {
			deadline = now.Add(grace).UTC().Truncate(time.Second)
		}
		if err := r.Writer.Annotate(ctx, "StatefulSet", sts, takeover.AnnotationDeletionDeadline, deadline.Format(time.RFC3339)); err != nil {
			return true, err
		}
		r.Logger.Info("retained the StatefulSet of a shard scaled away", "server", client.ObjectKeyFromObject(server), "statefulset", sts.Name, "until", deadline)
	}
	if deadline.IsZero() {
		return true, nil
	}
	if now.Before(deadline) {
		r.retained.At(client.ObjectKeyFromObject(server), deadline)
		return true, nil
	}
	return false, nil
}

// liveShards returns the rule file ConfigMaps server controls, and those
// of them that are not among shards.
func (r *Reconciler) liveShards(ctx context.Context, server Target, shards []*corev1.ConfigMap) (live, extra []*corev1.ConfigMap, err error) {
	var cms corev1.ConfigMapList
	if err := r.Client.List(ctx, &cms, client.InNamespace(server.Namespace), client.MatchingLabels(ruleFilesLabels(server))); err != nil {
		return nil, nil, fmt.Errorf("list rule file ConfigMaps: %w", err)
	}
	for i := range cms.Items {
		cm := &cms.Items[i]
		if !metav1.IsControlledBy(cm, server) {
			continue
		}
		live = append(live, cm)
		if !slices.ContainsFunc(shards, func(s *corev1.ConfigMap) bool { return s.Name == cm.Name }) {
			extra = append(extra, cm)
		}
	}
	return live, extra, nil
}

// keepImmutable copies into desired, the StatefulSet of a Prometheus taken
// over, the fields of the live one that cannot change
// (takeover.KeepImmutable): an Event tells when its claim templates are
// kept, not spec.storage's.
func (r *Reconciler) keepImmutable(ctx context.Context, own kube.Owner, desired *appsv1.StatefulSet) error {
	var live appsv1.StatefulSet
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), &live)
	if apierrors.IsNotFound(err) {
		// Not labelled by the controller yet: read from the API server.
		err = r.reader.Get(ctx, client.ObjectKeyFromObject(desired), &live)
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get StatefulSet %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	if takeover.KeepImmutable(&live, desired) {
		msg := fmt.Sprintf("spec.storage differs from the claim templates of StatefulSet %s/%s, which cannot change: its claims are kept, and so are the PVCs and the data", live.Namespace, live.Name)
		r.Metrics.Errors.Inc()
		r.Logger.Warn("claim templates kept", own.Key, client.ObjectKeyFromObject(own.Object), "err", msg)
		r.event(own.Object, nil, "ClaimTemplatesKept", msg)
	}
	return nil
}

// UserConfigured tells whether server's configuration Secret is the
// user's: a Prometheus object taken over whose four monitor selectors are
// all unset (the Prometheus kind's conversion sets Target.UserConfig), whose
// Secret prometheus-operator leaves to the user (its
// unmanagedPrometheusConfiguration). It is then read, never written.
func UserConfigured(server Target) bool {
	return server.UserConfig && server.Layout.Operator() && !server.Layout.Agent()
}

// userConfig is the configuration objects of a server whose config Secret
// is the user's (UserConfigured): no ConfigSecret, and the hashes of the
// user's one, read through lookup, which the config-reloaders report once
// Prometheus runs it. A missing Secret or key is an error naming it.
func userConfig(server Target, lookup *store.Lookup, shards []*corev1.ConfigMap) (*Objects, error) {
	gz, err := lookup.Secret(server.Namespace, corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: ConfigSecretOf(server)}, Key: ConfigSecretKey,
	})
	if err != nil {
		return nil, fmt.Errorf("read the user's configuration Secret (all four monitor selectors unset): %w", err)
	}
	sum := sha256.Sum256(gz)
	return &Objects{ConfigHash: hex.EncodeToString(sum[:]), ContentHash: ContentHash(gz, shards)}, nil
}
