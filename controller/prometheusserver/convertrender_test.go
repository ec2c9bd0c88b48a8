package prometheusserver

import (
	"os"
	"testing"

	promkind "github.com/podreload/podreload/controller/prometheus"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/internal/testenv/promfixture"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// TestConvertKubePrometheusStack: kube-prometheus-stack's default
// Prometheus is taken over, with the values it sets.
func TestConvertKubePrometheusStack(t *testing.T) {
	data, err := os.ReadFile("../prometheus/testdata/operator/kube-prometheus-stack.yaml")
	require.NoError(t, err)
	p := &monitoringv1.Prometheus{}
	require.NoError(t, yaml.UnmarshalStrict(data, p))
	server, unsupported := promkind.FromPrometheus(p)
	require.Empty(t, unsupported)
	require.Equal(t, "kps-kube-prometheus-stack-prometheus", server.Name)
	require.Equal(t, "monitoring", server.Namespace)
	require.True(t, server.Layout.Operator())

	release := &metav1.LabelSelector{MatchLabels: map[string]string{"release": "kps"}}
	want := v1alpha1.PrometheusServerSpec{
		Image:           "quay.io/prometheus/prometheus:v3.14.0-distroless",
		Version:         "v3.14.0-distroless",
		ImagePullPolicy: corev1.PullIfNotPresent,
		Replicas:        ptr.To[int32](1),
		Shards:          ptr.To[int32](1),
		Alerting: &v1alpha1.AlertingSpec{Alertmanagers: []v1alpha1.AlertmanagerEndpoint{{
			Namespace: "monitoring", Name: "kps-kube-prometheus-stack-alertmanager",
			Port: intstr.FromString("http-web"), PathPrefix: "/", APIVersion: "v2",
		}}},
		ExternalURL:                     "http://kps-kube-prometheus-stack-prometheus.monitoring:9090",
		LogLevel:                        "info",
		LogFormat:                       "logfmt",
		Retention:                       "10d",
		WALCompression:                  ptr.To(true),
		RoutePrefix:                     "/",
		ServiceAccountName:              "kps-kube-prometheus-stack-prometheus",
		ServiceMonitorSelector:          release,
		ServiceMonitorNamespaceSelector: &metav1.LabelSelector{},
		PodMonitorSelector:              release,
		PodMonitorNamespaceSelector:     &metav1.LabelSelector{},
		ProbeSelector:                   release,
		ProbeNamespaceSelector:          &metav1.LabelSelector{},
		ScrapeConfigSelector:            release,
		ScrapeConfigNamespaceSelector:   &metav1.LabelSelector{},
		RuleSelector:                    release,
		RuleNamespaceSelector:           &metav1.LabelSelector{},
		SecurityContext: &corev1.PodSecurityContext{
			FSGroup: ptr.To[int64](2000), RunAsGroup: ptr.To[int64](2000), RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100,
				PodAffinityTerm: corev1.PodAffinityTerm{
					TopologyKey: "kubernetes.io/hostname",
					LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: "app.kubernetes.io/name", Operator: metav1.LabelSelectorOpIn, Values: []string{"prometheus"}},
						{Key: "app.kubernetes.io/instance", Operator: metav1.LabelSelectorOpIn, Values: []string{"kps-kube-prometheus-stack-prometheus"}},
					}},
				},
			}},
		}},
		PortName:           "http-web",
		TSDB:               &v1alpha1.TSDBSpec{OutOfOrderTimeWindow: ptr.To(monitoringv1.Duration("0s"))},
		ScrapeInterval:     "30s",
		EvaluationInterval: "30s",
		Reloader:           v1alpha1.ReloaderSpec{ReloadMethod: "http"},
		TakenOver:          v1alpha1.TakenOver{EnableOTLPReceiver: ptr.To(false)},
	}
	require.Equal(t, want, server.Spec)

	// And it renders: a configuration promtool accepts, the pods on port
	// http-web with kube-prometheus-stack's security context.
	promtool, err := toolbin.Path("promtool")
	require.NoError(t, err)
	in := promserver.Inputs{Server: server.PrometheusServer, Layout: server.Layout, Namespaces: map[string]labels.Set{"monitoring": {}}}
	out, err := promserver.Render(in, testOptions(), nil)
	require.NoError(t, err)
	promfixture.CheckConfig(t, promtool, checkObjects(t, in, testOptions(), out))
	pod := out.StatefulSets[0].Spec.Template.Spec
	require.Equal(t, want.SecurityContext, pod.SecurityContext)
	require.Equal(t, "http-web", pod.Containers[0].Ports[0].Name)
}
