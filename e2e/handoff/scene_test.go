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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

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

// replicas of each Prometheus: a roll of a StatefulSet of more than one.
const replicas = 2

// createMonitors creates the monitors of the namespace ns.
func createMonitors(t testing.TB, c client.Client, ns string) {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(strings.ReplaceAll(monitors, "NS", ns)), 4096)
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

// scene is a Prometheus of the test and what it checks of it.
type scene struct {
	e        *env
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
	p := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if id != "" {
		p.Annotations = map[string]string{takeover.AnnotationControllerID: id}
	}
	p.Spec.Replicas = ptr.To[int32](replicas)
	p.Spec.Image = ptr.To("quay.io/prometheus/prometheus:v3.15.0")
	p.Spec.Version = "v3.15.0"
	p.Spec.ServiceMonitorSelector = &metav1.LabelSelector{}
	p.Spec.RuleSelector = &metav1.LabelSelector{}
	p.Spec.ExternalLabels = map[string]string{"edit": "0"}
	p.Spec.Storage = &monitoringv1.StorageSpec{VolumeClaimTemplate: monitoringv1.EmbeddedPersistentVolumeClaim{
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}}
	require.NoError(t, e.c.Create(t.Context(), p))
	return &scene{e: e, ns: ns, name: name, uid: p.UID}
}

// stsName is the name of the StatefulSet, of the config Secret.
func (s *scene) stsName() string { return "prometheus-" + s.name }

// key is the key of the object name of the namespace.
func (s *scene) key(name string) client.ObjectKey {
	return client.ObjectKey{Namespace: s.ns, Name: name}
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

// annotate hands the Prometheus to id, and returns the resourceVersion
// of the change.
func (s *scene) annotate(t testing.TB, id string) string {
	t.Helper()
	return s.patch(t, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, takeover.AnnotationControllerID, id))
}

// edit makes the edit n: the external label edit of the Prometheus, and
// the expression of the namespace's rule (every Prometheus of it).
func (s *scene) edit(t testing.TB, n int) {
	t.Helper()
	s.patch(t, fmt.Sprintf(`{"spec":{"externalLabels":{"edit":"%d"}}}`, n))
	rule := &monitoringv1.PrometheusRule{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "app"}}
	require.NoError(t, s.e.c.Patch(t.Context(), rule, client.RawPatch(types.MergePatchType,
		fmt.Appendf(nil, `{"spec":{"groups":[{"name":"handoff","rules":[{"record":"handoff:edit","expr":"vector(%d)"}]}]}}`, n))))
}

// patch merges p into the Prometheus and returns its resourceVersion.
func (s *scene) patch(t testing.TB, p string) string {
	t.Helper()
	obj := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.name}}
	require.NoError(t, s.e.c.Patch(t.Context(), obj, client.RawPatch(types.MergePatchType, []byte(p))), "patch Prometheus %s/%s", s.ns, s.name)
	return obj.ResourceVersion
}

// waitOperatorWrote waits until prometheus-operator wrote the
// StatefulSet, the config Secret and the rule ConfigMap, keeps the
// StatefulSet as it wrote it, and creates the claims of its pods.
func (s *scene) waitOperatorWrote(t testing.TB) {
	t.Helper()
	eventually(t, "the objects of Prometheus "+s.name+" written by prometheus-operator", func() error {
		for _, obj := range []client.Object{&appsv1.StatefulSet{}, &corev1.Secret{}, &corev1.ConfigMap{}} {
			name := s.stsName()
			if _, ok := obj.(*corev1.ConfigMap); ok {
				name += "-rulefiles-0"
			}
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

// rendered returns nil once the config Secret holds the external label
// of the edit n and the rule ConfigMap its rule.
func (s *scene) rendered(t testing.TB, n int) error {
	var secret corev1.Secret
	if err := s.e.c.Get(t.Context(), s.key(s.stsName()), &secret); err != nil {
		return err
	}
	zr, err := gzip.NewReader(bytes.NewReader(secret.Data["prometheus.yaml.gz"]))
	if err != nil {
		return fmt.Errorf("Secret %s: %w", secret.Name, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return fmt.Errorf("Secret %s: %w", secret.Name, err)
	}
	var config struct {
		Global struct {
			ExternalLabels map[string]string `json:"external_labels"`
		} `json:"global"`
	}
	if err := sigsyaml.Unmarshal(b, &config); err != nil {
		return fmt.Errorf("Secret %s: %w", secret.Name, err)
	}
	if got := config.Global.ExternalLabels["edit"]; got != fmt.Sprint(n) {
		return fmt.Errorf("Secret %s: external label edit is %q, not %d", secret.Name, got, n)
	}
	var rules corev1.ConfigMap
	if err := s.e.c.Get(t.Context(), s.key(s.stsName()+"-rulefiles-0"), &rules); err != nil {
		return err
	}
	for _, v := range rules.Data {
		if strings.Contains(v, fmt.Sprintf("vector(%d)", n)) {
			return nil
		}
	}
	return fmt.Errorf("ConfigMap %s: no vector(%d) in %v", rules.Name, n, rules.Data)
}

// waitWrite waits until manager writes an object of the namespace (a
// StatefulSet, Secret, ConfigMap, Service, Role or the Prometheus' status)
// at or after since, and returns what it wrote.
func (s *scene) waitWrite(t testing.TB, manager string, since time.Time) string {
	t.Helper()
	after := metav1.NewTime(since.Truncate(time.Second))
	var what string
	eventually(t, "a write of "+manager, func() error {
		for _, list := range []client.ObjectList{
			&appsv1.StatefulSetList{}, &corev1.SecretList{}, &corev1.ConfigMapList{}, &corev1.ServiceList{},
			&monitoringv1.PrometheusList{},
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
// Prometheus as its controller, blocking its deletion (as
// prometheus-operator's WithManagingOwner): the garbage collector deletes
// it with the Prometheus.
func (s *scene) ownedOnlyBy(obj client.Object) error {
	refs := obj.GetOwnerReferences()
	if len(refs) != 1 || refs[0].UID != s.uid || refs[0].Kind != monitoringv1.PrometheusesKind ||
		refs[0].Controller == nil || !*refs[0].Controller || refs[0].BlockOwnerDeletion == nil || !*refs[0].BlockOwnerDeletion {
		return fmt.Errorf("%T %s: owner references %+v, not the Prometheus %s (uid %s) as controller", obj, obj.GetName(), refs, s.name, s.uid)
	}
	return nil
}

// kept returns nil when the StatefulSet is the one prometheus-operator
// created, with its selector, Service name and claim templates, owned by
// the Prometheus alone, and the claims of its pods untouched.
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
