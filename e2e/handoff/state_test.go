package handoff

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/operator"
)

const (
	// inputHash is the annotation of the controller's pod templates.
	inputHash = kube.AnnotationInputHash
	// operatorHash is the annotation of prometheus-operator's StatefulSets.
	operatorHash = "prometheus-operator-input-hash"
	// configApplied is the condition only the controller writes.
	configApplied = "ConfigApplied"
)

// The end states. Taken over (takenOver): the StatefulSet prometheus-operator
// created, its selector, Service name, claim templates and claims kept,
// with the controller's pod template and none of prometheus-operator's
// fields; the config Secret and rule ConfigMap rendering the last edit;
// the reloaders' Role and RoleBinding; every object owned by the
// Prometheus (or the Alertmanager); its status the controller's (Reconciled True at its
// generation, ConfigApplied). Handed back (handedBack): the same
// StatefulSet with prometheus-operator's pod template and input hash,
// the last edit rendered by prometheus-operator, and nothing of the
// controller's: no pod template field, Role, RoleBinding, status
// condition or status field.

// waitTakenOver waits until the object is taken over, the edit n
// rendered.
func (s *scene) waitTakenOver(t testing.TB, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s %s/%s taken over, edit %d rendered", s.kind.name, s.ns, s.name, n), func() error { return s.takenOver(t, n) })
}

// waitHandedBack waits until the object is handed back, the edit n
// rendered.
func (s *scene) waitHandedBack(t testing.TB, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s %s/%s handed back, edit %d rendered", s.kind.name, s.ns, s.name, n), func() error { return s.handedBack(t, n) })
}

func (s *scene) takenOver(t testing.TB, n int) error {
	sts, err := s.liveStatefulSet(t)
	if err != nil {
		return err
	}
	if who, err := side(&sts.Spec.Template); err != nil || who != controller.Name {
		return fmt.Errorf("StatefulSet %s: not the controller's pod template (%s): %w", sts.Name, who, err)
	}
	if _, ok := sts.Annotations[operatorHash]; ok {
		return fmt.Errorf("StatefulSet %s: prometheus-operator's annotation %s kept", sts.Name, operatorHash)
	}
	if managedBy(sts, operator.FieldManager) {
		return fmt.Errorf("StatefulSet %s: prometheus-operator still manages fields", sts.Name)
	}
	if err := s.kept(t, sts); err != nil {
		return err
	}
	if err := s.rendered(t, n); err != nil {
		return err
	}
	if err := s.owned(t, true); err != nil {
		return err
	}
	conds, generation := s.conditions(t)
	if err := s.reconciledBy(conds, generation); err != nil {
		return err
	}
	if takeover.FindCondition(conds, configApplied) == nil {
		return fmt.Errorf("%s %s: no %s condition", s.kind.name, s.name, configApplied)
	}
	return nil
}

func (s *scene) handedBack(t testing.TB, n int) error {
	sts, err := s.liveStatefulSet(t)
	if err != nil {
		return err
	}
	if who, err := side(&sts.Spec.Template); err != nil || who != operator.FieldManager {
		return fmt.Errorf("StatefulSet %s: not prometheus-operator's pod template (%s): %w", sts.Name, who, err)
	}
	if _, ok := sts.Annotations[operatorHash]; !ok {
		return fmt.Errorf("StatefulSet %s: no %s: not rewritten by prometheus-operator", sts.Name, operatorHash)
	}
	if err := noneOfOurs(sts); err != nil {
		return err
	}
	if err := s.kept(t, sts); err != nil {
		return err
	}
	if err := s.rendered(t, n); err != nil {
		return err
	}
	if err := s.owned(t, false); err != nil {
		return err
	}
	obj := s.object(t)
	conds := s.kind.conditions(obj)
	if c := takeover.FindCondition(conds, configApplied); c != nil {
		return fmt.Errorf("%s %s: the controller's %s condition kept: %+v", s.kind.name, s.name, configApplied, c)
	}
	for _, m := range obj.GetManagedFields() {
		if m.Manager == controller.Name && m.Subresource == "status" {
			return fmt.Errorf("%s %s: status fields of the controller kept: %s", s.kind.name, s.name, m.FieldsV1.GetRawString())
		}
	}
	return s.reconciledBy(conds, obj.GetGeneration())
}

// reconciledBy returns nil when conds, those of the object at generation,
// say Reconciled True for it.
func (s *scene) reconciledBy(conds []monitoringv1.Condition, generation int64) error {
	rec := takeover.FindCondition(conds, takeover.Reconciled)
	if rec == nil || rec.Status != monitoringv1.ConditionTrue || rec.ObservedGeneration != generation {
		return fmt.Errorf("%s %s: Reconciled %+v at generation %d", s.kind.name, s.name, rec, generation)
	}
	return nil
}

// liveStatefulSet reads the StatefulSet with its managed fields.
func (s *scene) liveStatefulSet(t testing.TB) (*appsv1.StatefulSet, error) {
	var sts appsv1.StatefulSet
	if err := s.e.c.Get(t.Context(), s.key(s.stsName()), &sts); err != nil {
		return nil, err
	}
	return &sts, nil
}

// noneOfOurs returns nil when nothing of the controller's is left in the
// pod template of sts: no label, annotation, container, volume or
// argument naming podreload.
func noneOfOurs(sts *appsv1.StatefulSet) error {
	b, err := json.Marshal(sts.Spec.Template)
	if err != nil {
		return err
	}
	if i := strings.Index(string(b), "podreload"); i >= 0 {
		return fmt.Errorf("StatefulSet %s: the pod template keeps the controller's %q", sts.Name, string(b[max(0, i-80):min(len(b), i+80)]))
	}
	return nil
}

// leftover is the one trace of the controller a hand-back leaves in the
// metadata of the objects: the label of its config Secret, which
// prometheus-operator's updates keep (they keep the labels they do not
// set, pkg/k8s/k8s.go mergeMetadata), and which nothing selects once
// handed back. (The controller's managed fields entries stay too, on the
// fields whose values prometheus-operator wrote alike.) CONFIG is the
// Secret's name.
const leftover = "Secret/CONFIG label podreload.dev/config"

// owned returns nil when every Secret and ConfigMap of the object (named
// <prefix><name>...: the config, web config, TLS assets, rule files) and
// the governing Service belong to it (the Service shared, a
// plain owner reference), and the reloaders' Role and RoleBinding exist,
// owned by it, when ours, and not at all otherwise; handed back, no label
// or annotation of theirs names the controller but leftover.
func (s *scene) owned(t testing.TB, ours bool) error {
	seen := 0
	for _, list := range []client.ObjectList{&corev1.SecretList{}, &corev1.ConfigMapList{}} {
		if err := s.e.c.List(t.Context(), list, client.InNamespace(s.ns)); err != nil {
			return err
		}
		items, err := listItems(list)
		if err != nil {
			return err
		}
		for _, obj := range items {
			if obj.GetName() != s.stsName() && !strings.HasPrefix(obj.GetName(), s.stsName()+"-") {
				continue
			}
			seen++
			if err := s.ownedOnlyBy(obj); err != nil {
				return err
			}
			if ours {
				continue
			}
			kind := strings.TrimPrefix(fmt.Sprintf("%T", obj), "*v1.")
			for what, m := range map[string]map[string]string{"label": obj.GetLabels(), "annotation": obj.GetAnnotations()} {
				for k := range m {
					trace := fmt.Sprintf("%s/%s %s %s", kind, obj.GetName(), what, k)
					if strings.Contains(k, "podreload") && trace != strings.ReplaceAll(leftover, "CONFIG", s.configName()) {
						return fmt.Errorf("handed back, %s kept", trace)
					}
				}
			}
		}
	}
	if seen < 2 {
		return fmt.Errorf("%d Secrets and ConfigMaps of the %s", seen, s.kind.name)
	}
	var svc corev1.Service
	if err := s.e.c.Get(t.Context(), s.key(s.kind.governing), &svc); err != nil {
		return err
	}
	if !slices.ContainsFunc(svc.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == s.uid }) {
		return fmt.Errorf("Service %s: owner references %+v, not the %s", svc.Name, svc.OwnerReferences, s.kind.name)
	}
	access := s.stsName() + "-podreload"
	for _, obj := range []client.Object{&rbacv1.Role{}, &rbacv1.RoleBinding{}} {
		err := s.e.c.Get(t.Context(), s.key(access), obj)
		switch {
		case ours && err != nil:
			return err
		case ours:
			if err := s.ownedOnlyBy(obj); err != nil {
				return err
			}
		case err == nil:
			return fmt.Errorf("%T %s kept, handed back", obj, access)
		case !apierrors.IsNotFound(err):
			return err
		}
	}
	return nil
}

// listItems returns the items of list.
func listItems(list client.ObjectList) ([]client.Object, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(items))
	for _, item := range items {
		obj, ok := item.(client.Object)
		if !ok {
			return nil, fmt.Errorf("%s: not an object", reflect.TypeOf(item))
		}
		out = append(out, obj)
	}
	return out, nil
}

// equalJSON reports whether a and b serialize alike.
func equalJSON(a, b any) bool { return diffJSON(a, b) == "" }

// diffJSON is the difference of a and b as JSON values.
func diffJSON(a, b any) string {
	var va, vb any
	for _, x := range []struct {
		in  any
		out *any
	}{{a, &va}, {b, &vb}} {
		raw, err := json.Marshal(x.in)
		if err != nil {
			return err.Error()
		}
		if err := json.Unmarshal(raw, x.out); err != nil {
			return err.Error()
		}
	}
	return cmp.Diff(va, vb)
}
