package takeover

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/podreload/podreload/controller/kube"
)

const (
	// AnnotationControllerID is prometheus-operator's annotation naming
	// the controller of an object: prometheus-operator started with
	// --controller-id=X reconciles only the objects whose annotation is X
	// (absent reads as empty); this controller takes those annotated with
	// its own id.
	AnnotationControllerID = "operator.prometheus.io/controller-id"
	// OperatorFieldManager is prometheus-operator's field manager.
	OperatorFieldManager = "PrometheusOperator"
	// ConditionUnsupportedFields is True on an object that sets fields
	// the controller cannot render: it is not taken over.
	ConditionUnsupportedFields = "UnsupportedFields"
	// FinalizerStatusCleanup is the finalizer prometheus-operator puts on
	// an object (with its StatusForConfigurationResources feature gate) to
	// remove it from the status of the resources it selected before it
	// goes; prometheus-operator removes it only from the objects whose
	// controller id is its own.
	FinalizerStatusCleanup = "monitoring.coreos.com/status-cleanup"
)

// HandedTo reports whether obj's controller id is id, exactly (case and
// spaces count, as in prometheus-operator).
func HandedTo(obj metav1.Object, id string) bool {
	return obj.GetAnnotations()[AnnotationControllerID] == id
}

// UnsupportedMessage says what of unsupported (the paths RefusedFields
// returns, and reasons that are not a field's) keeps an object from being
// taken over: the field paths under spec, and the other reasons as they
// are.
func UnsupportedMessage(unsupported []string) string {
	out := make([]string, len(unsupported))
	for i, u := range unsupported {
		if strings.ContainsAny(u, " :") {
			out[i] = u
		} else {
			out[i] = "spec." + u
		}
	}
	return strings.Join(out, "; ")
}

// InvalidMessage says what of invalid (the "<path>: <message>" of the
// fields prometheus-operator's own validation refuses, Check.Invalid) is
// at fault: each under spec.
func InvalidMessage(invalid []string) string {
	out := make([]string, len(invalid))
	for i, f := range invalid {
		out[i] = "spec." + f
	}
	return strings.Join(out, "; ")
}

// RefusedMessage is the message of the UnsupportedFields condition and
// Event of an object that sets unsupported fields.
func RefusedMessage(unsupported []string, doc string) string {
	return fmt.Sprintf("not taken over, nothing written: not supported yet: %s (%s); remove the %s annotation to hand it back to prometheus-operator",
		UnsupportedMessage(unsupported), doc, AnnotationControllerID)
}

// DropFinalizer removes FinalizerStatusCleanup from obj, of kind, taken
// over and being deleted, which would otherwise never go; it reports
// whether it did. What the finalizer guards is prometheus-operator's,
// which the controller does not write: it stays.
func DropFinalizer(ctx context.Context, c client.Client, w *kube.Writer, kind string, obj client.Object) (bool, error) {
	if !controllerutil.ContainsFinalizer(obj, FinalizerStatusCleanup) {
		return false, nil
	}
	base, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return false, fmt.Errorf("remove the finalizer of %s %s/%s: not an object", kind, obj.GetNamespace(), obj.GetName())
	}
	controllerutil.RemoveFinalizer(obj, FinalizerStatusCleanup)
	w.Count(kind, "patch")
	if err := c.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("remove the finalizer %s of %s %s/%s: %w", FinalizerStatusCleanup, kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return true, nil
}

// ApplyStatus applies status as the status of the object of gvk named by
// key, with server-side apply by the controller's field manager, forcing:
// the fields it sets become the controller's, those it set before and no
// longer does are removed. An empty status removes every field only the
// controller set: the hand-back's one write.
func ApplyStatus(ctx context.Context, c client.Client, w *kube.Writer, gvk schema.GroupVersionKind, key client.ObjectKey, status map[string]any) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvk.GroupVersion().String(),
		"kind":       gvk.Kind,
		"metadata":   map[string]any{"name": key.Name, "namespace": key.Namespace},
	}}
	if len(status) > 0 { // None at all (an empty one reads as null) owns no field.
		u.Object["status"] = status
	}
	w.Count(gvk.Kind, "apply-status")
	if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(kube.Name), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply status of %s %s: %w", gvk.Kind, key, err)
	}
	return nil
}
