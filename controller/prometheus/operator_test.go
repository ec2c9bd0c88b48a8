package prometheus

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/operator"
	"github.com/podreload/podreload/internal/testenv/testlog"
)

// argsVersions are the Prometheus versions testOperatorArgs renders: the
// oldest v2, one on each side of every flag prometheus-operator gates on
// the version, the first v3, and "" for its default.
func argsVersions() []string {
	return []string{
		"v2.0.0", "v2.3.0", "v2.4.0", "v2.5.0", "v2.6.0", "v2.7.0", "v2.10.0", "v2.11.0",
		"v2.24.0", "v2.25.0", "v2.32.0", "v2.33.0", "v2.39.0", "v2.40.0", "v2.45.0", "v2.46.0",
		"v2.47.0", "v2.53.0", "v2.54.0", "v2.55.0", "v3.0.0", "v3.3.0", "v3.4.0", "v3.10.0",
		"v3.11.0", "v3.13.0", "",
	}
}

// argsSpec sets, on p, every field that adds a flag to Prometheus'
// container at some version.
func argsSpec(p *monitoringv1.Prometheus) {
	s := &p.Spec
	s.Retention, s.RetentionSize = "10d", "5GB"
	s.EnableAdminAPI = true
	s.Rules.Alert = monitoringv1.RulesAlert{ForOutageTolerance: "1h", ForGracePeriod: "10m", ResendDelay: "2m"}
	s.Query = &monitoringv1.QuerySpec{
		LookbackDelta: ptr.To("2m"), MaxSamples: ptr.To[int32](1000), MaxConcurrency: ptr.To[int32](4),
		Timeout: ptr.To(monitoringv1.Duration("1m")),
	}
	s.WALCompression = ptr.To(true)
	s.Web = &monitoringv1.PrometheusWebSpec{PageTitle: ptr.To("title"), MaxConnections: ptr.To[int32](64)}
	s.EnableRemoteWriteReceiver = true
	s.RemoteWriteReceiverMessageVersions = []monitoringv1.RemoteWriteMessageVersion{monitoringv1.RemoteWriteMessageVersion1_0}
	s.EnableFeatures = []monitoringv1.EnableFeature{"exemplar-storage"}
	s.ExternalURL = "https://prometheus.example/"
	s.RoutePrefix = "/prom"
	s.LogLevel, s.LogFormat = "debug", "json"
	s.ListenLocal = true
	s.DisableCompaction = true
	s.AllowOverlappingBlocks = true
	s.EnableOTLPReceiver = ptr.To(true)
}

// TestOperator runs prometheus-operator's own operator (v0.93.1, default
// controller id) on one control plane, for the checks that compare what it
// writes with what a takeover writes. No kubelet runs: the StatefulSets
// are what is compared.
func TestOperator(t *testing.T) {
	env := controlplane.Start(t, filepath.Join("..", "..", "deploy", "crds"))
	c := controlplane.NewClient(t, env.Config, promserver.AddToScheme)
	operator.Start(t, env.Kubeconfig, "")
	t.Run("the flags at every version", func(t *testing.T) { testOperatorArgs(t, c) })
	t.Run("kube-prometheus' Prometheus taken over and handed back", func(t *testing.T) { testKubePrometheus(t, env.Config, c) })
	t.Run("the user's configuration Secret kept", func(t *testing.T) { testUnmanagedConfiguration(t, env.Config, c) })
	t.Run("the Thanos sidecar taken over and handed back", func(t *testing.T) { testThanos(t, env.Config, c) })
}

// testOperatorArgs compares the flags prometheus-operator gives
// Prometheus' container with those a takeover renders, for a Prometheus
// setting every flag's field at every version in argsVersions, and for
// the flags a remote write of the 2.0 message turns on.
func testOperatorArgs(t *testing.T, c client.Client) {
	ctx := t.Context()
	const ns = "args"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	type argsCase struct {
		name string
		set  func(*monitoringv1.Prometheus)
	}
	var cases []argsCase
	for _, v := range argsVersions() {
		cases = append(cases, argsCase{"every flag " + cmp.Or(v, "default"), func(p *monitoringv1.Prometheus) {
			argsSpec(p)
			p.Spec.Version = v
		}})
	}
	for _, v := range []string{"v2.53.0", "v2.54.0", "v3.3.0", "v3.4.0"} {
		cases = append(cases, argsCase{"remote write 2.0 " + v, func(p *monitoringv1.Prometheus) {
			p.Spec.Version = v
			p.Spec.RemoteWrite = []monitoringv1.RemoteWriteSpec{{
				URL: "https://write.example/", MessageVersion: ptr.To(monitoringv1.RemoteWriteMessageVersion2_0),
			}}
			// Flags a 2.0 message before 2.54 turns off in the operator.
			p.Spec.LogFormat, p.Spec.EnableFeatures = "json", []monitoringv1.EnableFeature{"exemplar-storage"}
			p.Spec.EnableOTLPReceiver = ptr.To(true)
		}})
	}
	for _, v := range []string{"v2.55.0", "v3.0.0"} {
		cases = append(cases, argsCase{"an otlp section " + v, func(p *monitoringv1.Prometheus) {
			p.Spec.Version = v
			p.Spec.OTLP = &monitoringv1.OTLPConfig{PromoteResourceAttributes: []string{"service.instance.id"}}
		}})
	}
	// The user's governing Service, which the operator wants before it
	// writes the StatefulSet; no token; the web configuration's files.
	require.NoError(t, c.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "governing"},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app.kubernetes.io/name": "prometheus"}},
	}))
	// (keyFile is refused: the operator writes no StatefulSet for it.)
	cases = append(cases, argsCase{"serviceName, no token, web files", func(p *monitoringv1.Prometheus) {
		p.Spec.ServiceName = ptr.To("governing")
		p.Spec.AutomountServiceAccountToken = ptr.To(false)
		p.Spec.Secrets = []string{"web-tls"}
		p.Spec.Web = &monitoringv1.PrometheusWebSpec{WebConfigFileFields: monitoringv1.WebConfigFileFields{TLSConfig: &monitoringv1.WebTLSConfig{
			CertFile:     ptr.To("/etc/prometheus/secrets/web-tls/tls.crt"),
			KeySecret:    corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "web-tls"}, Key: "tls.key"},
			ClientCAFile: ptr.To("/etc/prometheus/secrets/web-tls/ca.crt"), ClientAuthType: ptr.To(monitoringv1.ClientAuthType("VerifyClientCertIfGiven")),
		}}}
	}})
	for _, v := range []string{"v3.12.0", "v3.13.0"} {
		cases = append(cases, argsCase{"xor2 chunks " + v, func(p *monitoringv1.Prometheus) {
			p.Spec.Version = v
			p.Spec.TSDB = &monitoringv1.TSDBSpec{ChunkEncoding: &monitoringv1.ChunkEncodingSpec{Floats: ptr.To(monitoringv1.ChunkEncodingFloatsXor2)}}
		}})
	}
	objs := make([]*monitoringv1.Prometheus, len(cases))
	for i, tc := range cases {
		p := testPrometheus()
		p.Namespace, p.Name = ns, fmt.Sprintf("args-%d", i)
		tc.set(p)
		require.NoError(t, c.Create(ctx, p), tc.name)
		objs[i] = p
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sts appsv1.StatefulSet
			require.EventuallyWithT(t, func(ct *assert.CollectT) {
				assert.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prometheus-" + objs[i].Name}, &sts))
			}, 2*time.Minute, 50*time.Millisecond, "the operator's StatefulSet")
			var p monitoringv1.Prometheus
			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(objs[i]), &p))
			server, unsupported := FromPrometheus(&p)
			require.Empty(t, unsupported)
			_, ours := promserver.RenderWorkload(server, testPodOptions())
			require.Equal(t, containerArgs(t, &sts), containerArgs(t, ours), "the flags of Prometheus %s", p.Spec.Version)
			require.Equal(t, sts.Spec.ServiceName, ours.Spec.ServiceName, "the governing Service")
			require.Equal(t, sts.Spec.Template.Spec.AutomountServiceAccountToken, ours.Spec.Template.Spec.AutomountServiceAccountToken)
			var web corev1.Secret
			require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: sts.Name + "-web-config"}, &web))
			ourWeb, err := promserver.RenderWeb(promserver.Inputs{Server: server.PrometheusServer, Layout: server.Layout, Secrets: map[string]*corev1.Secret{
				ns + "/web-tls": {ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-tls"}, Data: map[string][]byte{"tls.key": []byte("a key")}},
			}})
			require.NoError(t, err)
			require.Equal(t, webFiles(t, web.Data[promserver.WebConfigSecretKey]), webFiles(t, ourWeb.Secret.Data[promserver.WebConfigSecretKey]), "the web configuration")
		})
	}
}

// webFiles is the web configuration file but the paths of the files of
// Secrets and ConfigMaps, which each side mounts where it does (podreload
// under /etc/prometheus/web_tls): the paths of the pod's files, as the
// object names them, are compared, and the settings.
func webFiles(t *testing.T, file []byte) map[string]map[string]any {
	t.Helper()
	var cfg map[string]map[string]any
	require.NoError(t, yaml.Unmarshal(file, &cfg))
	for _, k := range []string{"cert_file", "key_file", "client_ca_file"} {
		if p, ok := cfg["tls_server_config"][k].(string); ok && !strings.HasPrefix(p, "/etc/prometheus/secrets/") {
			cfg["tls_server_config"][k] = "a Secret's or ConfigMap's"
		}
	}
	return cfg
}

// containerArgs are the arguments of the container prometheus of sts.
func containerArgs(t *testing.T, sts *appsv1.StatefulSet) []string {
	t.Helper()
	return container(t, sts, "prometheus").Args
}

// testKubePrometheus creates kube-prometheus' own Prometheus
// (manifests/prometheus-prometheus.yaml as published, in
// testdata/operator/config/kube-prometheus.yaml) for the operator, then
// hands it to a controller: the StatefulSet is adopted in place, Prometheus
// runs with the operator's image, flags, labels and pod settings; the
// annotation removed, the operator takes it back, in place too.
func testKubePrometheus(t *testing.T, cfg *rest.Config, c client.Client) {
	ctx := t.Context()
	b, err := os.ReadFile(filepath.Join("testdata", "operator", "config", "kube-prometheus.yaml"))
	require.NoError(t, err)
	doc, _, _ := strings.Cut(string(b), "\n---\n")
	var p monitoringv1.Prometheus
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &p))
	require.Equal(t, "k8s", p.Name)
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.Namespace}}))
	require.NoError(t, c.Create(ctx, &p))
	key := client.ObjectKey{Namespace: p.Namespace, Name: "prometheus-k8s"}
	reloader := func(sts *appsv1.StatefulSet) string { return container(t, sts, "config-reloader").Image }
	var op appsv1.StatefulSet
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		if assert.NoError(ct, c.Get(ctx, key, &op)) {
			assert.Contains(ct, reloader(&op), "prometheus-config-reloader", "the operator's reloader")
		}
	}, time.Minute, 20*time.Millisecond)

	startController(t, cfg)
	controlplane.Edit(t, c, &p, func(p *monitoringv1.Prometheus) {
		p.Annotations = map[string]string{takeover.AnnotationControllerID: "podreload"}
	})
	var sts appsv1.StatefulSet
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		if assert.NoError(ct, c.Get(ctx, key, &sts)) {
			assert.Equal(ct, "podreload:test", reloader(&sts), "our reloader")
		}
	}, time.Minute, 20*time.Millisecond)
	require.Equal(t, op.UID, sts.UID, "adopted in place")
	require.Equal(t, op.Spec.Selector, sts.Spec.Selector)
	require.Equal(t, op.Spec.ServiceName, sts.Spec.ServiceName)
	require.Equal(t, op.Spec.Replicas, sts.Spec.Replicas)
	require.Empty(t, sts.Spec.VolumeClaimTemplates, "no storage, as the operator's")
	require.Equal(t, op.Spec.Template.Labels, sts.Spec.Template.Labels)
	pod, opPod := sts.Spec.Template.Spec, op.Spec.Template.Spec
	require.Equal(t, opPod.NodeSelector, pod.NodeSelector)
	require.Equal(t, opPod.SecurityContext, pod.SecurityContext)
	require.Equal(t, opPod.ServiceAccountName, pod.ServiceAccountName)
	opProm, prom := container(t, &op, "prometheus"), container(t, &sts, "prometheus")
	require.Equal(t, opProm.Image, prom.Image)
	require.Equal(t, opProm.Args, prom.Args, "the operator's flags")
	require.Equal(t, opProm.Resources, prom.Resources)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		var got monitoringv1.Prometheus
		if assert.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(&p), &got)) {
			i := slices.IndexFunc(got.Status.Conditions, func(c monitoringv1.Condition) bool { return c.Type == monitoringv1.Reconciled })
			if assert.GreaterOrEqual(ct, i, 0, "a Reconciled condition") {
				assert.Equal(ct, monitoringv1.ConditionTrue, got.Status.Conditions[i].Status, got.Status.Conditions[i].Message)
			}
		}
	}, time.Minute, 20*time.Millisecond, "the status, written by the controller")

	controlplane.Edit(t, c, &p, func(p *monitoringv1.Prometheus) { p.Annotations = nil })
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		if assert.NoError(ct, c.Get(ctx, key, &sts)) {
			assert.Contains(ct, reloader(&sts), "prometheus-config-reloader", "the operator's reloader again")
		}
	}, time.Minute, 20*time.Millisecond)
	require.Equal(t, op.UID, sts.UID, "taken back in place")
	require.Equal(t, op.Spec.Selector, sts.Spec.Selector)
}

// startController runs a controller of the Prometheus objects handed to
// podreload until the test ends, and returns the registry of its metrics.
func startController(t *testing.T, cfg *rest.Config) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	logger := slog.New(slog.NewTextHandler(testlog.Output(t), &slog.HandlerOptions{Level: slog.LevelInfo}))
	m, err := kube.NewManager(logger, reg, kube.Options{Config: cfg, Names: []string{promserver.App}, AddToScheme: []func(*runtime.Scheme) error{promserver.AddToScheme}})
	require.NoError(t, err)
	require.NoError(t, Setup(m, logger, reg, promserver.WorkloadOptions{DefaultReloaderImage: "podreload:test"}, takeover.Options{ControllerID: "podreload"}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	require.EventuallyWithT(t, func(c *assert.CollectT) { assert.NoError(c, m.Ready()) }, time.Minute, 20*time.Millisecond, "caches synced")
	return reg
}

// container is sts' container name.
func container(t require.TestingT, sts *appsv1.StatefulSet, name string) corev1.Container {
	cs := sts.Spec.Template.Spec.Containers
	i := slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == name })
	require.GreaterOrEqual(t, i, 0, "StatefulSet %s: no container %s", sts.Name, name)
	return cs[i]
}
