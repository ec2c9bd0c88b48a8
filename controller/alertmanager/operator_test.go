package alertmanager

import (
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/operator"
)

// reloaderOf returns the image of sts' config-reloader container, "" when
// it has none.
func reloaderOf(sts *appsv1.StatefulSet) string {
	i := slices.IndexFunc(sts.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == "config-reloader" })
	if i < 0 {
		return ""
	}
	return sts.Spec.Template.Spec.Containers[i].Image
}

// volumeOf is the volume name of sts' pods.
func volumeOf(t *testing.T, sts *appsv1.StatefulSet, name string) corev1.Volume {
	t.Helper()
	vols := sts.Spec.Template.Spec.Volumes
	i := slices.IndexFunc(vols, func(v corev1.Volume) bool { return v.Name == name })
	require.GreaterOrEqual(t, i, 0, "StatefulSet %s: no volume %s", sts.Name, name)
	return vols[i]
}

// mountOf is the mount of the volume name in the alertmanager container
// of sts' pods.
func mountOf(t *testing.T, sts *appsv1.StatefulSet, name string) corev1.VolumeMount {
	t.Helper()
	mounts := sts.Spec.Template.Spec.Containers[0].VolumeMounts
	i := slices.IndexFunc(mounts, func(m corev1.VolumeMount) bool { return m.Name == name })
	require.GreaterOrEqual(t, i, 0, "StatefulSet %s: no mount of %s", sts.Name, name)
	return mounts[i]
}

// testOperator runs prometheus-operator's own operator (v0.93.1, default
// controller id) on the control plane: it writes an Alertmanager's
// objects; annotated, the Alertmanager is taken over in place, the
// operator's objects adopted; the annotation removed, the operator takes
// it back, in place too. No kubelet runs: the StatefulSet is what is
// compared.
func testOperator(t *testing.T, env *controlplane.ControlPlane) {
	c := controlplane.NewClient(t, env.Config, AddToScheme)
	ctx := t.Context()
	ns := "am-operator"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	operator.Start(t, env.Kubeconfig, "")

	// Its base configuration from an AlertmanagerConfig, with templates.
	require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "smtp"}, Data: map[string][]byte{"password": []byte("x")}}))
	require.NoError(t, c.Create(ctx, globalConfigObject(ns, "http://hook.example/")))
	am := globalAlertmanager(ns)
	delete(am.Annotations, takeover.AnnotationControllerID)
	am.Spec.AdditionalPeers = nil
	require.NoError(t, c.Create(ctx, am))
	key := client.ObjectKey{Namespace: ns, Name: "alertmanager-main"}
	var opSTS appsv1.StatefulSet
	eventually(t, func(ct *assert.CollectT) {
		if assert.NoError(ct, c.Get(ctx, key, &opSTS)) {
			assert.Contains(ct, reloaderOf(&opSTS), "prometheus-config-reloader", "the operator's reloader")
		}
	})
	var opSecret corev1.Secret
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alertmanager-main-generated"}, &opSecret))

	start(t, env.Config, ns)
	controlplane.Edit(t, c, am, func(a *monitoringv1.Alertmanager) {
		a.Annotations = map[string]string{takeover.AnnotationControllerID: "podreload"}
	})
	var sts appsv1.StatefulSet
	eventually(t, func(ct *assert.CollectT) {
		if assert.NoError(ct, c.Get(ctx, key, &sts)) {
			assert.Equal(ct, "podreload:test", reloaderOf(&sts), "our reloader")
		}
	})
	require.Equal(t, opSTS.UID, sts.UID, "adopted in place")
	require.Equal(t, opSTS.Spec.Selector, sts.Spec.Selector)
	require.Equal(t, opSTS.Spec.VolumeClaimTemplates[0].Name, sts.Spec.VolumeClaimTemplates[0].Name, "the same PVCs")
	require.Equal(t, opSTS.Spec.Template.Spec.Containers[0].Args[:3], sts.Spec.Template.Spec.Containers[0].Args[:3], "config, storage and retention as the operator's")
	// spec.alertmanagerConfiguration's templates: the same volume, mounted
	// at the same path.
	require.Equal(t, volumeOf(t, &opSTS, templatesVolume), volumeOf(t, &sts, templatesVolume))
	require.Equal(t, mountOf(t, &opSTS, templatesVolume), mountOf(t, &sts, templatesVolume))
	var generated corev1.Secret
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(&opSecret), &generated))
	require.Equal(t, opSecret.UID, generated.UID, "the generated Secret adopted in place")

	// Handed back: the operator rewrites the StatefulSet, in place.
	controlplane.Edit(t, c, am, func(a *monitoringv1.Alertmanager) { a.Annotations = nil })
	eventually(t, func(ct *assert.CollectT) {
		if assert.NoError(ct, c.Get(ctx, key, &sts)) {
			assert.Contains(ct, reloaderOf(&sts), "prometheus-config-reloader", "the operator's reloader again")
		}
	})
	require.Equal(t, opSTS.UID, sts.UID, "taken back in place")
	require.Equal(t, opSTS.Spec.VolumeClaimTemplates[0].Name, sts.Spec.VolumeClaimTemplates[0].Name)

	createPeerTLS(t, c, ns, true)
	createPeerTLS(t, c, ns, false)
	for _, version := range []string{"v0.25.0", "v0.28.1"} {
		t.Run(version, func(t *testing.T) { testOperatorVersion(t, c, ns, version) })
	}
}

// testOperatorVersion: an Alertmanager of version, older than v0.30,
// setting every field whose flag prometheus-operator gates on the
// version, cluster TLS, a patch of Alertmanager's container and a
// container of its own, gets from the controller the flags, the
// variables, the cluster TLS file and mounts and the containers the
// operator wrote for it.
func testOperatorVersion(t *testing.T, c client.Client, ns, version string) {
	ctx := t.Context()
	am := gatedAlertmanager()
	name := "v" + strings.NewReplacer("v", "", ".", "-").Replace(version)
	am.Namespace, am.Name, am.Annotations = ns, name, nil
	am.Spec.Version = version
	am.Spec.Secrets = nil
	// A patch of Alertmanager's container, and a container of the user's.
	am.Spec.Containers = []corev1.Container{
		{Name: "alertmanager", Env: []corev1.EnvVar{{Name: "HTTP_PROXY", Value: "http://proxy:3128"}}},
		{Name: "kube-rbac-proxy", Image: "quay.io/brancz/kube-rbac-proxy:v0.19.0", Args: []string{"--upstream=http://127.0.0.1:9093/"}},
	}
	require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: stsName(name)}, Data: map[string][]byte{baseKey: []byte(baseConfig)}}))
	require.NoError(t, c.Create(ctx, am))
	key := client.ObjectKey{Namespace: ns, Name: stsName(name)}
	var opSTS appsv1.StatefulSet
	eventually(t, func(ct *assert.CollectT) {
		if assert.NoError(ct, c.Get(ctx, key, &opSTS)) {
			assert.Contains(ct, reloaderOf(&opSTS), "prometheus-config-reloader", "the operator's reloader")
		}
	})
	tlsKey := client.ObjectKey{Namespace: ns, Name: clusterTLSName(name)}
	var opTLS corev1.Secret
	require.NoError(t, c.Get(ctx, tlsKey, &opTLS))
	controlplane.Edit(t, c, am, func(a *monitoringv1.Alertmanager) {
		a.Annotations = map[string]string{takeover.AnnotationControllerID: "podreload"}
	})
	var sts appsv1.StatefulSet
	eventually(t, func(ct *assert.CollectT) {
		if assert.NoError(ct, c.Get(ctx, key, &sts)) {
			assert.Equal(ct, "podreload:test", reloaderOf(&sts), "our reloader")
		}
	})
	// spec.clusterTLS: the operator's file, volumes and mounts.
	var tlsSecret corev1.Secret
	require.NoError(t, c.Get(ctx, tlsKey, &tlsSecret))
	require.Equal(t, string(opTLS.Data[clusterTLSKey]), string(tlsSecret.Data[clusterTLSKey]))
	opVols, opMounts := clusterTLSParts(&opSTS)
	vols, mounts := clusterTLSParts(&sts)
	require.Len(t, opVols, 7, "the file's and six sources'")
	require.Equal(t, opVols, vols)
	require.Equal(t, opMounts, mounts)
	op, ours := opSTS.Spec.Template.Spec.Containers[0], sts.Spec.Template.Spec.Containers[0]
	require.Equal(t, op.Image, ours.Image)
	require.Equal(t, op.Args, ours.Args, "Alertmanager's flags as the operator's")
	require.Equal(t, op.Env, ours.Env, "the patch merged as the operator merges it")
	require.Equal(t, names(opSTS.Spec.Template.Spec.Containers), names(sts.Spec.Template.Spec.Containers))
	require.Equal(t, opSTS.Spec.Template.Spec.Containers[2], sts.Spec.Template.Spec.Containers[2], "the user's container, appended")
	require.Equal(t, op.LivenessProbe.HTTPGet, ours.LivenessProbe.HTTPGet)
	require.Equal(t, opSTS.Spec.Template.Labels[labelVersion], sts.Spec.Template.Labels[labelVersion])
}

// clusterTLSParts are the volumes of spec.clusterTLS in sts' pods and
// their mounts in Alertmanager.
func clusterTLSParts(sts *appsv1.StatefulSet) ([]corev1.Volume, []corev1.VolumeMount) {
	var (
		vols   []corev1.Volume
		mounts []corev1.VolumeMount
	)
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if strings.HasPrefix(v.Name, "cluster-tls-") {
			vols = append(vols, v)
		}
	}
	for _, m := range sts.Spec.Template.Spec.Containers[0].VolumeMounts {
		if strings.HasPrefix(m.Name, "cluster-tls-") {
			mounts = append(mounts, m)
		}
	}
	return vols, mounts
}
