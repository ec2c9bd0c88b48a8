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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// ApplyDaemonSet applies desired as ApplyStatefulSet applies a
// StatefulSet (server-side apply, field manager Name, forcing; the fields
// of the owner's Adopt managers adopted; nothing written when the live
// DaemonSet holds every field desired sets), with owner as its
// controller, and returns the live DaemonSet. A DaemonSet has no
// immutable field but its selector, which the caller keeps: an apply the
// API server refuses is an error.
func (w *Writer) ApplyDaemonSet(ctx context.Context, owner Owner, desired *appsv1.DaemonSet) (*appsv1.DaemonSet, error) {
	key := client.ObjectKeyFromObject(desired)
	if err := controllerutil.SetControllerReference(owner.Object, desired, w.scheme); err != nil {
		return nil, fmt.Errorf("DaemonSet %s: %w", key, err)
	}
	var live appsv1.DaemonSet
	err := w.client.Get(ctx, key, &live)
	if apierrors.IsNotFound(err) {
		err = w.reader.Get(ctx, key, &live) // Not labelled by the controller yet.
	}
	if client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("get DaemonSet %s: %w", key, err)
	}
	if err == nil {
		if c := metav1.GetControllerOf(&live); c != nil && c.UID != owner.Object.GetUID() {
			return nil, fmt.Errorf("apply DaemonSet %s: it is controlled by %s %s", key, c.Kind, c.Name)
		}
		if equality.Semantic.DeepDerivative(desired.Labels, live.Labels) &&
			equality.Semantic.DeepDerivative(desired.Annotations, live.Annotations) &&
			equality.Semantic.DeepDerivative(desired.OwnerReferences, live.OwnerReferences) &&
			equality.Semantic.DeepDerivative(desired.Spec, live.Spec) {
			return &live, nil
		}
		if err := w.upgradeManagedFieldsOf(ctx, "DaemonSet", &appsv1.DaemonSet{}, key, owner.Adopt); err != nil {
			return nil, err
		}
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(desired)
	if err != nil {
		return nil, fmt.Errorf("apply DaemonSet %s: %w", key, err)
	}
	delete(u, "status")
	unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
	obj := &unstructured.Unstructured{Object: u}
	w.Count("DaemonSet", "apply")
	if err := w.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(Name), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("apply DaemonSet %s: %w", key, err)
	}
	var applied appsv1.DaemonSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &applied); err != nil {
		return nil, fmt.Errorf("apply DaemonSet %s: %w", key, err)
	}
	w.logger.Info("applied", owner.Key, client.ObjectKeyFromObject(owner.Object), "kind", "DaemonSet", "name", key.Name)
	return &applied, nil
}
