package kube

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Writer writes the objects a kind renders, for an owner (any object:
// a PrometheusServer, a Prometheus...) that becomes their controller. It
// counts its writes; one Writer serves every kind.
type Writer struct {
	client client.Client
	reader client.Reader
	scheme *runtime.Scheme
	logger *slog.Logger

	writes, drift, conflicts *prometheus.CounterVec
	recreations              prometheus.Counter
}

// newWriter returns the Writer of m's clients; a nil logger discards
// the logs.
func newWriter(logger *slog.Logger, reg prometheus.Registerer, c client.Client, reader client.Reader, scheme *runtime.Scheme) *Writer {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f := promauto.With(reg)
	return &Writer{
		client: c, reader: reader, scheme: scheme, logger: logger,
		recreations: f.NewCounter(prometheus.CounterOpts{
			Name: "podreload_controller_statefulset_recreations_total",
			Help: "StatefulSets deleted to be created again because a change touched an immutable field.",
		}),
		writes: f.NewCounterVec(prometheus.CounterOpts{
			Name: "podreload_controller_writes_total",
			Help: "Write calls to the API server, by kind of object and verb.",
		}, []string{"kind", "verb"}),
		conflicts: f.NewCounterVec(prometheus.CounterOpts{
			Name: "podreload_controller_write_conflicts_total",
			Help: "Write calls to the API server answered 409 Conflict (the cache was behind the object), then retried on the object read again, by kind.",
		}, []string{"kind"}),
		drift: f.NewCounterVec(prometheus.CounterOpts{
			Name: "podreload_controller_drift_corrected_total",
			Help: "Objects written again, their inputs unchanged, because someone else changed what the controller sets in them, by kind.",
		}, []string{"kind"}),
	}
}

// Count counts a write call to the API server made without the Writer
// (a status patch, say).
func (w *Writer) Count(kind, verb string) { w.writes.WithLabelValues(kind, verb).Inc() }

// Owner names the owner of the objects written in the logs: the key its
// kind logs it under ("server") and the owner.
type Owner struct {
	// Key is the log key of the owner.
	Key string
	// Object is the owner.
	Object client.Object
	// Adopt are the field managers whose fields of a StatefulSet the
	// controller takes over (ApplyStatefulSet): prometheus-operator's, for
	// the objects taken over from it, so that the fields it set and the
	// controller does not are removed by the apply.
	Adopt []string
	// Orphan deletes a StatefulSet whose immutable fields must change
	// with orphan propagation: its pods stay, and the StatefulSet created
	// again adopts them (prometheus-operator's pods, on a takeover).
	Orphan bool
}

// Delete deletes obj, of kind, if it still has its UID: a deletion that
// finds it gone is no error. The caller logs why it deleted it.
func (w *Writer) Delete(ctx context.Context, kind string, obj client.Object) error {
	w.Count(kind, "delete")
	uid := obj.GetUID()
	if err := w.client.Delete(ctx, obj, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// Annotate sets the annotation key of obj, of kind, to value, with a merge
// patch that keeps everything else, as the controller (field manager
// Name).
func (w *Writer) Annotate(ctx context.Context, kind string, obj client.Object, key, value string) error {
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[key] = value
	obj.SetAnnotations(annotations)
	w.Count(kind, "patch")
	if err := w.client.Patch(ctx, obj, patch, client.FieldOwner(Name)); err != nil {
		return fmt.Errorf("annotate %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// Write creates desired, or updates the live object when it lacks the
// labels of desired, owner as its controller, or the fields sync copies
// from desired into it (sync reports whether it changed any), with retries
// on conflicts. An object controlled by something else is an error.
func Write[T client.Object](ctx context.Context, w *Writer, owner Owner, desired T, sync func(live, desired T) bool) error {
	return write(ctx, w, owner, desired, sync, false)
}

// WriteShared is Write for an object that several owners share (the
// governing Service of prometheus-operator's StatefulSets, one per
// namespace): owner is added to its owner references, none of them the
// controller, and the others are kept.
func WriteShared[T client.Object](ctx context.Context, w *Writer, owner Owner, desired T, sync func(live, desired T) bool) error {
	return write(ctx, w, owner, desired, sync, true)
}

// setOwner makes owner the controller of obj or, shared, one of its owners.
func (w *Writer) setOwner(owner Owner, obj client.Object, shared bool) error {
	if shared {
		return controllerutil.SetOwnerReference(owner.Object, obj, w.scheme)
	}
	return controllerutil.SetControllerReference(owner.Object, obj, w.scheme)
}

// isOwner reports whether owner is the controller of obj or, shared, one
// of its owners.
func isOwner(owner Owner, obj client.Object, shared bool) bool {
	if !shared {
		return metav1.IsControlledBy(obj, owner.Object)
	}
	return slices.ContainsFunc(obj.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == owner.Object.GetUID() })
}

func write[T client.Object](ctx context.Context, w *Writer, owner Owner, desired T, sync func(live, desired T) bool, shared bool) error {
	kind := desired.GetObjectKind().GroupVersionKind().Kind
	key := client.ObjectKeyFromObject(desired)
	if err := w.setOwner(owner, desired, shared); err != nil {
		return fmt.Errorf("%s %s: %w", kind, key, err)
	}
	live := desired.DeepCopyObject().(T)
	err := w.client.Get(ctx, key, live)
	if shared && apierrors.IsNotFound(err) {
		// A shared object (prometheus-operated) carries its other owners'
		// labels, not the controller's, and is never in the cache: read
		// from the API server rather than try a create that fails on
		// every pass (889 refused creates in TestCoexist's 5 minutes).
		err = w.reader.Get(ctx, key, live)
	}
	if apierrors.IsNotFound(err) {
		w.Count(kind, "create")
		err = w.client.Create(ctx, desired)
		if err == nil {
			w.logger.Info("created", owner.Key, client.ObjectKeyFromObject(owner.Object), "kind", kind, "name", key.Name)
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", kind, key, err)
		}
		// The cache holds the objects the controller labelled: one it is
		// about to adopt, written by someone else, is read from the API
		// server (once: the update labels it).
		err = w.reader.Get(ctx, key, live)
	}
	if err != nil {
		return fmt.Errorf("get %s %s: %w", kind, key, err)
	}
	wrote := false
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if wrote { // A conflict: the cache is behind.
			w.conflicts.WithLabelValues(kind).Inc()
			if err := w.reader.Get(ctx, key, live); err != nil {
				return err
			}
		}
		if c := metav1.GetControllerOf(live); c != nil && c.UID != owner.Object.GetUID() && !shared {
			return fmt.Errorf("it is controlled by %s %s", c.Kind, c.Name)
		}
		changed := !isOwner(owner, live, shared)
		if changed {
			if err := w.setOwner(owner, live, shared); err != nil {
				return err
			}
		}
		l := live.GetLabels()
		for k, v := range desired.GetLabels() {
			if old, ok := l[k]; !ok || old != v {
				if l == nil {
					l = map[string]string{}
				}
				l[k], changed = v, true
			}
		}
		live.SetLabels(l)
		if !sync(live, desired) && !changed {
			return nil
		}
		wrote = true
		w.Count(kind, "update")
		return w.client.Update(ctx, live)
	})
	if err != nil {
		return fmt.Errorf("update %s %s: %w", kind, key, err)
	}
	if wrote {
		w.logger.Info("updated", owner.Key, client.ObjectKeyFromObject(owner.Object), "kind", kind, "name", key.Name)
	}
	return nil
}

// SyncSecret makes live hold exactly desired's type and data.
func SyncSecret(live, desired *corev1.Secret) bool {
	if live.Type == desired.Type && len(live.Data) == len(desired.Data) && len(live.StringData) == 0 &&
		maps.EqualFunc(live.Data, desired.Data, bytes.Equal) {
		return false
	}
	live.Type, live.Data, live.StringData = desired.Type, desired.Data, nil
	return true
}

// SyncConfigMap makes live hold exactly desired's data and binaryData: a
// rule file ConfigMap written by an older controller, with plain data
// keys, is replaced by its gzipped keys in one update.
func SyncConfigMap(live, desired *corev1.ConfigMap) bool {
	if maps.Equal(live.Data, desired.Data) && maps.EqualFunc(live.BinaryData, desired.BinaryData, bytes.Equal) {
		return false
	}
	live.Data, live.BinaryData = desired.Data, desired.BinaryData
	return true
}

// SyncService compares the fields a kind sets in a Service (cluster IP,
// selector, ports); the API server fills in the others.
func SyncService(live, desired *corev1.Service) bool {
	same := live.Spec.ClusterIP == desired.Spec.ClusterIP &&
		maps.Equal(live.Spec.Selector, desired.Spec.Selector) &&
		slices.EqualFunc(live.Spec.Ports, desired.Spec.Ports, func(a, b corev1.ServicePort) bool {
			return a.Name == b.Name && a.Port == b.Port && a.TargetPort == b.TargetPort && ptr.Equal(a.AppProtocol, b.AppProtocol)
		})
	if same {
		return false
	}
	live.Spec.ClusterIP, live.Spec.Selector, live.Spec.Ports = desired.Spec.ClusterIP, desired.Spec.Selector, desired.Spec.Ports
	return true
}

// SyncRole copies the rules.
func SyncRole(live, desired *rbacv1.Role) bool {
	if equality.Semantic.DeepEqual(live.Rules, desired.Rules) {
		return false
	}
	live.Rules = desired.Rules
	return true
}

// SyncRoleBinding copies the subjects and the role reference; the API
// server refuses a change of the latter, which never changes for a
// binding the controller created.
func SyncRoleBinding(live, desired *rbacv1.RoleBinding) bool {
	if equality.Semantic.DeepEqual(live.Subjects, desired.Subjects) && live.RoleRef == desired.RoleRef {
		return false
	}
	live.Subjects, live.RoleRef = desired.Subjects, desired.RoleRef
	return true
}
