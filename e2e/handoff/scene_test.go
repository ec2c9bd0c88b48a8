package handoff

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/operator"
)

// monitors are the ServiceMonitor and the PrometheusRule every Prometheus
// of a namespace selects; the rule's expression vector(N) carries the
// number of the last edit.
const monitors = `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: app, namespace: NS}
spec:
  selector: {matchLabels: {app: app}}
  endpoints: [{port: web, interval: 10s}]
---
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: app, namespace: NS}
spec:
  groups: [{name: handoff, rules: [{record: "handoff:edit", expr: "vector(0)"}]}]
`

// replicas of each Prometheus and Alertmanager: a roll of a StatefulSet of more than one.
const replicas = 2

// createMonitors creates the monitors of the namespace ns.
func createMonitors(t testing.TB, c client.Client, ns string) {
	t.Helper()
	createInputs(t, c, ns, prometheusKind())
}

// createInputs creates the inputs of the objects of kind k of the
// namespace ns.
func createInputs(t testing.TB, c client.Client, ns string, k *kind) {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(strings.ReplaceAll(k.inputs, "NS", ns)), 4096)
	for {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err)
		require.NoError(t, c.Create(t.Context(), obj), "create %s %s", obj.GetKind(), obj.GetName())
	}
}

// scene is a Prometheus or an Alertmanager of the test and what it
// checks of it.
type scene struct {
	e        *env
	kind     *kind
	ns, name string
	uid      types.UID
	// orig is its StatefulSet as prometheus-operator first wrote it.
	orig *appsv1.StatefulSet
	// pvcs are the claims of its pods, created as the StatefulSet
	// controller would (no kube-controller-manager runs here): nothing
	// may touch them.
	pvcs []corev1.PersistentVolumeClaim
}

// newPrometheus creates the Prometheus name in ns, handed to id (none when
// empty): 2 replicas, a claim template, every monitor and rule of ns
// selected, the external label edit 0.
func (e *env) newPrometheus(t testing.TB, ns, name, id string) *scene {
	t.Helper()
	return e.newScene(t, prometheusKind(), ns, name, id)
}

// newScene creates the object of kind k name in ns, handed to id (none
// when empty), with the spec of its kind.
func (e *env) newScene(t testing.TB, k *kind, ns, name, id string) *scene {
	t.Helper()
	obj := k.object()
	obj.SetNamespace(ns)
	obj.SetName(name)
	if id != "" {
		obj.SetAnnotations(map[string]string{takeover.AnnotationControllerID: id})
	}
	k.spec(obj)
	require.NoError(t, e.c.Create(t.Context(), obj))
	return &scene{e: e, kind: k, ns: ns, name: name, uid: obj.GetUID()}
}

// stsName is the name of the StatefulSet: <prefix><name>, which starts
// those of the kind's other objects.
func (s *scene) stsName() string { return s.kind.prefix + s.name }

// configName is the name of the Secret of the configuration.
func (s *scene) configName() string { return s.stsName() + s.kind.config }

// key is the key of the object name of the namespace.
func (s *scene) key(name string) client.ObjectKey {
	return client.ObjectKey{Namespace: s.ns, Name: name}
}

// object reads the object of the scene (a Prometheus or an Alertmanager).
func (s *scene) object(t testing.TB) client.Object {
	t.Helper()
	obj := s.kind.object()
	require.NoError(t, s.e.c.Get(t.Context(), s.key(s.name), obj))
	return obj
}

// conditions reads the conditions of the object's status, and its
// generation.
func (s *scene) conditions(t testing.TB) ([]monitoringv1.Condition, int64) {
	t.Helper()
	obj := s.object(t)
	return s.kind.conditions(obj), obj.GetGeneration()
}

// prometheus reads the Prometheus.
func (s *scene) prometheus(t testing.TB) *monitoringv1.Prometheus {
	t.Helper()
	var p monitoringv1.Prometheus
	require.NoError(t, s.e.c.Get(t.Context(), s.key(s.name), &p))
	return &p
}

// statefulSet reads the StatefulSet.
func (s *scene) statefulSet(t testing.TB) *appsv1.StatefulSet {
	t.Helper()
	var sts appsv1.StatefulSet
	require.NoError(t, s.e.c.Get(t.Context(), s.key(s.stsName()), &sts))
	return &sts
}

// annotate hands the object to id, and returns the resourceVersion of the
// change.
func (s *scene) annotate(t testing.TB, id string) string {
	t.Helper()
	return s.patch(t, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, takeover.AnnotationControllerID, id))
}

// edit makes the edit n (of the object, and of the inputs of every
// object of its kind in the namespace), as its kind makes it.
func (s *scene) edit(t testing.TB, n int) {
	t.Helper()
	s.kind.edit(t, s, n)
}

// patch merges p into the object and returns its resourceVersion.
func (s *scene) patch(t testing.TB, p string) string {
	t.Helper()
	obj := s.kind.object()
	obj.SetNamespace(s.ns)
	obj.SetName(s.name)
	require.NoError(t, s.e.c.Patch(t.Context(), obj, client.RawPatch(types.MergePatchType, []byte(p))), "patch %s %s/%s", s.kind.name, s.ns, s.name)
	return obj.GetResourceVersion()
}

// waitOperatorWrote waits until prometheus-operator wrote the
// StatefulSet, the config Secret and the rule ConfigMap (of a kind with
// rules), keeps the StatefulSet as it wrote it, and creates the claims
// of its pods.
func (s *scene) waitOperatorWrote(t testing.TB) {
	t.Helper()
	eventually(t, "the objects of "+s.kind.name+" "+s.name+" written by prometheus-operator", func() error {
		objs := []client.Object{
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: s.stsName()}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s.configName()}},
		}
		if s.kind.rules != "" {
			objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: s.stsName() + s.kind.rules}})
		}
		for _, obj := range objs {
			name := obj.GetName()
			if err := s.e.c.Get(t.Context(), s.key(name), obj); err != nil {
				return err
			}
			if !managedBy(obj, operator.FieldManager) {
				return fmt.Errorf("%T %s: no field of %s", obj, name, operator.FieldManager)
			}
		}
		return s.rendered(t, 0)
	})
	s.orig = s.statefulSet(t)
	require.Len(t, s.orig.Spec.VolumeClaimTemplates, 1)
	claim := s.orig.Spec.VolumeClaimTemplates[0]
	for i := range replicas {
		pvc := corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: fmt.Sprintf("%s-%s-%d", claim.Name, s.orig.Name, i), Labels: s.orig.Spec.Selector.MatchLabels},
			Spec:       claim.Spec,
		}
		require.NoError(t, s.e.c.Create(t.Context(), &pvc))
		s.pvcs = append(s.pvcs, pvc)
	}
}

// managedBy reports whether manager has fields of obj.
func managedBy(obj client.Object, manager string) bool {
	return slices.ContainsFunc(obj.GetManagedFields(), func(m metav1.ManagedFieldsEntry) bool { return m.Manager == manager })
}

// rendered returns nil once the configuration Secret holds the edit n,
// and what else of the kind carries it (rendered of the kind).
func (s *scene) rendered(t testing.TB, n int) error {
	var secret corev1.Secret
	if err := s.e.c.Get(t.Context(), s.key(s.configName()), &secret); err != nil {
		return err
	}
	zr, err := gzip.NewReader(bytes.NewReader(secret.Data[s.kind.key]))
	if err != nil {
		return fmt.Errorf("Secret %s: %w", secret.Name, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return fmt.Errorf("Secret %s: %w", secret.Name, err)
	}
	return s.kind.rendered(t, s, b, n)
}

// waitWrite waits until manager writes an object of the namespace (a
// StatefulSet, Secret, ConfigMap, Service, Role or the object's status)
// at or after since, and returns what it wrote.
func (s *scene) waitWrite(t testing.TB, manager string, since time.Time) string {
	t.Helper()
	after := metav1.NewTime(since.Truncate(time.Second))
	var what string
	eventually(t, "a write of "+manager, func() error {
		for _, list := range []client.ObjectList{
			&appsv1.StatefulSetList{}, &corev1.SecretList{}, &corev1.ConfigMapList{}, &corev1.ServiceList{},
			s.kind.list(),
		} {
			if err := s.e.c.List(t.Context(), list, client.InNamespace(s.ns)); err != nil {
				return err
			}
			items, err := listItems(list)
			if err != nil {
				return err
			}
			for _, obj := range items {
				for _, m := range obj.GetManagedFields() {
					if m.Manager == manager && !m.Time.Before(&after) {
						what = fmt.Sprintf("%T %s (%s)", obj, obj.GetName(), m.Subresource)
						return nil
					}
				}
			}
		}
		return errors.New("none yet")
	})
	return what
}

// ownedOnlyBy returns nil when obj's owner references are one, the
// object of the scene as its controller, blocking its deletion (as
// prometheus-operator's WithManagingOwner): the garbage collector deletes
// it with the object.
func (s *scene) ownedOnlyBy(obj client.Object) error {
	refs := obj.GetOwnerReferences()
	if len(refs) != 1 || refs[0].UID != s.uid || refs[0].Kind != s.kind.name ||
		refs[0].Controller == nil || !*refs[0].Controller || refs[0].BlockOwnerDeletion == nil || !*refs[0].BlockOwnerDeletion {
		return fmt.Errorf("%T %s: owner references %+v, not the %s %s (uid %s) as controller", obj, obj.GetName(), refs, s.kind.name, s.name, s.uid)
	}
	return nil
}

// kept returns nil when the StatefulSet is the one prometheus-operator
// created, with its selector, Service name and claim templates, owned by
// the object alone, and the claims of its pods untouched.
func (s *scene) kept(t testing.TB, sts *appsv1.StatefulSet) error {
	switch {
	case sts.UID != s.orig.UID:
		return fmt.Errorf("StatefulSet %s created again: uid %s, was %s", sts.Name, sts.UID, s.orig.UID)
	case !equalJSON(sts.Spec.Selector, s.orig.Spec.Selector):
		return fmt.Errorf("StatefulSet %s: selector %v, was %v", sts.Name, sts.Spec.Selector, s.orig.Spec.Selector)
	case sts.Spec.ServiceName != s.orig.Spec.ServiceName:
		return fmt.Errorf("StatefulSet %s: serviceName %q, was %q", sts.Name, sts.Spec.ServiceName, s.orig.Spec.ServiceName)
	case !equalJSON(claims(sts), claims(s.orig)):
		return fmt.Errorf("StatefulSet %s: claim templates changed: %s", sts.Name, diffJSON(claims(s.orig), claims(sts)))
	case !equalJSON(sts.Spec.PersistentVolumeClaimRetentionPolicy, s.orig.Spec.PersistentVolumeClaimRetentionPolicy):
		return fmt.Errorf("StatefulSet %s: claim retention policy %+v, was %+v", sts.Name, sts.Spec.PersistentVolumeClaimRetentionPolicy, s.orig.Spec.PersistentVolumeClaimRetentionPolicy)
	}
	if err := s.ownedOnlyBy(sts); err != nil {
		return err
	}
	for _, pvc := range s.pvcs {
		var live corev1.PersistentVolumeClaim
		if err := s.e.c.Get(t.Context(), client.ObjectKeyFromObject(&pvc), &live); err != nil {
			return fmt.Errorf("PersistentVolumeClaim %s: %w", pvc.Name, err)
		}
		if live.UID != pvc.UID || live.ResourceVersion != pvc.ResourceVersion {
			return fmt.Errorf("PersistentVolumeClaim %s written (uid %s, resourceVersion %s, were %s, %s)", pvc.Name, live.UID, live.ResourceVersion, pvc.UID, pvc.ResourceVersion)
		}
	}
	return nil
}

// claims are the claim templates of sts without their apiVersion and
// kind, which prometheus-operator sets (MakeVolumeClaimTemplate) and the
// API server answers a write with, but does not store.
func claims(sts *appsv1.StatefulSet) []corev1.PersistentVolumeClaim {
	out := make([]corev1.PersistentVolumeClaim, len(sts.Spec.VolumeClaimTemplates))
	for i, c := range sts.Spec.VolumeClaimTemplates {
		c.TypeMeta = metav1.TypeMeta{}
		out[i] = c
	}
	return out
}

// side tells whose pod template tpl is: controller.Name's (its input hash,
// its reloaders) or prometheus-operator's (prometheus-config-reloader, no
// input hash); an error when it mixes them.
func side(tpl *corev1.PodTemplateSpec) (string, error) {
	_, hash := tpl.Annotations[inputHash]
	var ours, theirs []string
	for _, c := range slices.Concat(tpl.Spec.InitContainers, tpl.Spec.Containers) {
		switch {
		case strings.HasPrefix(c.Image, reloaderRepository+":"):
			ours = append(ours, c.Name)
		case strings.Contains(c.Image, "prometheus-config-reloader"):
			theirs = append(theirs, c.Name)
		}
	}
	switch {
	case hash && len(ours) == 2 && len(theirs) == 0:
		return controller.Name, nil
	case !hash && len(ours) == 0 && len(theirs) == 2:
		return operator.FieldManager, nil
	}
	return "", fmt.Errorf("a pod template of both: input hash %t, podreload's reloaders %v, prometheus-operator's %v", hash, ours, theirs)
}
