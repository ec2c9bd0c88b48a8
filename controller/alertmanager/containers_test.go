package alertmanager

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestContainersMerged: spec.containers and spec.initContainers named as
// a rendered container patch it, as prometheus-operator merges them
// (OpenShift's and Bitnami's Alertmanagers set resources and extra
// mounts so); the others are appended after the rendered ones.
func TestContainersMerged(t *testing.T) {
	am := testAlertmanager("monitoring", "main", "podreload")
	limits := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("50Mi")}}
	am.Spec.Containers = []corev1.Container{
		{Name: "kube-rbac-proxy", Image: "quay.io/brancz/kube-rbac-proxy:v0.19.0"},
		{Name: "config-reloader", Resources: limits},
		{Name: "alertmanager", Env: []corev1.EnvVar{{Name: "HTTP_PROXY", Value: "http://proxy:3128"}}, VolumeMounts: []corev1.VolumeMount{{Name: "ca", MountPath: "/etc/pki/ca"}}},
	}
	am.Spec.InitContainers = []corev1.Container{{Name: "init-config-reloader", Resources: limits}}
	require.Empty(t, fromAlertmanager(am))
	objs, err := render(inputs{am: am, config: []byte("x")})
	require.NoError(t, err)
	pod := objs.sts.Spec.Template.Spec
	require.Equal(t, []string{"alertmanager", "config-reloader", "kube-rbac-proxy"}, names(pod.Containers))
	require.Equal(t, []string{"init-config-reloader"}, names(pod.InitContainers))
	amc := pod.Containers[0]
	require.Equal(t, "quay.io/prometheus/alertmanager:v0.34.0", amc.Image, "what the patch does not set is kept")
	require.Contains(t, amc.Env, corev1.EnvVar{Name: "HTTP_PROXY", Value: "http://proxy:3128"})
	require.Equal(t, []string{"HTTP_PROXY", "POD_IP", "POD_NAME"}, envNames(amc.Env), "merged by name with the rendered ones")
	require.Contains(t, amc.VolumeMounts, corev1.VolumeMount{Name: "ca", MountPath: "/etc/pki/ca"})
	require.Contains(t, amc.VolumeMounts, corev1.VolumeMount{Name: "config-out", MountPath: "/etc/alertmanager/config_out", ReadOnly: true})
	require.Contains(t, amc.Args, "--config.file=/etc/alertmanager/config_out/alertmanager.env.yaml")
	for _, c := range []corev1.Container{pod.Containers[1], pod.InitContainers[0]} {
		require.Equal(t, limits, c.Resources, c.Name)
		require.Contains(t, c.Args, "--config-secret=monitoring/alertmanager-main-generated", c.Name)
	}

	// A config-reloader patch of prometheus-operator's image or flags is
	// refused: podreload's reloader takes neither.
	am.Spec.Containers = []corev1.Container{{Name: "config-reloader", Args: []string{"--reload-url=http://127.0.0.1:9093/-/reload"}}}
	require.Equal(t, []string{"containers"}, fromAlertmanager(am))
}

func envNames(env []corev1.EnvVar) []string {
	out := make([]string, len(env))
	for i, e := range env {
		out[i] = e.Name
	}
	return out
}
