package alertmanager

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/kube"
)

// reasonInvalidConfiguration is the reason of the Accepted condition of
// an AlertmanagerConfig left out, prometheus-operator's for a
// configuration resource it rejects.
const reasonInvalidConfiguration = "InvalidConfiguration"

// maxFieldManager is the API server's limit on a field manager's name.
const maxFieldManager = 128

// bindingKey names the binding of an Alertmanager on an
// AlertmanagerConfig, and the AlertmanagerConfig.
type bindingKey struct {
	alertmanager, config types.NamespacedName
}

// hasStatusSubresource reports whether the AlertmanagerConfig CRD the API
// server serves has the status subresource (older ones do not).
func hasStatusSubresource(cfg *rest.Config) (bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	list, err := dc.ServerResourcesForGroupVersion(monitoringv1alpha1.SchemeGroupVersion.String())
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", monitoringv1alpha1.SchemeGroupVersion, err)
	}
	for _, res := range list.APIResources {
		if res.Name == monitoringv1alpha1.AlertmanagerConfigName+"/status" {
			return true, nil
		}
	}
	return false, nil
}

// bindingManager is the field manager of the Alertmanager key's binding
// in the status of the AlertmanagerConfigs: one per Alertmanager, so that
// each apply owns its binding alone and the bindings of the others stay
// (an apply without a binding its manager applied before removes it).
func bindingManager(key types.NamespacedName) string {
	m := fmt.Sprintf("%s/%s/%s/%s", kube.Name, monitoringv1.AlertmanagerName, key.Namespace, key.Name)
	if len(m) <= maxFieldManager {
		return m
	}
	return fmt.Sprintf("%s/%s/%x", kube.Name, monitoringv1.AlertmanagerName, sha256.Sum256([]byte(key.String())))
}

// findBinding returns the binding of the Alertmanager key in c's status,
// nil when it has none.
func findBinding(c *monitoringv1alpha1.AlertmanagerConfig, key types.NamespacedName) *monitoringv1.WorkloadBinding {
	for i, b := range c.Status.Bindings {
		if b.Group == monitoring.GroupName && b.Resource == monitoringv1.AlertmanagerName && b.Namespace == key.Namespace && b.Name == key.Name {
			return &c.Status.Bindings[i]
		}
	}
	return nil
}

// accepted is the Accepted condition of c in its binding to an
// Alertmanager: True when it is in the configuration, False with the
// reason it was left out (the reference that failed, or the message of
// Alertmanager's parser); its last transition time is live's when the
// status is the same.
func accepted(c *monitoringv1alpha1.AlertmanagerConfig, live *monitoringv1.WorkloadBinding, leftOut string) monitoringv1.ConfigResourceCondition {
	cond := monitoringv1.ConfigResourceCondition{Type: monitoringv1.Accepted, Status: monitoringv1.ConditionTrue, ObservedGeneration: c.Generation, LastTransitionTime: metav1.Now()}
	if leftOut != "" {
		cond.Status, cond.Reason, cond.Message = monitoringv1.ConditionFalse, reasonInvalidConfiguration, leftOut
	}
	if old := liveAccepted(live); old != nil && old.Status == cond.Status {
		cond.LastTransitionTime = old.LastTransitionTime
	}
	return cond
}

// liveAccepted is the Accepted condition of b, nil when there is none.
func liveAccepted(b *monitoringv1.WorkloadBinding) *monitoringv1.ConfigResourceCondition {
	if b == nil {
		return nil
	}
	for i, c := range b.Conditions {
		if c.Type == monitoringv1.Accepted {
			return &b.Conditions[i]
		}
	}
	return nil
}

// sameCondition reports whether a and b say the same, their times aside.
func sameCondition(a, b monitoringv1.ConfigResourceCondition) bool {
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message && a.ObservedGeneration == b.ObservedGeneration
}

// bind applies the binding of am on each of configs, the
// AlertmanagerConfigs in its configuration or left out (left, by name,
// gives why), when it says something new, and removes it from every other
// AlertmanagerConfig. Nothing is written when nothing changed.
func (r *reconciler) bind(ctx context.Context, am *monitoringv1.Alertmanager, configs []*monitoringv1alpha1.AlertmanagerConfig, left map[types.NamespacedName]string) error {
	if !r.bindings {
		return nil
	}
	key := client.ObjectKeyFromObject(am)
	keep := map[types.NamespacedName]bool{}
	var errs []error
	for _, c := range configs {
		ck := client.ObjectKeyFromObject(c)
		if g := am.Spec.AlertmanagerConfiguration; g != nil && ck == (types.NamespacedName{Namespace: am.Namespace, Name: g.Name}) {
			continue // The base is not selected (as in amconfig).
		}
		keep[ck] = true
		live := findBinding(c, key)
		want := accepted(c, live, left[ck])
		if old := liveAccepted(live); old != nil && sameCondition(*old, want) {
			continue
		}
		r.mu.Lock()
		last, ok := r.bound[bindingKey{key, ck}]
		r.mu.Unlock()
		if ok && sameCondition(last, want) {
			continue // Applied; the cache has not seen it yet.
		}
		if err := r.applyBinding(ctx, key, ck, &want); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, r.unbind(ctx, key, keep))...)
}

// unbind removes the binding of the Alertmanager key from every
// AlertmanagerConfig but those in keep.
func (r *reconciler) unbind(ctx context.Context, key types.NamespacedName, keep map[types.NamespacedName]bool) error {
	if !r.bindings {
		return nil
	}
	var list monitoringv1alpha1.AlertmanagerConfigList
	if err := r.client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		if meta.IsNoMatchError(err) {
			return nil
		}
		return fmt.Errorf("list AlertmanagerConfigs: %w", err)
	}
	var errs []error
	for i := range list.Items {
		c := &list.Items[i]
		ck := client.ObjectKeyFromObject(c)
		if keep[ck] || findBinding(c, key) == nil {
			continue
		}
		if r.removed(key, ck) {
			continue // Removed; the cache has not seen it yet.
		}
		if err := r.applyBinding(ctx, key, ck, nil); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removed reports whether the last write of the binding of the
// Alertmanager key on the AlertmanagerConfig ck removed it.
func (r *reconciler) removed(key, ck types.NamespacedName) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unbound[bindingKey{key, ck}]
}

// applyBinding applies, as the Alertmanager key's field manager, the
// status of the AlertmanagerConfig ck with key's binding holding cond;
// a nil cond removes the binding.
func (r *reconciler) applyBinding(ctx context.Context, key, ck types.NamespacedName, cond *monitoringv1.ConfigResourceCondition) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": monitoringv1alpha1.SchemeGroupVersion.String(),
		"kind":       monitoringv1alpha1.AlertmanagerConfigKind,
		"metadata":   map[string]any{"name": ck.Name, "namespace": ck.Namespace},
	}}
	if cond != nil {
		b := monitoringv1.WorkloadBinding{Group: monitoring.GroupName, Resource: monitoringv1.AlertmanagerName, Namespace: key.Namespace, Name: key.Name,
			Conditions: []monitoringv1.ConfigResourceCondition{*cond}}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&b)
		if err != nil {
			return fmt.Errorf("binding of Alertmanager %s: %w", key, err)
		}
		u.Object["status"] = map[string]any{"bindings": []any{m}}
	}
	r.writer.Count(monitoringv1alpha1.AlertmanagerConfigKind, "apply-status")
	err := r.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(bindingManager(key)), client.ForceOwnership)
	if err != nil && !apierrors.IsNotFound(err) { // One deleted has no status.
		return fmt.Errorf("apply the binding of Alertmanager %s in the status of AlertmanagerConfig %s: %w", key, ck, err)
	}
	bk := bindingKey{key, ck}
	r.mu.Lock()
	if cond != nil {
		r.bound[bk] = *cond
		delete(r.unbound, bk)
	} else {
		delete(r.bound, bk)
		r.unbound[bk] = true
	}
	r.mu.Unlock()
	return nil
}
