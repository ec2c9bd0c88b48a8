package takeover

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestMergeContainers: a container of the spec named as a rendered one
// is a strategic merge patch of it (env and volume mounts merged by
// their keys, args replaced, the fields it does not set kept), the others
// appended in their order; a probe left with two handlers keeps the
// patch's.
func TestMergeContainers(t *testing.T) {
	base := []corev1.Container{
		{
			Name: "server", Image: "server:1", Args: []string{"--a", "--b"},
			Env:          []corev1.EnvVar{{Name: "X", Value: "1"}, {Name: "Y", Value: "2"}},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/-/healthy", Port: intstr.FromString("web")}},
				TimeoutSeconds: 3},
		},
		{Name: "reloader", Image: "reloader:1", Args: []string{"--r"}},
	}
	got, err := MergeContainers(base, []corev1.Container{
		{Name: "proxy", Image: "proxy:1"},
		{Name: "reloader", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("50Mi")}}},
		{
			Name: "server", Args: []string{"--c"},
			Env:           []corev1.EnvVar{{Name: "Y", Value: "3"}, {Name: "Z", Value: "4"}},
			VolumeMounts:  []corev1.VolumeMount{{Name: "extra", MountPath: "/extra"}},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9093)}}},
		},
		{Name: "sidecar", Image: "sidecar:1"},
	})
	require.NoError(t, err)
	want := []corev1.Container{
		{
			Name: "server", Image: "server:1", Args: []string{"--c"},
			Env:          []corev1.EnvVar{{Name: "X", Value: "1"}, {Name: "Y", Value: "3"}, {Name: "Z", Value: "4"}},
			VolumeMounts: []corev1.VolumeMount{{Name: "extra", MountPath: "/extra"}, {Name: "data", MountPath: "/data"}},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9093)}},
				TimeoutSeconds: 3},
		},
		{Name: "reloader", Image: "reloader:1", Args: []string{"--r"}, Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("50Mi")}}},
		{Name: "proxy", Image: "proxy:1"},
		{Name: "sidecar", Image: "sidecar:1"},
	}
	require.Empty(t, cmp.Diff(want, got))

	got, err = MergeContainers(base, nil)
	require.NoError(t, err)
	require.Equal(t, base, got, "no patch, the rendered ones")
}

// TestPatchesOnly: a patch of a named container that sets its image,
// command or args is not one.
func TestPatchesOnly(t *testing.T) {
	require.True(t, PatchesOnly([]corev1.Container{{Name: "config-reloader", Env: []corev1.EnvVar{{Name: "A"}}}, {Name: "proxy", Args: []string{"--x"}}}, "config-reloader"))
	for _, c := range []corev1.Container{
		{Name: "config-reloader", Image: "quay.io/prometheus-operator/prometheus-config-reloader:v0.94.1"},
		{Name: "config-reloader", Command: []string{"/bin/sh"}},
		{Name: "config-reloader", Args: []string{"--reload-url=http://localhost:9093/-/reload"}},
	} {
		require.False(t, PatchesOnly([]corev1.Container{c}, "config-reloader"), c)
	}
}
