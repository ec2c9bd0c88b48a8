package webconfig

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestOperatorPodParts: in prometheus-operator's layout the Secret is
// mounted without spec.web too, with a sub-path, and the TLS files as
// PodParts mounts them.
func TestOperatorPodParts(t *testing.T) {
	for name, web := range map[string]*monitoringv1.WebConfigFileFields{"no spec.web": nil, "tlsConfig": tlsWeb("", nil)} {
		t.Run(name, func(t *testing.T) {
			pod := OperatorPodParts(dirs(), "web-secret", web, Reload{})
			require.Equal(t, "web-config", pod.Volumes[0].Name)
			require.Equal(t, "web-secret", pod.Volumes[0].Secret.SecretName)
			require.Equal(t, corev1.VolumeMount{Name: "web-config", MountPath: "/etc/web/" + SecretKey, SubPath: SecretKey, ReadOnly: true}, pod.ServerMounts[0])
			if web == nil {
				require.Len(t, pod.Volumes, 1)
				require.Len(t, pod.ServerMounts, 1)
				require.Equal(t, "http", pod.Scheme)
				return
			}
			plain := PodParts(dirs(), "web-secret", web, Reload{})
			require.Equal(t, plain.Volumes, pod.Volumes)
			require.Equal(t, plain.ServerMounts[1:], pod.ServerMounts[1:])
			require.Equal(t, "https", pod.Scheme)
		})
	}
	require.Empty(t, PodParts(dirs(), "web-secret", nil, Reload{}).Volumes, "the own layout mounts nothing without spec.web")
}

// TestSecret: the file at SecretKey, as the pods mount it.
func TestSecret(t *testing.T) {
	s := Secret("ns", "main-web-config", map[string]string{"app": "x"}, []byte{})
	require.Equal(t, metav1.ObjectMeta{Namespace: "ns", Name: "main-web-config", Labels: map[string]string{"app": "x"}}, s.ObjectMeta)
	require.Equal(t, map[string][]byte{SecretKey: {}}, s.Data)
	require.Equal(t, corev1.SecretTypeOpaque, s.Type)
	require.Equal(t, "Secret", s.Kind)
}
