package kube

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// AnnotationInputHash is the annotation of a pod template holding a hash
// of everything a kind renders into the pods; the pods roll when it changes. What reaches the
// pods through reloads is not part of it.
const AnnotationInputHash = "podreload.dev/input-hash"

// RecreatingError says that a StatefulSet is being deleted to be created
// again.
type RecreatingError struct{ key types.NamespacedName }

// Error names the StatefulSet.
func (e *RecreatingError) Error() string {
	return fmt.Sprintf("StatefulSet %s is being deleted to be created again", e.key)
}

// ApplyStatefulSet applies desired (server-side apply, field manager Name,
// taking over the fields someone else changed), with owner as its
// controller, unless the live StatefulSet already holds every field
// desired sets: what someone else changed in them, a container removed or
// an image replaced, is put back and counted as drift when the input hash
// (AnnotationInputHash) and replicas are the same. When the API server
// refuses the apply because it changes an immutable field, the
// StatefulSet is deleted (in the foreground, so its pods go first; with
// orphan propagation for an Owner that says Orphan) and
// created again by a later reconciliation: a *RecreatingError says so.
// It returns the live StatefulSet.
func (w *Writer) ApplyStatefulSet(ctx context.Context, owner Owner, desired *appsv1.StatefulSet) (*appsv1.StatefulSet, error) {
	key := client.ObjectKeyFromObject(desired)
	if err := controllerutil.SetControllerReference(owner.Object, desired, w.scheme); err != nil {
		return nil, fmt.Errorf("StatefulSet %s: %w", key, err)
	}
	var live appsv1.StatefulSet
	err := w.client.Get(ctx, key, &live)
	if apierrors.IsNotFound(err) {
		// The cache holds the StatefulSets the controller labelled; one
		// it is about to adopt, written by someone else, is read from the
		// API server (once: the apply labels it).
		err = w.reader.Get(ctx, key, &live)
	}
	if err == nil && live.DeletionTimestamp != nil {
		return nil, &RecreatingError{key: key}
	}
	if client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("get StatefulSet %s: %w", key, err)
	}
	exists := err == nil
	if exists {
		if c := metav1.GetControllerOf(&live); c != nil && c.UID != owner.Object.GetUID() {
			return nil, fmt.Errorf("apply StatefulSet %s: it is controlled by %s %s", key, c.Kind, c.Name)
		}
		// Comparing first saves a request per reconciliation: an apply
		// that changes nothing is a no-op on the server, but a PATCH all
		// the same.
		if holds(&live, desired) {
			return &live, nil
		}
		if err := w.upgradeManagedFields(ctx, key, owner.Adopt); err != nil {
			return nil, err
		}
	}
	applied, err := w.apply(ctx, desired)
	if !apierrors.IsInvalid(err) {
		if err != nil {
			return nil, err
		}
		if exists && sameIntent(&live, desired) {
			w.drift.WithLabelValues("StatefulSet").Inc()
			w.logger.Info("corrected a change made by someone else", owner.Key, client.ObjectKeyFromObject(owner.Object), "kind", "StatefulSet", "name", key.Name)
		} else {
			w.logger.Info("applied", owner.Key, client.ObjectKeyFromObject(owner.Object), "kind", "StatefulSet", "name", key.Name)
		}
		return applied, nil
	}
	w.logger.Info("recreating StatefulSet: an immutable field changed", owner.Key, client.ObjectKeyFromObject(owner.Object), "err", err)
	w.recreations.Inc()
	w.Count("StatefulSet", "delete")
	policy := metav1.DeletePropagationForeground
	if owner.Orphan {
		policy = metav1.DeletePropagationOrphan
	}
	if err := w.client.Delete(ctx, &live, client.PropagationPolicy(policy), client.Preconditions{UID: &live.UID}); client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("delete StatefulSet %s: %w", key, err)
	}
	return nil, &RecreatingError{key: key}
}

// apply applies desired with server-side apply, forcing the ownership of
// its fields, and returns the StatefulSet the API server answered.
// Applying the whole rendered object makes the controller the manager of
// every field it sets: a field someone else changed is taken back, one
// they added is left alone.
func (w *Writer) apply(ctx context.Context, desired *appsv1.StatefulSet) (*appsv1.StatefulSet, error) {
	key := client.ObjectKeyFromObject(desired)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(desired)
	if err != nil {
		return nil, fmt.Errorf("apply StatefulSet %s: %w", key, err)
	}
	// The status is not the controller's to set, nor the creation time.
	delete(u, "status")
	unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
	obj := &unstructured.Unstructured{Object: u}
	w.Count("StatefulSet", "apply")
	if err := w.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(Name), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("apply StatefulSet %s: %w", key, err)
	}
	var applied appsv1.StatefulSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &applied); err != nil {
		return nil, fmt.Errorf("apply StatefulSet %s: %w", key, err)
	}
	return &applied, nil
}

// upgradeManagedFields makes the fields that earlier versions of the
// controller wrote with updates (field manager Name, operation Update),
// and those the adopt managers wrote with updates, fields it applied, so
// that the next apply removes those it no longer sets. The cache holds no
// managed fields: the StatefulSet is read from the API server, only when
// it is about to be applied.
func (w *Writer) upgradeManagedFields(ctx context.Context, key types.NamespacedName, adopt []string) error {
	return w.upgradeManagedFieldsOf(ctx, "StatefulSet", &appsv1.StatefulSet{}, key, adopt)
}

// upgradeManagedFieldsOf is upgradeManagedFields for the object key
// names, of kind, read into live.
func (w *Writer) upgradeManagedFieldsOf(ctx context.Context, kind string, live client.Object, key types.NamespacedName, adopt []string) error {
	err := w.reader.Get(ctx, key, live)
	if apierrors.IsNotFound(err) {
		return nil // The apply creates it.
	}
	if err != nil {
		return fmt.Errorf("get %s %s: %w", kind, key, err)
	}
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(live, sets.New(append([]string{Name}, adopt...)...), Name)
	if err != nil {
		return fmt.Errorf("upgrade managed fields of %s %s: %w", kind, key, err)
	}
	if patch == nil {
		return nil
	}
	w.Count(kind, "patch")
	if err := w.client.Patch(ctx, live, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("upgrade managed fields of %s %s: %w", kind, key, err)
	}
	return nil
}

// holds reports whether live has every label, annotation, owner reference
// and spec field that desired sets, with the same value. The fields the
// API server defaults, and the ones desired leaves empty, are not
// compared; a list (of containers, say) must hold desired's items in
// order, and may hold more after them.
func holds(live, desired *appsv1.StatefulSet) bool {
	return equality.Semantic.DeepDerivative(desired.Labels, live.Labels) &&
		equality.Semantic.DeepDerivative(desired.Annotations, live.Annotations) &&
		equality.Semantic.DeepDerivative(desired.OwnerReferences, live.OwnerReferences) &&
		equality.Semantic.DeepDerivative(desired.Spec, live.Spec)
}

// sameIntent reports whether live was written for the same input hash and
// replicas as desired: then a difference is a change made by someone else.
func sameIntent(live, desired *appsv1.StatefulSet) bool {
	return live.Spec.Template.Annotations[AnnotationInputHash] == desired.Spec.Template.Annotations[AnnotationInputHash] &&
		ptr.Deref(live.Spec.Replicas, 1) == ptr.Deref(desired.Spec.Replicas, 1)
}
