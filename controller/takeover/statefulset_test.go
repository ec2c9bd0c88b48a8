package takeover

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestKeepImmutable: the live selector, Service name, policy and claims
// win, the selector's labels reach the pods; a change of the claims is
// told.
func TestKeepImmutable(t *testing.T) {
	claim := func(name string) []corev1.PersistentVolumeClaim {
		return []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: name}}}
	}
	live := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{
		Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "p", "team": "a"}},
		ServiceName: "prometheus-operated", PodManagementPolicy: appsv1.ParallelPodManagement, VolumeClaimTemplates: claim("data"),
	}}
	desired := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "p"}}, ServiceName: "other", VolumeClaimTemplates: claim("data"),
	}}
	require.False(t, KeepImmutable(live, desired))
	require.Equal(t, live.Spec.Selector, desired.Spec.Selector)
	require.NotSame(t, live.Spec.Selector, desired.Spec.Selector)
	require.Equal(t, map[string]string{"app": "p", "team": "a"}, desired.Spec.Template.Labels)
	require.Equal(t, "prometheus-operated", desired.Spec.ServiceName)
	require.Equal(t, appsv1.ParallelPodManagement, desired.Spec.PodManagementPolicy)

	desired.Spec.VolumeClaimTemplates = claim("other")
	require.True(t, KeepImmutable(live, desired), "claims kept")
	require.Equal(t, claim("data"), desired.Spec.VolumeClaimTemplates)
}

// services reads the Services it holds, by name.
type services struct {
	client.Reader
	svcs map[string]corev1.Service
}

func (s services) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	svc, ok := s.svcs[key.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, key.Name)
	}
	*obj.(*corev1.Service) = svc
	return nil
}

// TestCheckGoverningService: the user's Service must be there and select
// the pods; an empty selector selects them.
func TestCheckGoverningService(t *testing.T) {
	r := services{svcs: map[string]corev1.Service{
		"mine":  {Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "p"}}},
		"empty": {},
		"other": {Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "q"}}},
	}}
	pods := map[string]string{"app": "p", "shard": "0"}
	require.NoError(t, CheckGoverningService(t.Context(), r, "ns", "mine", pods))
	require.NoError(t, CheckGoverningService(t.Context(), r, "ns", "empty", pods))
	require.EqualError(t, CheckGoverningService(t.Context(), r, "ns", "other", pods),
		`spec.serviceName: the governing Service ns/other with selector "app=q" does not select the pods, labelled "app=p,shard=0"`)
	require.EqualError(t, CheckGoverningService(t.Context(), r, "ns", "gone", pods),
		`spec.serviceName: get the governing Service ns/gone: services "gone" not found`)
}
