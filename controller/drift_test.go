package controller

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
)

// containerImages returns "name=image" for each container of sts, in order.
func containerImages(sts *appsv1.StatefulSet) []string {
	var out []string
	for _, c := range sts.Spec.Template.Spec.Containers {
		out = append(out, c.Name+"="+c.Image)
	}
	return out
}

// testDrift edits the pod template of a StatefulSet the controller wrote,
// as a user would with kubectl edit: the controller puts it back, counts
// it, and does so as well for an edit made while it was not running.
func (cp *controlPlane) testDrift(t *testing.T) {
	ns := cp.namespace(t, "drift", nil)
	srv := server(ns, "main", nil)
	key := client.ObjectKeyFromObject(srv)
	want := []string{"prometheus=prom/prometheus:test", "config-reloader=podreload:test"}
	waitRestored := func(t *testing.T) {
		t.Helper()
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			var sts appsv1.StatefulSet
			if assert.NoError(c, cp.c.Get(t.Context(), key, &sts)) {
				assert.Equal(c, want, containerImages(&sts))
			}
		}, deadline, 20*time.Millisecond)
	}
	replaceImage := func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "example.com/other:latest" }
	removeReloader := func(s *appsv1.StatefulSet) {
		s.Spec.Template.Spec.Containers = slices.DeleteFunc(s.Spec.Template.Spec.Containers, func(c corev1.Container) bool {
			return c.Name == "config-reloader"
		})
	}

	t.Run("while running", func(t *testing.T) {
		run := cp.start(t, Options{Namespaces: []string{ns}})
		cp.create(t, srv)
		var sts appsv1.StatefulSet
		cp.waitFor(t, key, &sts)
		require.Equal(t, want, containerImages(&sts))
		cp.waitReconciled(t, srv, metav1.ConditionTrue, "Reconciled", "")
		require.Zero(t, metricValue(t, run.reg, "podreload_controller_drift_corrected_total", "kind", "StatefulSet"))

		for i, change := range []func(*appsv1.StatefulSet){replaceImage, removeReloader} {
			edit(t, cp.c, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: srv.Name}}, change)
			waitRestored(t)
			require.Eventually(t, func() bool {
				return metricValue(t, run.reg, "podreload_controller_drift_corrected_total", "kind", "StatefulSet") == float64(i+1)
			}, deadline, 20*time.Millisecond)
		}
		cp.waitReconciled(t, srv, metav1.ConditionTrue, "Reconciled", "")

		// Once restored, nothing more is written: the StatefulSet holds
		// what the controller applies, and it is not applied again.
		settled := run.settle(t)
		reconciles := metricValue(t, run.reg, "podreload_controller_reconciles_total")
		edit(t, cp.c, &v1alpha1.PrometheusServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: srv.Name}}, func(s *v1alpha1.PrometheusServer) {
			s.Labels = labelsOf("unrelated", "label")
		})
		require.Eventually(t, func() bool {
			return metricValue(t, run.reg, "podreload_controller_reconciles_total") > reconciles
		}, deadline, 20*time.Millisecond)
		require.Equal(t, settled, run.settle(t), "no write once restored")
	})

	// The controller is stopped: both edits are made, and a new
	// controller puts everything back when it starts.
	edit(t, cp.c, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: srv.Name}}, func(s *appsv1.StatefulSet) {
		replaceImage(s)
		removeReloader(s)
	})
	t.Run("after a restart", func(t *testing.T) {
		run := cp.start(t, Options{Namespaces: []string{ns}})
		waitRestored(t)
		require.Eventually(t, func() bool {
			return metricValue(t, run.reg, "podreload_controller_drift_corrected_total", "kind", "StatefulSet") == 1
		}, deadline, 20*time.Millisecond)
		cp.waitReconciled(t, srv, metav1.ConditionTrue, "Reconciled", "")
	})
}
