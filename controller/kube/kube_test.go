package kube

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/metricvalue"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, controlplane.InformerLeaks()...)
}

func TestTruncate(t *testing.T) {
	require.Equal(t, "short", Truncate("short", 5))
	require.Equal(t, "ab...", Truncate("abcdefgh", 5))
	// "é" is two bytes: the cut never splits it.
	require.Equal(t, "a...", Truncate("aé"+strings.Repeat("x", 10), 5))
}

// name is the kube.LabelName value of the objects of the tests: the
// manager caches those only.
const name = "kubetest"

// env is a running Manager on a real API server, in namespace ns, with a
// ConfigMap to own what it writes and another for someone else.
type env struct {
	ns           string
	c            client.Client
	reg          *prometheus.Registry
	m            *Manager
	owner, other *corev1.ConfigMap
}

func start(t *testing.T) *env {
	cp := controlplane.Start(t)
	e := &env{ns: "kube", c: controlplane.NewClient(t, cp.Config), reg: prometheus.NewRegistry()}
	require.NoError(t, e.c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}))
	m, err := NewManager(nil, e.reg, Options{Config: cp.Config, Namespaces: []string{e.ns}, Names: []string{name}})
	require.NoError(t, err)
	require.EqualError(t, m.Ready(), "not ready: caches not synced")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done, "the manager's Run")
	})
	require.EventuallyWithT(t, func(c *assert.CollectT) { assert.NoError(c, m.Ready()) }, time.Minute, 10*time.Millisecond)
	e.m = m
	e.owner = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "owner"}}
	e.other = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "other"}}
	require.NoError(t, e.c.Create(t.Context(), e.owner))
	require.NoError(t, e.c.Create(t.Context(), e.other))
	return e
}

// writes is the count of write calls of verb to objects of kind.
func (e *env) writes(t *testing.T, kind, verb string) float64 {
	return metricvalue.Sum(t, e.reg, "podreload_controller_writes_total", "kind", kind, "verb", verb)
}

// controlledBy returns the controller reference that makes owner the
// controller of an object.
func controlledBy(owner *corev1.ConfigMap) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
}

// TestManager runs the writes of every kind against a real API server.
func TestManager(t *testing.T) {
	e := start(t)
	t.Run("Write", e.testWrite)
	t.Run("WriteShared", e.testWriteShared)
	t.Run("Delete", e.testDelete)
	t.Run("ApplyStatefulSet", e.testApplyStatefulSet)
	t.Run("Reconciles", e.testReconciles)
}

func (e *env) secret(nameOf string, data string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: nameOf, Labels: map[string]string{LabelName: name}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"k": []byte(data)},
	}
}

// testWrite: Write creates an object with the owner as its controller,
// writes nothing when it is as desired, updates what changed, and refuses
// an object someone else controls.
func (e *env) testWrite(t *testing.T) {
	ctx, w := t.Context(), e.m.Writer()
	own := Owner{Key: "owner", Object: e.owner}
	require.NoError(t, Write(ctx, w, own, e.secret("mine", "1"), SyncSecret))
	require.InDelta(t, 1, e.writes(t, "Secret", "create"), 0)
	var live corev1.Secret
	require.NoError(t, e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "mine"}, &live))
	require.True(t, metav1.IsControlledBy(&live, e.owner), "the owner controls it")
	require.Equal(t, "1", string(live.Data["k"]))

	require.NoError(t, Write(ctx, w, own, e.secret("mine", "1"), SyncSecret))
	require.Zero(t, e.writes(t, "Secret", "update"), "as desired: not written")

	require.NoError(t, Write(ctx, w, own, e.secret("mine", "2"), SyncSecret))
	require.InDelta(t, 1, e.writes(t, "Secret", "update"), 0)
	require.NoError(t, e.c.Get(ctx, client.ObjectKeyFromObject(&live), &live))
	require.Equal(t, "2", string(live.Data["k"]))

	theirs := e.secret("theirs", "x")
	theirs.OwnerReferences = controlledBy(e.other)
	require.NoError(t, e.c.Create(ctx, theirs.DeepCopy()))
	err := Write(ctx, w, own, e.secret("theirs", "y"), SyncSecret)
	require.EqualError(t, err, "update Secret "+e.ns+"/theirs: it is controlled by ConfigMap other")
	require.NoError(t, e.c.Get(ctx, client.ObjectKeyFromObject(theirs), theirs))
	require.Equal(t, "x", string(theirs.Data["k"]), "left as it was")
}

// testWriteShared: WriteShared adds the owner to the owners of an object
// someone else created, none of them its controller, and keeps theirs.
func (e *env) testWriteShared(t *testing.T) {
	ctx := t.Context()
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "shared"},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "x"}, Ports: []corev1.ServicePort{{Name: "web", Port: 9090}}},
	}
	theirs := svc.DeepCopy()
	theirs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: e.other.Name, UID: e.other.UID}}
	require.NoError(t, e.c.Create(ctx, theirs))
	desired := svc.DeepCopy()
	desired.Labels = map[string]string{LabelName: name}
	require.NoError(t, WriteShared(ctx, e.m.Writer(), Owner{Key: "owner", Object: e.owner}, desired, SyncService))
	var live corev1.Service
	require.NoError(t, e.c.Get(ctx, client.ObjectKeyFromObject(svc), &live))
	require.Len(t, live.OwnerReferences, 2, "theirs kept, ours added")
	for _, r := range live.OwnerReferences {
		require.False(t, ptr.Deref(r.Controller, false), "%s is no controller of a shared object", r.Name)
	}
	require.Equal(t, name, live.Labels[LabelName])
}

// testDelete: Delete deletes the object it was given, finds one gone no
// error, and never deletes an object of the same name created since.
func (e *env) testDelete(t *testing.T) {
	ctx, w := t.Context(), e.m.Writer()
	s := e.secret("doomed", "1")
	require.NoError(t, e.c.Create(ctx, s))
	require.NoError(t, w.Delete(ctx, "Secret", s))
	require.True(t, apierrors.IsNotFound(e.c.Get(ctx, client.ObjectKeyFromObject(s), &corev1.Secret{})))
	require.NoError(t, w.Delete(ctx, "Secret", s), "gone already")

	again := e.secret("doomed", "2")
	require.NoError(t, e.c.Create(ctx, again))
	err := w.Delete(ctx, "Secret", s) // The old one's UID.
	require.ErrorContains(t, err, "delete Secret "+e.ns+"/doomed: ")
	require.True(t, apierrors.IsConflict(err), "a failed precondition: %v", err)
	require.NoError(t, e.c.Get(ctx, client.ObjectKeyFromObject(again), &corev1.Secret{}), "the new one stays")
	require.InDelta(t, 3, e.writes(t, "Secret", "delete"), 0)
}

func (e *env) statefulSet(nameOf, app, image, hash string) *appsv1.StatefulSet {
	labels := map[string]string{LabelName: name, "app": app}
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: nameOf, Labels: map[string]string{LabelName: name}},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{AnnotationInputHash: hash}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: image}}},
			},
		},
	}
}

// cached waits until the manager's cache shows the StatefulSet key
// names as ok says.
func (e *env) cached(t *testing.T, key client.ObjectKey, ok func(*appsv1.StatefulSet) bool) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var sts appsv1.StatefulSet
		if assert.NoError(c, e.m.GetClient().Get(t.Context(), key, &sts)) {
			assert.True(c, ok(&sts), "the cache is behind")
		}
	}, time.Minute, 10*time.Millisecond)
}

// testApplyStatefulSet: ApplyStatefulSet creates the StatefulSet, sends
// nothing when it holds what is desired, takes back a field someone else
// changed (counted as drift), and deletes it to create it again when an
// immutable field changes; it refuses a StatefulSet someone else
// controls.
func (e *env) testApplyStatefulSet(t *testing.T) {
	ctx, w := t.Context(), e.m.Writer()
	own := Owner{Key: "owner", Object: e.owner}
	key := client.ObjectKey{Namespace: e.ns, Name: "server"}
	applies := func() float64 { return e.writes(t, "StatefulSet", "apply") }

	sts, err := w.ApplyStatefulSet(ctx, own, e.statefulSet("server", "a", "image:1", "h1"))
	require.NoError(t, err)
	require.True(t, metav1.IsControlledBy(sts, e.owner))
	require.InDelta(t, 1, applies(), 0)
	e.cached(t, key, func(*appsv1.StatefulSet) bool { return true })
	_, err = w.ApplyStatefulSet(ctx, own, e.statefulSet("server", "a", "image:1", "h1"))
	require.NoError(t, err)
	require.InDelta(t, 1, applies(), 0, "it holds what is desired: no request")

	controlplane.Edit(t, e.c, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "server"}}, func(s *appsv1.StatefulSet) {
		s.Spec.Template.Spec.Containers[0].Image = "image:patched"
	})
	e.cached(t, key, func(s *appsv1.StatefulSet) bool { return s.Spec.Template.Spec.Containers[0].Image == "image:patched" })
	sts, err = w.ApplyStatefulSet(ctx, own, e.statefulSet("server", "a", "image:1", "h1"))
	require.NoError(t, err)
	require.Equal(t, "image:1", sts.Spec.Template.Spec.Containers[0].Image, "taken back")
	require.InDelta(t, 1, metricvalue.Sum(t, e.reg, "podreload_controller_drift_corrected_total", "kind", "StatefulSet"), 0)

	e.cached(t, key, func(s *appsv1.StatefulSet) bool { return s.Spec.Template.Spec.Containers[0].Image == "image:1" })
	_, err = w.ApplyStatefulSet(ctx, own, e.statefulSet("server", "b", "image:1", "h2"))
	var recreating *RecreatingError
	require.ErrorAs(t, err, &recreating, "the selector is immutable")
	require.EqualError(t, err, "StatefulSet "+e.ns+"/server is being deleted to be created again")
	require.InDelta(t, 1, metricvalue.Sum(t, e.reg, "podreload_controller_statefulset_recreations_total"), 0)
	// In the foreground: its pods first, which no controller deletes here.
	e.cached(t, key, func(s *appsv1.StatefulSet) bool { return s.DeletionTimestamp != nil })
	_, err = w.ApplyStatefulSet(ctx, own, e.statefulSet("server", "b", "image:1", "h2"))
	require.ErrorAs(t, err, &recreating, "still being deleted")

	theirs := e.statefulSet("theirs", "t", "image:1", "h1")
	theirs.OwnerReferences = controlledBy(e.other)
	require.NoError(t, e.c.Create(ctx, theirs.DeepCopy()))
	_, err = w.ApplyStatefulSet(ctx, own, e.statefulSet("theirs", "t", "image:1", "h1"))
	require.EqualError(t, err, "apply StatefulSet "+e.ns+"/theirs: it is controlled by ConfigMap other")
}

// testReconciles: each kind's reconciles are series of one family each,
// by the kind label, exported from the kind's first call.
func (e *env) testReconciles(t *testing.T) {
	a := e.m.Reconciles("Thing")
	e.m.Reconciles("Other")
	a.Total.Inc()
	a.Total.Inc()
	a.Errors.Inc()
	a.Duration.Observe(0.5)
	for metric, want := range map[string]float64{
		"podreload_controller_reconciles_total":           2,
		"podreload_controller_reconcile_errors_total":     1,
		"podreload_controller_reconcile_duration_seconds": 1,
	} {
		require.InDelta(t, want, metricvalue.Sum(t, e.reg, metric, "kind", "Thing"), 0, metric)
		require.Zero(t, metricvalue.Sum(t, e.reg, metric, "kind", "Other"), metric)
	}
	families, err := e.reg.Gather()
	require.NoError(t, err)
	var kinds []string
	for _, f := range families {
		if f.GetName() == "podreload_controller_reconciles_total" {
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					kinds = append(kinds, l.GetName()+"="+l.GetValue())
				}
			}
		}
	}
	require.ElementsMatch(t, []string{"kind=Thing", "kind=Other"}, kinds, "a kind without a reconcile yet is exported at 0")
}
