package sidecar

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestContainers checks what every kind's reloaders get: the init
// container renders once, the sidecar reports and serves, in this order
// of flags, and only the sidecar has the sidecar's mounts.
func TestContainers(t *testing.T) {
	src, web := corev1.VolumeMount{Name: "src"}, corev1.VolumeMount{Name: "ca"}
	init, side := Containers(Spec{
		Image:         "reloader:v1",
		Env:           []corev1.EnvVar{{Name: "SHARD", Value: "1"}},
		SourceArgs:    []string{"--config-file=/in", "--config-envsubst-file=/out"},
		ReloadArgs:    []string{"--reload-url=https://localhost:9093/-/reload", "--reload-tls-ca-file=/ca"},
		Mounts:        []corev1.VolumeMount{src},
		SidecarMounts: []corev1.VolumeMount{web},
	})
	require.Equal(t, "init-config-reloader", init.Name)
	require.Equal(t, []string{"--watch-interval=0", "--config-file=/in", "--config-envsubst-file=/out"}, init.Args)
	require.Equal(t, []corev1.VolumeMount{src}, init.VolumeMounts)
	require.Equal(t, "config-reloader", side.Name)
	require.Equal(t, []string{"--config-file=/in", "--config-envsubst-file=/out", "--report-pod=$(POD_NAMESPACE)/$(POD_NAME)",
		"--reload-url=https://localhost:9093/-/reload", "--reload-tls-ca-file=/ca", "--listen-address=:8080"}, side.Args)
	require.Equal(t, []corev1.VolumeMount{src, web}, side.VolumeMounts)
	require.Equal(t, int32(Port), side.Ports[0].ContainerPort)
	for _, c := range []corev1.Container{init, side} {
		require.Equal(t, "reloader:v1", c.Image)
		names := make([]string, len(c.Env))
		for i, e := range c.Env {
			names[i] = e.Name
		}
		require.Equal(t, []string{"POD_NAME", "POD_NAMESPACE", "SHARD"}, names, c.Name)
	}
	// Without a token to report with.
	_, side = Containers(Spec{SourceArgs: []string{"--config-file=/in"}, ReloadArgs: []string{"--reload-url=http://127.0.0.1:9093/-/reload"}, NoReport: true})
	require.Equal(t, []string{"--config-file=/in", "--reload-url=http://127.0.0.1:9093/-/reload", "--listen-address=:8080"}, side.Args)
}

// TestRole checks that the reloaders get what they need and nothing more:
// no rule without names where names are the limit.
func TestRole(t *testing.T) {
	role, binding := Role(Access{Name: "main-config-reloader", Namespace: "ns", Labels: map[string]string{"a": "b"},
		Secrets: []string{"main-config"}, ConfigMaps: true, Pods: []string{"main-0"}, StateSecrets: []string{"main-0-reloader-state"}})
	require.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"main-config"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"main-0-reloader-state"}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"main-0"}, Verbs: []string{"patch"}},
	}, role.Rules)
	require.Equal(t, "default", binding.Subjects[0].Name)
	require.Equal(t, role.Name, binding.RoleRef.Name)
	require.Equal(t, role.Labels, binding.Labels)

	role, binding = Role(Access{Name: "r", Namespace: "ns", ServiceAccount: "prom"})
	require.Empty(t, role.Rules, "no Secret, ConfigMap, pod or state Secret: no rule, never one without resourceNames")
	require.NotNil(t, role.Rules, "an empty list, as the API server returns it")
	require.Equal(t, "prom", binding.Subjects[0].Name)
}
