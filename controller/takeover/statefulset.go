package takeover

import (
	"context"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KeepImmutable copies into desired, the StatefulSet of an object taken
// over, the fields of live, the one in the cluster, that the API server
// does not let change: its selector (which holds the labels of
// prometheus-operator's --labels flag, unknown here; the pod template gets
// them too), Service name, claim templates and pod management policy. The
// StatefulSet prometheus-operator created is then updated in place, and
// so is the controller's when it takes it back, and the pods keep their
// PVCs. It reports whether desired's claim templates were not live's:
// prometheus-operator deletes the StatefulSet, pods first, to apply such
// a change; the pods and their claims stay here.
func KeepImmutable(live, desired *appsv1.StatefulSet) (claimsKept bool) {
	if live.Spec.Selector != nil {
		desired.Spec.Selector = live.Spec.Selector.DeepCopy()
		if desired.Spec.Template.Labels == nil {
			desired.Spec.Template.Labels = map[string]string{}
		}
		maps.Copy(desired.Spec.Template.Labels, live.Spec.Selector.MatchLabels)
	}
	desired.Spec.ServiceName = live.Spec.ServiceName
	desired.Spec.PodManagementPolicy = live.Spec.PodManagementPolicy
	claimsKept = !equality.Semantic.DeepDerivative(desired.Spec.VolumeClaimTemplates, live.Spec.VolumeClaimTemplates)
	desired.Spec.VolumeClaimTemplates = live.Spec.VolumeClaimTemplates
	return claimsKept
}

// CheckGoverningService checks, for an object whose governing Service is
// the user's (spec.serviceName, name), that the Service exists in
// namespace, read with reader, and selects its pods, labelled pods, as
// prometheus-operator does before it writes the StatefulSets (pkg/k8s
// EnsureCustomGoverningService): when it does not, nothing more is
// written, and the reconcile is retried.
func CheckGoverningService(ctx context.Context, reader client.Reader, namespace, name string, pods labels.Set) error {
	key := client.ObjectKey{Namespace: namespace, Name: name}
	var svc corev1.Service
	if err := reader.Get(ctx, key, &svc); err != nil {
		return fmt.Errorf("spec.serviceName: get the governing Service %s: %w", key, err)
	}
	// An empty selector selects every pod, as prometheus-operator reads it.
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(pods) {
		return fmt.Errorf("spec.serviceName: the governing Service %s with selector %q does not select the pods, labelled %q",
			key, labels.Set(svc.Spec.Selector).String(), pods.String())
	}
	return nil
}
