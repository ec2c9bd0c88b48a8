package prometheusserver

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promserver"
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
		eventually(t, func(c *assert.CollectT) {
			var sts appsv1.StatefulSet
			if assert.NoError(c, cp.c.Get(t.Context(), key, &sts)) {
				assert.Equal(c, want, containerImages(&sts))
			}
		})
	}
	replaceImage := func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "example.com/other:latest" }
	removeReloader := func(s *appsv1.StatefulSet) {
		s.Spec.Template.Spec.Containers = slices.DeleteFunc(s.Spec.Template.Spec.Containers, func(c corev1.Container) bool {
			return c.Name == "config-reloader"
		})
	}

	t.Run("while running", func(t *testing.T) {
		run := cp.start(t, kube.Options{Namespaces: []string{ns}})
		cp.create(t, srv)
		var sts appsv1.StatefulSet
		cp.waitFor(t, key, &sts)
		require.Equal(t, want, containerImages(&sts))
		cp.waitReconciled(t, srv, metav1.ConditionTrue, "Reconciled", "")
		require.Zero(t, metricValue(t, run.reg, "podreload_controller_drift_corrected_total", "kind", "StatefulSet"))

		for i, change := range []func(*appsv1.StatefulSet){replaceImage, removeReloader} {
			edit(t, cp.c, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: srv.Name}}, change)
			waitRestored(t)
			eventually(t, func(c *assert.CollectT) {
				assert.Equal(c, float64(i+1), metricValue(t, run.reg, "podreload_controller_drift_corrected_total", "kind", "StatefulSet"))
			})
		}
		cp.waitReconciled(t, srv, metav1.ConditionTrue, "Reconciled", "")

		// Once restored, nothing more is written: the StatefulSet holds
		// what the controller applies, and it is not applied again.
		settled := run.settle(t)
		reconciles := metricValue(t, run.reg, "podreload_controller_reconciles_total")
		edit(t, cp.c, &v1alpha1.PrometheusServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: srv.Name}}, func(s *v1alpha1.PrometheusServer) {
			s.Labels = labelsOf("unrelated", "label")
		})
		eventually(t, func(c *assert.CollectT) {
			assert.Greater(c, metricValue(t, run.reg, "podreload_controller_reconciles_total"), reconciles)
		})
		require.Equal(t, settled, run.settle(t), "no write once restored")
	})

	// The controller is stopped: both edits are made, and a new
	// controller puts everything back when it starts.
	edit(t, cp.c, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: srv.Name}}, func(s *appsv1.StatefulSet) {
		replaceImage(s)
		removeReloader(s)
	})
	t.Run("after a restart", func(t *testing.T) {
		run := cp.start(t, kube.Options{Namespaces: []string{ns}})
		waitRestored(t)
		eventually(t, func(c *assert.CollectT) {
			assert.Equal(c, 1.0, metricValue(t, run.reg, "podreload_controller_drift_corrected_total", "kind", "StatefulSet"))
		})
		cp.waitReconciled(t, srv, metav1.ConditionTrue, "Reconciled", "")
	})
}

// testUpgrade starts the controller on a StatefulSet written the way
// earlier versions wrote it, with updates: the fields it no longer sets
// are removed all the same, once its fields become applied ones.
func (cp *controlPlane) testUpgrade(t *testing.T) {
	ns := cp.namespace(t, "upgrade", nil)
	srv := server(ns, "main", nil)
	cp.create(t, srv)
	_, old := promserver.RenderWorkload(promserver.OwnTarget(srv), promserver.PodOptions{WorkloadOptions: promserver.WorkloadOptions{DefaultPrometheusImage: "prom/prometheus:test", DefaultReloaderImage: "podreload:test"}})
	want := old.Spec.Template.Annotations[promserver.AnnotationInputHash]
	require.NoError(t, controllerutil.SetControllerReference(srv, old, cp.c.Scheme()))
	old.Spec.Template.Annotations[promserver.AnnotationInputHash] = "earlier"
	old.Spec.Template.Spec.Volumes = append(old.Spec.Template.Spec.Volumes, corev1.Volume{
		Name: "legacy", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
	})
	require.NoError(t, cp.c.Create(t.Context(), old, client.FieldOwner(kube.Name)))

	cp.start(t, kube.Options{Namespaces: []string{ns}})
	eventually(t, func(c *assert.CollectT) {
		var sts appsv1.StatefulSet
		if assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKeyFromObject(srv), &sts)) {
			assert.Equal(c, want, sts.Spec.Template.Annotations[promserver.AnnotationInputHash])
			assert.False(c, slices.ContainsFunc(sts.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "legacy" }),
				"the volume only an earlier version set is removed")
		}
	})
}

// testSidecarKept: a StatefulSet an earlier controller wrote, whose pods
// run its config-reloader image, is not written by a controller whose
// default image is another, when nothing else changed (an upgrade rolls
// no pod); a change to the pods brings them the new image.
func (cp *controlPlane) testSidecarKept(t *testing.T) {
	ns := cp.namespace(t, "sidecar-kept", nil)
	srv := server(ns, "main", nil)
	cp.create(t, srv)
	_, old := promserver.RenderWorkload(promserver.OwnTarget(srv), promserver.PodOptions{WorkloadOptions: promserver.WorkloadOptions{DefaultPrometheusImage: "prom/prometheus:test", DefaultReloaderImage: "podreload:previous"}})
	require.NoError(t, controllerutil.SetControllerReference(srv, old, cp.c.Scheme()))
	require.NoError(t, cp.c.Create(t.Context(), old, client.FieldOwner(kube.Name)))
	reloaderImage := func(sts *appsv1.StatefulSet) []string {
		var images []string
		for _, c := range slices.Concat(sts.Spec.Template.Spec.InitContainers, sts.Spec.Template.Spec.Containers) {
			if strings.Contains(c.Name, "config-reloader") {
				images = append(images, c.Image)
			}
		}
		return images
	}

	run := cp.start(t, kube.Options{Namespaces: []string{ns}})
	for _, w := range run.settle(t) {
		require.NotContains(t, w, "/statefulsets/", "the StatefulSet is written: its pods would roll")
	}
	var sts appsv1.StatefulSet
	require.NoError(t, cp.c.Get(t.Context(), client.ObjectKeyFromObject(srv), &sts))
	require.Equal(t, []string{"podreload:previous", "podreload:previous"}, reloaderImage(&sts))
	require.Equal(t, old.Spec.Template.Annotations[promserver.AnnotationInputHash], sts.Spec.Template.Annotations[promserver.AnnotationInputHash])
	require.Equal(t, "True", string(meta.FindStatusCondition(cp.status(t, srv).Conditions, "Reconciled").Status))

	edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) { s.Spec.LogLevel = "debug" })
	eventually(t, func(c *assert.CollectT) {
		var sts appsv1.StatefulSet
		if assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKeyFromObject(srv), &sts)) {
			assert.Equal(c, []string{"podreload:test", "podreload:test"}, reloaderImage(&sts))
		}
	})
}
