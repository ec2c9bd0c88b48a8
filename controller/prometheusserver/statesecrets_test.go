package prometheusserver

import (
	"slices"
	"testing"

	promkind "github.com/podreload/podreload/controller/prometheus"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/sidecar"
	"github.com/podreload/podreload/controller/takeover"
)

// testStateSecrets: without a claim, each pod gets a state Secret, empty,
// controlled by its server, which the controller creates when missing and
// empties with its pod (scale-down) or when the storage becomes a claim,
// and never writes otherwise: what the reloader writes in it stays, and
// renders nothing.
func (cp *controlPlane) testStateSecrets(t *testing.T) {
	ns := cp.namespace(t, "state-secrets", nil)
	run := cp.start(t, kube.Options{Namespaces: []string{ns}})
	srv := server(ns, "main", func(s *v1alpha1.PrometheusServerSpec) { s.Replicas = ptr.To[int32](2) })
	cp.create(t, srv)
	require.NoError(t, cp.c.Get(t.Context(), client.ObjectKeyFromObject(srv), srv))
	secretsAre := func(what string, want ...string) {
		t.Helper()
		eventually(t, func(c *assert.CollectT) {
			var list corev1.SecretList
			if !assert.NoError(c, cp.c.List(t.Context(), &list, client.InNamespace(ns), client.MatchingLabels{sidecar.LabelState: "main"})) {
				return
			}
			names := []string{}
			for _, s := range list.Items {
				if s.DeletionTimestamp == nil {
					names = append(names, s.Name)
					assert.True(c, metav1.IsControlledBy(&s, srv), "%s controlled by the server", s.Name)
				}
			}
			slices.Sort(names)
			assert.Equal(c, append([]string{}, want...), names, what)
		})
	}
	secretsAre("created", "main-0-reloader-state", "main-1-reloader-state")

	// What the reloader writes stays, and renders nothing.
	run.settle(t)
	renders, writes := metricValue(t, run.reg, "podreload_controller_reconciles_total"), len(run.Writes())
	state := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main-0-reloader-state"}}
	require.NoError(t, cp.c.Patch(t.Context(), state, client.RawPatch(types.MergePatchType, []byte(`{"data":{"accepted.tar.gz":"YQ=="}}`))))
	require.Empty(t, run.settleOrNone(t)[writes:], "writes after the reloader's")
	require.Equal(t, renders, metricValue(t, run.reg, "podreload_controller_reconciles_total"), "renders for a reloader's write")
	edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) { s.Spec.ScrapeInterval = "17s" })
	eventually(t, func(c *assert.CollectT) { assert.Contains(c, cp.config(t, srv), "scrape_interval: 17s") })
	require.NoError(t, cp.c.Get(t.Context(), client.ObjectKeyFromObject(state), state))
	require.Equal(t, map[string][]byte{"accepted.tar.gz": []byte("a")}, state.Data, "the reloader's data, after a render")

	// A state Secret deleted is created again, empty.
	require.NoError(t, cp.c.Delete(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main-1-reloader-state"}}))
	edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) { s.Spec.ScrapeInterval = "18s" })
	secretsAre("created again", "main-0-reloader-state", "main-1-reloader-state")

	// Scale-down: the pod's state Secret is deleted, the other stays as
	// it is.
	retired := func(name string) {
		t.Helper()
		eventually(t, func(c *assert.CollectT) {
			var s corev1.Secret
			err := cp.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &s)
			assert.True(c, apierrors.IsNotFound(err), "%s deleted: %v", name, err)
		})
	}
	require.NoError(t, cp.c.Patch(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main-1-reloader-state"}},
		client.RawPatch(types.MergePatchType, []byte(`{"data":{"accepted.tar.gz":"Yg=="}}`))))
	edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) { s.Spec.Replicas = ptr.To[int32](1) })
	secretsAre("scaled down", "main-0-reloader-state")
	retired("main-1-reloader-state")
	require.NoError(t, cp.c.Get(t.Context(), client.ObjectKeyFromObject(state), state))
	require.Equal(t, map[string][]byte{"accepted.tar.gz": []byte("a")}, state.Data)

	// Scaled up again: the pod's Secret created again, empty.
	edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) { s.Spec.Replicas = ptr.To[int32](2) })
	secretsAre("scaled up", "main-0-reloader-state", "main-1-reloader-state")

	// On a claim, the state is kept there: the Secrets are deleted.
	edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) {
		s.Spec.Storage = &v1alpha1.StorageSpec{VolumeClaimTemplate: &monitoringv1.EmbeddedPersistentVolumeClaim{
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}}
	})
	secretsAre("a claim")
	retired("main-0-reloader-state")
	retired("main-1-reloader-state")
}

// testStateSecretsTakeover: a Prometheus taken over without storage gets
// the state Secrets of prometheus-operator's pod names; handed back, they
// are deleted once no pod runs our sidecar.
func (cp *controlPlane) testStateSecretsTakeover(t *testing.T) {
	ns := cp.namespace(t, "state-secrets-takeover", nil)
	p := operatorPrometheus(ns, "k8s", "podreload")
	p.Spec.Storage = nil
	cp.create(t, p)
	cp.startTakingOver(t, kube.Options{Namespaces: []string{ns}}, &takeover.Options{ControllerID: "podreload"})
	names := []string{"prometheus-k8s-0-reloader-state", "prometheus-k8s-1-reloader-state"}
	eventually(t, func(c *assert.CollectT) {
		for _, name := range names {
			var s corev1.Secret
			if assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &s)) {
				assert.True(c, metav1.IsControlledBy(&s, p), "%s controlled by the Prometheus", name)
				assert.Equal(c, "k8s", s.Labels[sidecar.LabelState])
			}
		}
	})
	require.NoError(t, cp.c.Patch(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names[0]}},
		client.RawPatch(types.MergePatchType, []byte(`{"data":{"accepted.tar.gz":"YQ=="}}`))))

	edit(t, cp.c, p, func(p *monitoringv1.Prometheus) { p.Annotations[promkind.AnnotationControllerID] = "" })
	eventually(t, func(c *assert.CollectT) {
		for _, name := range names {
			var s corev1.Secret
			err := cp.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &s)
			assert.True(c, apierrors.IsNotFound(err), "%s deleted: %v", name, err)
		}
	}, "handed back: the state Secrets deleted")
}
