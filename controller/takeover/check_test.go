package takeover

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestChecker: a Checker checks the objects of its kind, and says so of
// an object of another.
func TestChecker(t *testing.T) {
	c := NewChecker(monitoringv1.PrometheusesKind, monitoringv1.SchemeGroupVersion.String(),
		func() *monitoringv1.Prometheus { return &monitoringv1.Prometheus{} },
		func() *monitoringv1.PrometheusList { return &monitoringv1.PrometheusList{} },
		func(p *monitoringv1.Prometheus) Check {
			return Check{Kind: "Prometheus", Namespace: p.Namespace, Name: p.Name}
		})
	require.IsType(t, &monitoringv1.Prometheus{}, c.New())
	require.IsType(t, &monitoringv1.PrometheusList{}, c.NewList())
	got, err := c.Check(&monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "k8s"}})
	require.NoError(t, err)
	require.Equal(t, Check{Kind: "Prometheus", Namespace: "ns", Name: "k8s"}, got)
	_, err = c.Check(&monitoringv1.Alertmanager{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "main"}})
	require.EqualError(t, err, "check Prometheus ns/main: a *v1.Alertmanager, not a Prometheus")
}
