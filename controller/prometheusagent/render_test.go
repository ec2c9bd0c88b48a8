package prometheusagent

import (
	"bytes"
	"compress/gzip"
	"io"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/internal/testenv/promfixture"
)

// testAgent is an agent as people write one: PodMonitors of every
// namespace, a remote write, a claim template, two shards.
func testAgent(ns, name string) *monitoringv1alpha1.PrometheusAgent {
	a := &monitoringv1alpha1.PrometheusAgent{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	a.Spec.PodMonitorSelector = &metav1.LabelSelector{}
	a.Spec.PodMonitorNamespaceSelector = &metav1.LabelSelector{}
	a.Spec.RemoteWrite = []monitoringv1.RemoteWriteSpec{{URL: "http://receiver.monitoring:9090/api/v1/write"}}
	a.Spec.Shards = ptr.To[int32](2)
	a.Spec.Version = "v3.5.0"
	a.Spec.Storage = &monitoringv1.StorageSpec{VolumeClaimTemplate: monitoringv1.EmbeddedPersistentVolumeClaim{
		Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}}
	return a
}

// TestRenderAgent: an agent renders in prometheus-operator's agent layout:
// its names, labels, governing Service, the agent's flags, and the
// agent's configuration (no rule files, no alerting, remote write).
func TestRenderAgent(t *testing.T) {
	a := testAgent("monitoring", "edge")
	server, unsupported := FromAgent(a)
	require.Empty(t, unsupported)
	objs, err := promserver.Render(promserver.Inputs{
		Server: server.PrometheusServer, Layout: server.Layout,
		PodMonitors: []*monitoringv1.PodMonitor{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"},
			Spec:       monitoringv1.PodMonitorSpec{PodMetricsEndpoints: []monitoringv1.PodMetricsEndpoint{{Port: ptr.To("metrics")}}},
		}},
	}, promserver.WorkloadOptions{DefaultReloaderImage: "podreload:test"}, nil)
	require.NoError(t, err)

	require.Len(t, objs.StatefulSets, 2)
	require.Equal(t, []string{"prom-agent-edge", "prom-agent-edge-shard-1"}, []string{objs.StatefulSets[0].Name, objs.StatefulSets[1].Name})
	sts := objs.StatefulSets[0]
	require.Equal(t, "prometheus-agent-operated", sts.Spec.ServiceName)
	require.Equal(t, map[string]string{
		"app.kubernetes.io/instance": "edge", "app.kubernetes.io/managed-by": "prometheus-operator",
		"app.kubernetes.io/name": "prometheus-agent", "operator.prometheus.io/name": "edge", "operator.prometheus.io/shard": "0",
	}, sts.Spec.Selector.MatchLabels, "prometheus-operator's agent selector (agent/operator.go makeSelectorLabels)")
	require.Equal(t, "agent", sts.Labels["operator.prometheus.io/mode"])
	require.Equal(t, "prom-agent-edge-db", sts.Spec.VolumeClaimTemplates[0].Name)
	require.Equal(t, "prometheus-agent-operated", objs.Service.Name)
	require.Equal(t, map[string]string{"app.kubernetes.io/name": "prometheus-agent"}, objs.Service.Spec.Selector)
	require.Empty(t, objs.RuleShards, "an agent has no rules")

	prom := sts.Spec.Template.Spec.Containers[slices.IndexFunc(sts.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == "prometheus" })]
	require.Equal(t, "quay.io/prometheus/prometheus:v3.5.0", prom.Image)
	require.Equal(t, []string{
		"--config.file=/etc/prometheus/config_out/prometheus.env.yaml",
		"--web.enable-lifecycle",
		"--web.route-prefix=/",
		"--agent",
		"--storage.agent.path=/prometheus",
		"--web.config.file=/etc/prometheus/web_config/web-config.yaml",
	}, prom.Args)

	require.Equal(t, "prom-agent-edge", objs.ConfigSecret.Name)
	zr, err := gzip.NewReader(bytes.NewReader(objs.ConfigSecret.Data[promserver.ConfigSecretKey]))
	require.NoError(t, err)
	cfg, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.Contains(t, string(cfg), "job_name: podMonitor/apps/web/0")
	require.Contains(t, string(cfg), "remote_write:")
	for _, absent := range []string{"rule_files", "alerting", "evaluation_interval", "retention"} {
		require.NotContains(t, string(cfg), absent)
	}
}

// TestRenderNotOlder: an agent that sets no version runs
// prometheus-operator's default, or the version its running StatefulSet
// runs when newer; one that sets a version runs it.
func TestRenderNotOlder(t *testing.T) {
	running := func(image string) map[string]*appsv1.StatefulSet {
		sts := &appsv1.StatefulSet{}
		sts.Spec.Template.Spec.Containers = []corev1.Container{{Name: "prometheus", Image: image}}
		return map[string]*appsv1.StatefulSet{"prom-agent-edge": sts}
	}
	for _, c := range []struct {
		version string
		running map[string]*appsv1.StatefulSet
		want    string
	}{
		{"", nil, "quay.io/prometheus/prometheus:" + promserver.OperatorDefaultVersion},
		{"", running("quay.io/prometheus/prometheus:v3.14.0"), "quay.io/prometheus/prometheus:v3.14.0"},
		{"", running("quay.io/prometheus/prometheus:v3.1.0"), "quay.io/prometheus/prometheus:" + promserver.OperatorDefaultVersion},
		{"v3.5.0", running("quay.io/prometheus/prometheus:v3.14.0"), "quay.io/prometheus/prometheus:v3.5.0"},
	} {
		a := testAgent("monitoring", "edge")
		a.Spec.Shards, a.Spec.Version = nil, c.version
		server, _ := FromAgent(a)
		objs, err := promserver.Render(promserver.Inputs{Server: server.PrometheusServer, Layout: server.Layout, Running: c.running}, promserver.WorkloadOptions{DefaultReloaderImage: "podreload:test"}, nil)
		require.NoError(t, err)
		pod := objs.StatefulSets[0].Spec.Template
		require.Equal(t, c.want, container(t, objs.StatefulSets[0], "prometheus").Image, "version %q", c.version)
		require.Equal(t, c.want[strings.LastIndexByte(c.want, ':')+2:], pod.Labels["app.kubernetes.io/version"])
		require.Equal(t, c.version, server.Spec.Version, "the input server is not changed")
	}
}

// TestRenderEphemeral: storage.ephemeral is the data volume, a generic
// ephemeral volume mounted with prometheus-operator's sub-path; the
// StatefulSet has no claim template.
func TestRenderEphemeral(t *testing.T) {
	a := testAgent("monitoring", "edge")
	a.Spec.Shards = nil
	a.Spec.Storage = &monitoringv1.StorageSpec{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
	}}}
	server, unsupported := FromAgent(a)
	require.Empty(t, unsupported)
	objs, err := promserver.Render(promserver.Inputs{Server: server.PrometheusServer, Layout: server.Layout}, promserver.WorkloadOptions{DefaultReloaderImage: "podreload:test"}, nil)
	require.NoError(t, err)
	sts := objs.StatefulSets[0]
	require.Empty(t, sts.Spec.VolumeClaimTemplates)
	vols := sts.Spec.Template.Spec.Volumes
	i := slices.IndexFunc(vols, func(v corev1.Volume) bool { return v.Name == "prom-agent-edge-db" })
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, a.Spec.Storage.Ephemeral, vols[i].Ephemeral)
	require.Equal(t, corev1.VolumeMount{Name: "prom-agent-edge-db", MountPath: "/prometheus", SubPath: "prometheus-db"}, mount(t, container(t, sts, "prometheus"), "prom-agent-edge-db"))
}

// daemonSetAgent is an agent in DaemonSet mode as people write one:
// PodMonitors of every namespace, a remote write, none of the fields
// prometheus-operator refuses in that mode.
func daemonSetAgent(ns, name string) *monitoringv1alpha1.PrometheusAgent {
	a := testAgent(ns, name)
	a.Spec.Mode = ptr.To(monitoringv1alpha1.DaemonSetPrometheusAgentMode)
	a.Spec.Shards, a.Spec.Storage = nil, nil
	return a
}

// TestRenderDaemonSet: an agent in DaemonSet mode renders one DaemonSet
// as prometheus-operator's DaemonSet builder names and labels it
// (agent/daemonset.go): prom-agent-<name>, the agent's selector labels
// without the shard's, on the pods too; no StatefulSet, no governing
// Service, no claim template, no state Secret; its config-reloaders read
// from the API source with NODE_NAME from spec.nodeName and keep their
// state on the data volume, an emptyDir; its Role patches every pod of
// the namespace; and the configuration's PodMonitor jobs discover the
// pods of their node only, unsharded.
func TestRenderDaemonSet(t *testing.T) {
	a := daemonSetAgent("monitoring", "edge")
	a.Labels = map[string]string{"team": "edge"}
	a.Annotations = map[string]string{"note": "x", "kubectl.kubernetes.io/last-applied-configuration": "{}"}
	a.Spec.MinReadySeconds = ptr.To[int32](5)
	server, unsupported := FromAgent(a)
	require.Empty(t, unsupported)
	require.Empty(t, invalidInDaemonSet(a))
	objs, err := promserver.Render(promserver.Inputs{
		Server: server.PrometheusServer, Layout: server.Layout,
		PodMonitors: []*monitoringv1.PodMonitor{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"},
			Spec:       monitoringv1.PodMonitorSpec{PodMetricsEndpoints: []monitoringv1.PodMetricsEndpoint{{Port: ptr.To("metrics")}}},
		}},
	}, promserver.WorkloadOptions{DefaultReloaderImage: "podreload:test"}, nil)
	require.NoError(t, err)
	require.Empty(t, objs.StatefulSets, "no StatefulSet")
	require.Nil(t, objs.Service, "no governing Service")
	require.Empty(t, objs.StateSecrets, "no state Secret: the pods' names are their own")
	ds := objs.DaemonSet
	require.NotNil(t, ds)
	require.Equal(t, "prom-agent-edge", ds.Name)
	selector := map[string]string{
		"app.kubernetes.io/instance": "edge", "app.kubernetes.io/managed-by": "prometheus-operator",
		"app.kubernetes.io/name": "prometheus-agent", "operator.prometheus.io/name": "edge",
	}
	require.Equal(t, selector, ds.Spec.Selector.MatchLabels, "prometheus-operator's agent selector (agent/operator.go makeSelectorLabels), no shard")
	for k, v := range selector {
		require.Equal(t, v, ds.Spec.Template.Labels[k], "pod label %s", k)
		require.Equal(t, v, ds.Labels[k], "label %s", k)
	}
	require.NotContains(t, ds.Spec.Template.Labels, "operator.prometheus.io/shard")
	require.Equal(t, "agent", ds.Labels["operator.prometheus.io/mode"])
	require.Equal(t, "edge", ds.Labels["team"])
	require.Equal(t, map[string]string{"note": "x"}, ds.Annotations, "kubectl's annotations left out")
	require.Equal(t, int32(5), ds.Spec.MinReadySeconds)
	pod := ds.Spec.Template.Spec
	for _, v := range pod.Volumes {
		require.Nil(t, v.PersistentVolumeClaim, "volume %s", v.Name)
		require.Nil(t, v.Ephemeral, "volume %s", v.Name)
	}
	i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "prom-agent-edge-db" })
	require.GreaterOrEqual(t, i, 0, "the data volume")
	require.NotNil(t, pod.Volumes[i].EmptyDir)

	prom := pod.Containers[slices.IndexFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == "prometheus" })]
	require.Contains(t, prom.Args, "--agent")
	require.Contains(t, prom.Args, "--storage.agent.path=/prometheus")
	nodeName := corev1.EnvVar{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}}}
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
		if c.Name != "config-reloader" && c.Name != "init-config-reloader" {
			continue
		}
		require.Equal(t, "podreload:test", c.Image)
		require.Contains(t, c.Env, nodeName, "%s: NODE_NAME from the downward API", c.Name)
		require.Contains(t, c.Env, corev1.EnvVar{Name: "SHARD", Value: "0"}, c.Name)
		require.Contains(t, c.Args, "--state-dir=/prometheus/.podreload-reloader", c.Name)
		require.Contains(t, c.Args, "--config-secret=monitoring/prom-agent-edge", "%s: the API source", c.Name)
		require.False(t, slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--state-secret") }), "%s: no state Secret", c.Name)
	}

	require.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"patch"}}},
		slices.DeleteFunc(slices.Clone(objs.Role.Rules), func(r rbacv1.PolicyRule) bool { return r.Resources[0] != "pods" }), "patch on every pod: their names are their own")

	cfg := string(promfixture.Gunzip(t, objs.ConfigSecret.Data[promserver.ConfigSecretKey]))
	require.Contains(t, cfg, "job_name: podMonitor/apps/web/0")
	require.Contains(t, cfg, "field: spec.nodeName=$(NODE_NAME)")
	require.NotContains(t, cfg, "hashmod", "no sharding")
}

// TestRenderAgentCommonFields: the common fields a takeover maps for a
// Prometheus are the agent's too: serviceName (the user's governing
// Service, no prometheus-agent-operated), automountServiceAccountToken
// false (no token, the reloaders on the volumes) and enableOTLPReceiver,
// with prometheus-operator's version gate.
func TestRenderAgentCommonFields(t *testing.T) {
	a := testAgent("monitoring", "edge")
	a.Spec.ServiceName = ptr.To("edge-agents")
	a.Spec.AutomountServiceAccountToken = ptr.To(false)
	a.Spec.EnableOTLPReceiver = ptr.To(true)
	server, unsupported := FromAgent(a)
	require.Empty(t, unsupported)
	objs, err := promserver.Render(promserver.Inputs{Server: server.PrometheusServer, Layout: server.Layout}, promserver.WorkloadOptions{DefaultReloaderImage: "podreload:test"}, nil)
	require.NoError(t, err)
	require.Nil(t, objs.Service)
	for _, sts := range objs.StatefulSets {
		require.Equal(t, "edge-agents", sts.Spec.ServiceName, sts.Name)
		pod := sts.Spec.Template.Spec
		require.Equal(t, ptr.To(false), pod.AutomountServiceAccountToken, sts.Name)
		require.Contains(t, pod.Containers[0].Args, "--web.enable-otlp-receiver", sts.Name)
		require.Contains(t, pod.Containers[1].Args, "--config-file=/etc/prometheus/config/prometheus.yaml.gz", sts.Name)
		require.NotContains(t, pod.Containers[1].Args, "--report-pod=$(POD_NAMESPACE)/$(POD_NAME)", sts.Name)
	}

	a.Spec.Version = "v2.47.0"
	server, _ = FromAgent(a)
	_, sts := promserver.RenderWorkload(server, promserver.PodOptions{WorkloadOptions: promserver.WorkloadOptions{DefaultReloaderImage: "podreload:test"}, RuleShards: 1})
	require.Contains(t, sts.Spec.Template.Spec.Containers[0].Args, "--enable-feature=otlp-write-receiver")
}

// TestRenderDaemonSetKeepsWhatRuns: as a StatefulSet does, the DaemonSet of
// an agent keeps the config-reloader image its pods run when that is the
// only change (an upgrade of the controller rolls no agent), and a
// takeover never downgrades the Prometheus it runs.
func TestRenderDaemonSetKeepsWhatRuns(t *testing.T) {
	a := daemonSetAgent("monitoring", "edge")
	a.Spec.Version, a.Spec.Image = "", nil // prometheus-operator's default version.
	server, unsupported := FromAgent(a)
	require.Empty(t, unsupported)
	render := func(reloader string, running *appsv1.DaemonSet) *appsv1.DaemonSet {
		in := promserver.Inputs{Server: server.PrometheusServer, Layout: server.Layout}
		if running != nil {
			in.Running = map[string]*appsv1.StatefulSet{running.Name: {
				ObjectMeta: running.ObjectMeta, Spec: appsv1.StatefulSetSpec{Template: running.Spec.Template},
			}}
		}
		objs, err := promserver.Render(in, promserver.WorkloadOptions{DefaultReloaderImage: reloader}, nil)
		require.NoError(t, err)
		return objs.DaemonSet
	}
	old := render("podreload:old", nil)
	require.Equal(t, "podreload:old", dsContainer(t, old, "config-reloader").Image)
	require.Equal(t, "podreload:old", dsContainer(t, render("podreload:new", old), "config-reloader").Image, "the running image kept")

	changed := server.DeepCopy()
	changed.Spec.PodMetadata = &monitoringv1.EmbeddedObjectMetadata{Labels: map[string]string{"team": "b"}}
	server.PrometheusServer = changed
	require.Equal(t, "podreload:new", dsContainer(t, render("podreload:new", old), "config-reloader").Image, "a change of the pods rolls them onto the new image")

	newer := old.DeepCopy()
	for i, c := range newer.Spec.Template.Spec.Containers {
		if c.Name == "prometheus" {
			newer.Spec.Template.Spec.Containers[i].Image = "quay.io/prometheus/prometheus:v3.99.0"
		}
	}
	require.Equal(t, "quay.io/prometheus/prometheus:v3.99.0", dsContainer(t, render("podreload:new", newer), "prometheus").Image, "never older than what runs")
}

// dsContainer is ds' container name.
func dsContainer(t *testing.T, ds *appsv1.DaemonSet, name string) corev1.Container {
	t.Helper()
	require.NotNil(t, ds)
	cs := ds.Spec.Template.Spec.Containers
	i := slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == name })
	require.GreaterOrEqual(t, i, 0, "no container %s", name)
	return cs[i]
}
