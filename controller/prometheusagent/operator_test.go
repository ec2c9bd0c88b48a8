package prometheusagent

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/operator"
	"github.com/podreload/podreload/internal/testenv/testlog"
)

// deadline bounds every wait; a real API server and operator answer in
// seconds.
const deadline = 60 * time.Second

func eventually(t *testing.T, check func(c *assert.CollectT), msgAndArgs ...any) {
	t.Helper()
	require.EventuallyWithT(t, check, deadline, 20*time.Millisecond, msgAndArgs...)
}

// start runs a controller of the PrometheusAgents handed to podreload
// until the test ends, and returns its registry.
func start(t *testing.T, cfg *rest.Config) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	logger := slog.New(slog.NewTextHandler(testlog.Output(t), &slog.HandlerOptions{Level: slog.LevelInfo}))
	m, err := kube.NewManager(logger, reg, kube.Options{Config: cfg, Names: []string{promserver.AgentApp}, AddToScheme: []func(*runtime.Scheme) error{promserver.AddToScheme}})
	require.NoError(t, err)
	require.NoError(t, Setup(m, logger, reg, promserver.WorkloadOptions{DefaultReloaderImage: "podreload:test"}, takeover.Options{ControllerID: "podreload"}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	eventually(t, func(c *assert.CollectT) { assert.NoError(c, m.Ready()) }, "caches synced")
	return reg
}

// container is sts' container name.
func container(t require.TestingT, sts *appsv1.StatefulSet, name string) corev1.Container {
	cs := sts.Spec.Template.Spec.Containers
	i := slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == name })
	require.GreaterOrEqual(t, i, 0, "StatefulSet %s: no container %s", sts.Name, name)
	return cs[i]
}

// mount is c's mount of the volume name.
func mount(t require.TestingT, c corev1.Container, name string) corev1.VolumeMount {
	i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == name })
	require.GreaterOrEqual(t, i, 0, "container %s: no mount of %s", c.Name, name)
	return c.VolumeMounts[i]
}

// TestOperator runs prometheus-operator's own operator (v0.93.1, default
// controller id) on a control plane: it writes a PrometheusAgent's
// objects; annotated, the agent is taken over in place, each shard's
// StatefulSet adopted with its selector, governing Service and claim
// template, Prometheus run with the operator's image and flags; the
// annotation removed, the operator takes it back, in place too. No
// kubelet runs: the StatefulSets are what is compared.
func TestOperator(t *testing.T) {
	env := controlplane.Start(t, filepath.Join("..", "..", "deploy", "crds"))
	c := controlplane.NewClient(t, env.Config, promserver.AddToScheme)
	ctx := t.Context()
	ns := "agent-operator"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	operator.Start(t, env.Kubeconfig, "")

	a := testAgent(ns, "edge")
	// A patch of Prometheus' container, and a container of the user's.
	a.Spec.Containers = []corev1.Container{
		{Name: "prometheus", Env: []corev1.EnvVar{{Name: "GOMEMLIMIT", Value: "1GiB"}}},
		{Name: "kube-rbac-proxy", Image: "quay.io/brancz/kube-rbac-proxy:v0.19.0", Args: []string{"--upstream=http://127.0.0.1:9090/"}},
	}
	// The StatefulSets' settings.
	a.Spec.PodManagementPolicy = ptr.To(monitoringv1.OrderedReadyPodManagement)
	a.Spec.UpdateStrategy = &monitoringv1.StatefulSetUpdateStrategy{
		Type: monitoringv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: &monitoringv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(1))},
	}
	a.Spec.MinReadySeconds = ptr.To[int32](5)
	a.Spec.HostNetwork = true
	a.Spec.MaximumStartupDurationSeconds = ptr.To[int32](300)
	a.Spec.Storage.DisableMountSubPath = true
	a.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType}
	require.NoError(t, c.Create(ctx, a))
	shards := []string{"prom-agent-edge", "prom-agent-edge-shard-1"}
	reloader := func(sts *appsv1.StatefulSet) string { return container(t, sts, "config-reloader").Image }
	opSets := make([]appsv1.StatefulSet, len(shards))
	for i, name := range shards {
		eventually(t, func(ct *assert.CollectT) {
			if assert.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &opSets[i])) {
				assert.Contains(ct, reloader(&opSets[i]), "prometheus-config-reloader", "the operator's reloader")
			}
		})
	}

	start(t, env.Config)
	controlplane.Edit(t, c, a, func(a *monitoringv1alpha1.PrometheusAgent) {
		a.Annotations = map[string]string{takeover.AnnotationControllerID: "podreload"}
	})
	for i, name := range shards {
		var sts appsv1.StatefulSet
		eventually(t, func(ct *assert.CollectT) {
			if assert.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &sts)) {
				assert.Equal(ct, "podreload:test", reloader(&sts), "our reloader")
			}
		})
		op := &opSets[i]
		require.Equal(t, op.UID, sts.UID, "adopted in place")
		require.Equal(t, op.Spec.Selector, sts.Spec.Selector)
		require.Equal(t, op.Spec.ServiceName, sts.Spec.ServiceName)
		require.Equal(t, op.Spec.PodManagementPolicy, sts.Spec.PodManagementPolicy)
		require.Equal(t, op.Spec.UpdateStrategy, sts.Spec.UpdateStrategy)
		require.Equal(t, op.Spec.MinReadySeconds, sts.Spec.MinReadySeconds)
		require.Equal(t, op.Spec.PersistentVolumeClaimRetentionPolicy, sts.Spec.PersistentVolumeClaimRetentionPolicy)
		require.Equal(t, appsv1.OrderedReadyPodManagement, sts.Spec.PodManagementPolicy, "the agent's")
		require.Equal(t, int32(5), sts.Spec.MinReadySeconds, "the agent's")
		require.Equal(t, op.Spec.Template.Spec.HostNetwork, sts.Spec.Template.Spec.HostNetwork)
		require.True(t, sts.Spec.Template.Spec.HostNetwork, "the agent's")
		require.Equal(t, op.Spec.Template.Spec.DNSPolicy, sts.Spec.Template.Spec.DNSPolicy)
		require.Equal(t, op.Labels["operator.prometheus.io/mode"], sts.Labels["operator.prometheus.io/mode"])
		require.Len(t, sts.Spec.VolumeClaimTemplates, 1)
		require.Equal(t, op.Spec.VolumeClaimTemplates[0].Name, sts.Spec.VolumeClaimTemplates[0].Name, "the same PVCs")
		require.Equal(t, op.Spec.VolumeClaimTemplates[0].Spec.Resources, sts.Spec.VolumeClaimTemplates[0].Spec.Resources)
		opProm, prom := container(t, op, "prometheus"), container(t, &sts, "prometheus")
		require.Equal(t, opProm.Image, prom.Image)
		require.Equal(t, opProm.Args, prom.Args, "the agent's flags as the operator's")
		require.Equal(t, mount(t, opProm, "prom-agent-edge-db"), mount(t, prom, "prom-agent-edge-db"), "the data volume at the operator's path")
		require.Equal(t, op.Spec.Template.Labels, sts.Spec.Template.Labels)
		require.Equal(t, opProm.Env, prom.Env, "the patch merged as the operator merges it")
		require.Equal(t, opProm.StartupProbe, prom.StartupProbe, "maximumStartupDurationSeconds as the operator's")
		require.Empty(t, mount(t, prom, "prom-agent-edge-db").SubPath, "disableMountSubPath")
		names := func(cs []corev1.Container) []string {
			var out []string
			for _, c := range cs {
				out = append(out, c.Name)
			}
			return out
		}
		require.Equal(t, names(op.Spec.Template.Spec.Containers), names(sts.Spec.Template.Spec.Containers))
		require.Equal(t, container(t, op, "kube-rbac-proxy"), container(t, &sts, "kube-rbac-proxy"), "the user's container, appended")
	}
	var svc corev1.Service
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prometheus-agent-operated"}, &svc))
	eventually(t, func(ct *assert.CollectT) {
		var got monitoringv1alpha1.PrometheusAgent
		if assert.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(a), &got)) {
			i := slices.IndexFunc(got.Status.Conditions, func(c monitoringv1.Condition) bool { return c.Type == monitoringv1.Reconciled })
			if assert.GreaterOrEqual(ct, i, 0, "a Reconciled condition") {
				assert.Equal(ct, monitoringv1.ConditionTrue, got.Status.Conditions[i].Status, got.Status.Conditions[i].Message)
				assert.Equal(ct, got.Generation, got.Status.Conditions[i].ObservedGeneration)
			}
			assert.Equal(ct, int32(2), got.Status.Shards)
		}
	}, "the status, written by the controller")

	// A PodMonitor created now reaches the agent's configuration.
	require.NoError(t, c.Create(ctx, &monitoringv1.PodMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       monitoringv1.PodMonitorSpec{PodMetricsEndpoints: []monitoringv1.PodMetricsEndpoint{{Port: ptr.To("metrics")}}},
	}))
	eventually(t, func(ct *assert.CollectT) {
		var secret corev1.Secret
		if !assert.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prom-agent-edge"}, &secret)) {
			return
		}
		zr, err := gzip.NewReader(bytes.NewReader(secret.Data[promserver.ConfigSecretKey]))
		if !assert.NoError(ct, err) {
			return
		}
		cfg, err := io.ReadAll(zr)
		assert.NoError(ct, err)
		assert.Contains(ct, string(cfg), "job_name: podMonitor/"+ns+"/web/0")
	}, "the PodMonitor's job in the agent's configuration")

	// Handed back: the operator rewrites the StatefulSets, in place.
	controlplane.Edit(t, c, a, func(a *monitoringv1alpha1.PrometheusAgent) { a.Annotations = nil })
	for i, name := range shards {
		var sts appsv1.StatefulSet
		eventually(t, func(ct *assert.CollectT) {
			if assert.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &sts)) {
				assert.Contains(ct, reloader(&sts), "prometheus-config-reloader", "the operator's reloader again")
			}
		})
		require.Equal(t, opSets[i].UID, sts.UID, "taken back in place")
		require.Equal(t, opSets[i].Spec.VolumeClaimTemplates[0].Name, sts.Spec.VolumeClaimTemplates[0].Name)
	}
}
