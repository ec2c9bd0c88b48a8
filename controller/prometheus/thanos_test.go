package prometheus

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/promserver/thanos"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/controlplane"
)

// sidecar is the thanos-sidecar container rendered for spec, a converted
// Prometheus's, and Prometheus' own container; a zero sidecar without
// one.
func sidecar(spec v1alpha1.PrometheusServerSpec) (side, prometheus corev1.Container) {
	server := promserver.Target{
		PrometheusServer: &v1alpha1.PrometheusServer{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "k8s"}, Spec: spec},
		Layout:           promserver.OperatorsLayout,
	}
	_, sts := promserver.RenderWorkload(server, testPodOptions())
	for _, c := range sts.Spec.Template.Spec.Containers {
		switch c.Name {
		case thanos.ContainerName:
			side = c
		case "prometheus":
			prometheus = c
		}
	}
	return side, prometheus
}

// sidecarArgs are the flags of the sidecar rendered for a spec that start
// with one of prefixes (after their --).
func sidecarArgs(prefixes ...string) func(v1alpha1.PrometheusServerSpec) any {
	return func(spec v1alpha1.PrometheusServerSpec) any {
		c, _ := sidecar(spec)
		return withPrefix(c.Args, prefixes)
	}
}

// sidecarOf is what get reads of the sidecar rendered for a spec.
func sidecarOf(get func(corev1.Container) any) func(v1alpha1.PrometheusServerSpec) any {
	return func(spec v1alpha1.PrometheusServerSpec) any {
		c, _ := sidecar(spec)
		return get(c)
	}
}

// withPrefix are the flags of args starting with --prefix, one of
// prefixes.
func withPrefix(args, prefixes []string) []string {
	var out []string
	for _, a := range args {
		if slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(a, "--"+p) }) {
			out = append(out, a)
		}
	}
	return out
}

// thanosCases are Prometheus objects with a Thanos sidecar, for the
// operator and the controller: the first is taken over and handed back.
func thanosCases() map[string]func(*monitoringv1.Prometheus) {
	return map[string]func(*monitoringv1.Prometheus){
		// Object storage with Prometheus and Thanos new enough for delayed
		// compaction, an out-of-order window, gRPC TLS, a claim.
		"a": func(p *monitoringv1.Prometheus) {
			p.Spec.Storage = &monitoringv1.StorageSpec{VolumeClaimTemplate: monitoringv1.EmbeddedPersistentVolumeClaim{
				Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				}},
			}}
			p.Spec.TSDB = &monitoringv1.TSDBSpec{OutOfOrderTimeWindow: ptr.To(monitoringv1.Duration("10m"))}
			p.Spec.LogLevel = "warn"
			p.Spec.Thanos = &monitoringv1.ThanosSpec{
				Version:             ptr.To("v0.42.1"),
				ObjectStorageConfig: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "objstore"}, Key: "objstore.yml"},
				TracingConfig:       &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "tracing"}, Key: "tracing.yml"},
				GRPCServerTLSConfig: &monitoringv1.GRPCServerTLSConfig{
					TLSConfig: monitoringv1.TLSConfig{
						TLSFilesConfig: monitoringv1.TLSFilesConfig{CAFile: "/etc/tls/ca.crt", CertFile: "/etc/tls/tls.crt", KeyFile: "/etc/tls/tls.key"},
						SafeTLSConfig:  monitoringv1.SafeTLSConfig{MinVersion: ptr.To(monitoringv1.TLSVersion12), ServerName: ptr.To("ignored")},
					},
					CipherSuites: []string{"TLS_AES_128_GCM_SHA256"}, Curves: []string{"X25519"},
				},
				MinTime:           "-1w",
				ReadyTimeout:      "5m",
				GetConfigInterval: "1m",
				GetConfigTimeout:  "20s",
				LogFormat:         "json",
				Resources:         corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
				VolumeMounts:      []corev1.VolumeMount{{Name: "tls", MountPath: "/etc/tls", ReadOnly: true}},
				AdditionalArgs:    []monitoringv1.Argument{{Name: "shipper.upload-compacted"}},
			}
			p.Spec.Volumes = []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "thanos-tls"}}}}
		},
		// An older Prometheus and Thanos: compaction off, blocks of 1h;
		// no HTTP client file before Thanos 0.24; listenLocal, a route
		// prefix.
		"b": func(p *monitoringv1.Prometheus) {
			p.Spec.Version, p.Spec.RoutePrefix = "v2.45.0", "/prom"
			p.Spec.Thanos = &monitoringv1.ThanosSpec{
				BaseImage: ptr.To("reg.example/thanos"), Version: ptr.To("0.23.0"), ListenLocal: true,
				ObjectStorageConfigFile: ptr.To("/etc/objstore.yml"), BlockDuration: "1h",
				GRPCServerTLSConfig: &monitoringv1.GRPCServerTLSConfig{TLSConfig: monitoringv1.TLSConfig{
					SafeTLSConfig: monitoringv1.SafeTLSConfig{MinVersion: ptr.To(monitoringv1.TLSVersion13)}, // Before 0.37: nothing.
				}},
			}
		},
		// No object storage, compaction disabled, Prometheus' log level.
		"c": func(p *monitoringv1.Prometheus) {
			p.Spec.DisableCompaction = true
			p.Spec.LogLevel = "debug"
			p.Spec.Thanos = &monitoringv1.ThanosSpec{Image: ptr.To("reg.example/thanos:main"), Version: ptr.To("v0.40.0"), GRPCListenLocal: true}
		},
	}
}

// testThanos compares the pods prometheus-operator writes for the
// Prometheus objects of thanosCases with those the controller renders
// (the sidecar container, its volume, Prometheus' flags, the governing
// Service's ports), then takes the first over and hands it back: the
// sidecar, the Service and the HTTP client Secret are the operator's all
// along.
func testThanos(t *testing.T, cfg *rest.Config, c client.Client) {
	ctx := t.Context()
	const ns = "thanos"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	cases := thanosCases()
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		p := testPrometheus()
		p.Namespace, p.Name = ns, name
		cases[name](p)
		require.NoError(t, c.Create(ctx, p), name)
	}
	operatorSTS := func(t *testing.T, name string, ours bool) *appsv1.StatefulSet {
		var sts appsv1.StatefulSet
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			if assert.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prometheus-" + name}, &sts)) {
				assert.Equal(ct, ours, container(ct, &sts, "config-reloader").Image == "podreload:test", "the reloader's image")
			}
		}, 2*time.Minute, 50*time.Millisecond, "the StatefulSet of %s", name)
		return &sts
	}
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		t.Run(name, func(t *testing.T) {
			op := operatorSTS(t, name, false)
			var p monitoringv1.Prometheus
			require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p))
			server, unsupported := FromPrometheus(&p)
			require.Empty(t, unsupported)
			_, ours := promserver.RenderWorkload(server, testPodOptions())
			require.Equal(t, containerArgs(t, op), containerArgs(t, ours), "the flags of Prometheus")
			want, got := container(t, op, thanos.ContainerName), container(t, ours, thanos.ContainerName)
			require.Equal(t, want.Image, got.Image)
			require.Equal(t, want.Args, got.Args, "the sidecar's flags")
			require.Equal(t, want.Env, got.Env)
			require.Equal(t, want.VolumeMounts, got.VolumeMounts)
			require.Equal(t, want.Resources, got.Resources)
			require.Equal(t, want.SecurityContext, got.SecurityContext)
			require.Equal(t, portsOf(want.Ports), portsOf(got.Ports))
			require.Equal(t, secretOf(thanosVolume(op)), secretOf(thanosVolume(ours)), "the HTTP client file's volume")
		})
	}
	var opSvc corev1.Service
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prometheus-operated"}, &opSvc))
	var p monitoringv1.Prometheus
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &p))
	server, _ := FromPrometheus(&p)
	svc, _ := promserver.RenderWorkload(server, testPodOptions())
	require.Equal(t, servicePorts(opSvc.Spec.Ports), servicePorts(svc.Spec.Ports), "prometheus-operated's ports")

	op := operatorSTS(t, "a", false)
	secretKey := client.ObjectKey{Namespace: ns, Name: "prometheus-a-" + thanos.HTTPClientVolume}
	var opSecret corev1.Secret
	require.NoError(t, c.Get(ctx, secretKey, &opSecret))
	require.Equal(t, []byte(thanos.HTTPClientConfig), opSecret.Data[thanos.HTTPClientKey], "the operator's HTTP client file")

	startController(t, cfg)
	controlplane.Edit(t, c, &p, func(p *monitoringv1.Prometheus) {
		p.Annotations = map[string]string{takeover.AnnotationControllerID: "podreload"}
	})
	same := func(when string, sts *appsv1.StatefulSet) {
		t.Helper()
		require.Equal(t, op.UID, sts.UID, "in place, %s", when)
		require.Equal(t, container(t, op, thanos.ContainerName), container(t, sts, thanos.ContainerName), "the sidecar, %s", when)
		require.Equal(t, thanosVolume(op), thanosVolume(sts), "the sidecar's volume, %s", when)
		require.Equal(t, containerArgs(t, op), containerArgs(t, sts), "the flags of Prometheus, %s", when)
		var svc corev1.Service
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(&opSvc), &svc))
		require.Equal(t, servicePorts(opSvc.Spec.Ports), servicePorts(svc.Spec.Ports), "prometheus-operated's ports, %s", when)
		var s corev1.Secret
		require.NoError(t, c.Get(ctx, secretKey, &s))
		require.Equal(t, opSecret.Data, s.Data, "the HTTP client Secret, %s", when)
	}
	same("taken over", operatorSTS(t, "a", true))
	reconciled(t, c, client.ObjectKeyFromObject(&p), monitoringv1.ConditionTrue, "")

	// A Prometheus the operator never had: the controller writes the
	// HTTP client Secret its pods mount.
	fresh := testPrometheus()
	fresh.Namespace, fresh.Name = ns, "fresh"
	fresh.Annotations = map[string]string{takeover.AnnotationControllerID: "podreload"}
	fresh.Spec.Thanos = &monitoringv1.ThanosSpec{}
	require.NoError(t, c.Create(ctx, fresh))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		var s corev1.Secret
		if assert.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prometheus-fresh-" + thanos.HTTPClientVolume}, &s)) {
			assert.Equal(ct, opSecret.Data, s.Data)
		}
	}, time.Minute, 20*time.Millisecond, "the HTTP client Secret of a Prometheus the operator never had")

	controlplane.Edit(t, c, &p, func(p *monitoringv1.Prometheus) { p.Annotations = nil })
	same("handed back", operatorSTS(t, "a", false))
}

// thanosVolume is the sidecar's HTTP client file volume of sts, nil
// without one.
func thanosVolume(sts *appsv1.StatefulSet) *corev1.Volume {
	vs := sts.Spec.Template.Spec.Volumes
	if i := slices.IndexFunc(vs, func(v corev1.Volume) bool { return v.Name == thanos.HTTPClientVolume }); i >= 0 {
		return &vs[i]
	}
	return nil
}

// secretOf is the name of the Secret v mounts, "" without one.
func secretOf(v *corev1.Volume) string {
	if v == nil || v.Secret == nil {
		return ""
	}
	return v.Secret.SecretName
}

// portsOf are the names and numbers of ports (the API server fills the
// protocol in).
func portsOf(ports []corev1.ContainerPort) []string {
	var out []string
	for _, p := range ports {
		out = append(out, p.Name+":"+strconv.Itoa(int(p.ContainerPort)))
	}
	return out
}

// servicePorts are the names, ports and target ports of a Service's
// ports.
func servicePorts(ports []corev1.ServicePort) []string {
	var out []string
	for _, p := range ports {
		out = append(out, p.Name+":"+strconv.Itoa(int(p.Port))+"->"+p.TargetPort.String())
	}
	return out
}
