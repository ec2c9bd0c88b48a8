package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/testlog"
)

// TestTakeoverCheckCluster checks what `controller takeover-check` tells
// of the objects of a cluster, every kind of the table of kinds listed: a
// Prometheus it can take over; and a cluster without the Alertmanager CRD
// has no Alertmanager, which is no error.
func TestTakeoverCheckCluster(t *testing.T) {
	crds := t.TempDir()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "crds", "monitoring.coreos.com_prometheuses.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(crds, "prometheuses.yaml"), b, 0o600))
	cp := controlplane.Start(t, crds)
	c := controlplane.NewClient(t, cp.Config, monitoringv1.AddToScheme)
	require.NoError(t, c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}}))
	require.NoError(t, c.Create(t.Context(), &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "k8s", Annotations: map[string]string{takeover.AnnotationControllerID: "podreload"}},
		Spec: monitoringv1.PrometheusSpec{
			CommonPrometheusFields: monitoringv1.CommonPrometheusFields{Replicas: ptr.To[int32](2), ServiceMonitorSelector: &metav1.LabelSelector{}},
			RuleSelector:           &metav1.LabelSelector{},
		},
	}))

	var stdout bytes.Buffer
	var stderr testlog.Buffer
	code := run(t.Context(), []string{"takeover-check", "--kubeconfig=" + cp.Kubeconfig}, &stdout, &stderr)
	require.Equal(t, 0, code, "%s%s", stdout.String(), stderr.String())
	require.Equal(t, `Prometheus monitoring/k8s (controller-id "podreload"):
  can be taken over: annotate it with operator.prometheus.io/controller-id=<the controller's --controller-id>
  rolls once, one pod at a time, to podreload's sidecar: StatefulSet prometheus-k8s (2 replicas each); PVCs and data stay
`, stdout.String())
}
