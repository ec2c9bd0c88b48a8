package handoff

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/operator"
)

// testDeletedDuringRoll deletes a Prometheus in the middle of its
// takeover: prometheus-operator (with its StatusForConfigurationResources
// feature gate) had put its status-cleanup finalizer on it, which it
// removes only from its own objects; the controller removes it, so the
// Prometheus goes. No garbage collector runs on a bare API server: what
// it would do is checked in what the API server shows. Every object
// written for the Prometheus, by either side, has it as its owner (the
// controller of all but the governing Service, which it shares), so
// they go with it as prometheus-operator's would; the StatefulSet keeps
// prometheus-operator's claim retention policy (the API's default,
// Retain: a Prometheus that sets persistentVolumeClaimRetentionPolicy is
// not taken over) and the claims are untouched. Once it is gone, the
// controller writes nothing more of it.
func testDeletedDuringRoll(t testing.TB, e *env, fig figure) {
	ns := e.namespace(t, "deleted")
	createMonitors(t, e.c, ns)
	s := e.newPrometheus(t, ns, "k8s", "")
	operator.Start(t, e.cp.Kubeconfig, "", "--namespaces="+ns, "--feature-gates=StatusForConfigurationResources=true")
	s.waitOperatorWrote(t)
	eventually(t, "prometheus-operator's finalizer on the Prometheus", func() error {
		if f := s.prometheus(t).Finalizers; !slices.Contains(f, takeover.FinalizerStatusCleanup) {
			return fmt.Errorf("finalizers %v", f)
		}
		return nil
	})
	px := e.newProxy(t)
	e.startController(t, e.kubeconfig(t, px.URL(), ""), ns)

	px.setDelay(slow)
	since := time.Now()
	s.annotate(t, controllerID)
	what := s.waitWrite(t, controller.Name, since)
	require.NoError(t, e.c.Delete(t.Context(), &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: s.name}}))
	deleted := time.Now()
	t.Logf("deleted after the controller's write of %s", what)
	px.setDelay(0)
	eventually(t, "the Prometheus gone", func() error {
		err := e.c.Get(t.Context(), s.key(s.name), &monitoringv1.Prometheus{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %w", err)
	})
	gone := time.Now()
	fig("a Prometheus deleted in the middle of its takeover: deletion → gone, prometheus-operator's finalizer removed", gone.Sub(deleted))

	// A Prometheus taken over after: once its objects are written, the
	// controller has handled every event of the namespace before, the
	// monitors' change among them.
	after := e.newPrometheus(t, ns, "after", controllerID)
	after.edit(t, 1)
	eventually(t, "Prometheus after taken over", func() error { return after.rendered(t, 1) })

	sts := s.statefulSet(t)
	require.NoError(t, s.kept(t, sts))
	if policy := sts.Spec.PersistentVolumeClaimRetentionPolicy; policy != nil {
		require.Equal(t, appsv1.RetainPersistentVolumeClaimRetentionPolicyType, policy.WhenDeleted, "the claims kept when the StatefulSet goes")
	}
	owned := 0
	for _, list := range []client.ObjectList{
		&appsv1.StatefulSetList{}, &corev1.SecretList{}, &corev1.ConfigMapList{}, &corev1.ServiceList{},
		&rbacv1.RoleList{}, &rbacv1.RoleBindingList{},
	} {
		require.NoError(t, e.c.List(t.Context(), list, client.InNamespace(ns)))
		items, err := listItems(list)
		require.NoError(t, err)
		for _, obj := range items {
			if !strings.HasPrefix(obj.GetName(), s.stsName()) && obj.GetName() != "prometheus-operated" {
				continue
			}
			if obj.GetName() == "prometheus-operated" {
				require.True(t, slices.ContainsFunc(obj.GetOwnerReferences(), func(o metav1.OwnerReference) bool { return o.UID == s.uid }),
					"Service prometheus-operated: owner references %+v", obj.GetOwnerReferences())
				continue
			}
			require.NoError(t, s.ownedOnlyBy(obj))
			owned++
		}
	}
	t.Logf("%d objects go with the Prometheus", owned)
	require.GreaterOrEqual(t, owned, 3, "the StatefulSet, config Secret and rule ConfigMap at least")
	for _, ev := range e.audit(t, ns) {
		if ev.writer() == controller.Name && ev.StageTimestamp.After(gone) && strings.HasPrefix(ev.ObjectRef.Name, s.stsName()) {
			t.Errorf("the controller wrote %s %s/%s after the Prometheus was gone", ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Name)
		}
	}
}
