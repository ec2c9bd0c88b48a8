package v1alpha1_test

import (
	"path/filepath"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/internal/testenv/controlplane"
)

// TestCRDsOnAPIServer installs the CRDs into a real kube-apiserver and etcd
// (built by `make controlplane`) and creates objects through them: the
// schema's defaults are applied and its validation rejects a bad object.
func TestCRDsOnAPIServer(t *testing.T) {
	cfg := controlplane.Start(t, filepath.Join(repoRoot, crdDir)).Config

	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	require.NoError(t, monitoringv1.AddToScheme(scheme))
	require.NoError(t, monitoringv1alpha1.AddToScheme(scheme))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)

	server := &v1alpha1.PrometheusServer{
		ObjectMeta: metav1.ObjectMeta{Name: "main", Namespace: "default"},
		Spec: v1alpha1.PrometheusServerSpec{
			ServiceMonitorSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
			ExternalLabels:         map[string]string{"cluster": "eu1"},
		},
	}
	require.NoError(t, c.Create(t.Context(), server))
	var got v1alpha1.PrometheusServer
	require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(server), &got))
	require.Equal(t, int32(1), *got.Spec.Replicas, "default replicas")
	require.Equal(t, monitoringv1.Duration("15d"), got.Spec.Retention)
	require.Equal(t, monitoringv1.Duration("30s"), got.Spec.ScrapeInterval)
	require.Equal(t, "http", got.Spec.Reloader.ReloadMethod)
	require.Equal(t, v1alpha1.SourceAPI, got.Spec.Reloader.Source, "default source")

	got.Status = v1alpha1.PrometheusServerStatus{ObservedGeneration: got.Generation, ConfigHash: "abc",
		Rules: v1alpha1.Selection{Selected: 2, Rejected: 1}}
	require.NoError(t, c.Status().Update(t.Context(), &got), "status subresource")

	bad := &v1alpha1.PrometheusServer{
		ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "default"},
		Spec:       v1alpha1.PrometheusServerSpec{Reloader: v1alpha1.ReloaderSpec{ReloadMethod: "carrier-pigeon"}},
	}
	err = c.Create(t.Context(), bad)
	require.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
	require.ErrorContains(t, err, `spec.reloader.reloadMethod: Unsupported value: "carrier-pigeon"`)
	bad.Spec.Reloader = v1alpha1.ReloaderSpec{Source: "nfs"}
	err = c.Create(t.Context(), bad)
	require.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
	require.ErrorContains(t, err, `spec.reloader.source: Unsupported value: "nfs": supported values: "api", "volume"`)

	sm := &monitoringv1.ServiceMonitor{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"team": "a"}},
		Spec:       monitoringv1.ServiceMonitorSpec{Endpoints: []monitoringv1.Endpoint{{Port: "web"}}},
	}
	require.NoError(t, c.Create(t.Context(), sm), "upstream ServiceMonitor CRD")
	rule := &monitoringv1.PrometheusRule{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "default"},
		Spec: monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{Name: "g", Rules: []monitoringv1.Rule{
			{Record: "job:up:sum", Expr: intstr.FromString("sum by (job) (up)")},
		}}}},
	}
	require.NoError(t, c.Create(t.Context(), rule), "upstream PrometheusRule CRD")
	probe := &monitoringv1.Probe{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: monitoringv1.ProbeSpec{
			ProberSpec: monitoringv1.ProberSpec{URL: "blackbox:9115"},
			Targets:    monitoringv1.ProbeTargets{StaticConfig: &monitoringv1.ProbeTargetStaticConfig{Targets: []string{"https://example.com"}}},
		},
	}
	require.NoError(t, c.Create(t.Context(), probe), "upstream Probe CRD")
	require.Equal(t, "/probe", probe.Spec.ProberSpec.Path, "the CRD's default prober path")
	sc := &monitoringv1alpha1.ScrapeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"},
		Spec: monitoringv1alpha1.ScrapeConfigSpec{StaticConfigs: []monitoringv1alpha1.StaticConfig{
			{Targets: []monitoringv1alpha1.Target{"node:9100"}},
		}},
	}
	require.NoError(t, c.Create(t.Context(), sc), "upstream ScrapeConfig CRD")
}
