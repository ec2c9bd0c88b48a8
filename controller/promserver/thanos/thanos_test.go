package thanos

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/controller/compat"
	"github.com/podreload/podreload/controller/promcfg"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestVersion(t *testing.T) {
	for _, tc := range []struct {
		in   *string
		want promcfg.Version
		ok   bool
	}{
		{nil, promcfg.Version{0, 42, 2}, true},
		{ptr.To("v0.37.0"), promcfg.Version{0, 37, 0}, true},
		{ptr.To(" 0.30 "), promcfg.Version{0, 30, 0}, true},
		{ptr.To("v1"), promcfg.Version{1, 0, 0}, true},
		// A pre-release comes before its release (semver), as in blang's GTE.
		{ptr.To("v0.37.0-rc.0"), promcfg.ParseVersion("0.37.0-rc.0"), true},
		{ptr.To("v0.37-rc.0"), promcfg.Version{}, false},
		{ptr.To(""), promcfg.Version{}, false},
		{ptr.To("main"), promcfg.Version{}, false},
	} {
		t.Run(ptr.Deref(tc.in, "unset"), func(t *testing.T) {
			v, ok := Version(&monitoringv1.ThanosSpec{Version: tc.in})
			require.Equal(t, tc.ok, ok)
			if ok {
				require.Equal(t, tc.want, v)
			}
		})
	}
	v, _ := Version(&monitoringv1.ThanosSpec{Version: ptr.To("v0.37.0-rc.0")})
	require.False(t, v.AtLeast(0, 37), "a pre-release of 0.37.0 gets no 0.37 flag")
}

func TestImage(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec monitoringv1.ThanosSpec
		want string
		ok   bool
	}{
		{"default", monitoringv1.ThanosSpec{}, "quay.io/thanos/thanos:v0.42.2", true},
		{"version as written", monitoringv1.ThanosSpec{Version: ptr.To("0.40.0")}, "quay.io/thanos/thanos:0.40.0", true},
		{"image over the rest", monitoringv1.ThanosSpec{Image: ptr.To("i:1"), BaseImage: ptr.To("b"), Tag: ptr.To("t")}, "i:1", true},
		{"a blank image", monitoringv1.ThanosSpec{Image: ptr.To(" "), Version: ptr.To("v0.39.0")}, "quay.io/thanos/thanos:v0.39.0", true},
		{"a tagged base as is", monitoringv1.ThanosSpec{BaseImage: ptr.To("reg:5000/t:x"), SHA: ptr.To("abc")}, "reg:5000/t:x", true},
		{"sha over tag", monitoringv1.ThanosSpec{Tag: ptr.To("t"), SHA: ptr.To("abc")}, "quay.io/thanos/thanos@sha256:abc", true},
		{"tag, a registry", monitoringv1.ThanosSpec{BaseImage: ptr.To("localhost/t"), Tag: ptr.To("t")}, "localhost/t:t", true},
		{"tag, Docker Hub", monitoringv1.ThanosSpec{BaseImage: ptr.To("thanos/thanos"), Tag: ptr.To("t")}, "docker.io/thanos/thanos:t", true},
		{"tag, Docker Hub's library", monitoringv1.ThanosSpec{BaseImage: ptr.To("thanos"), Tag: ptr.To("t")}, "docker.io/library/thanos:t", true},
		{"no base", monitoringv1.ThanosSpec{BaseImage: ptr.To("")}, "", false},
		{"no version", monitoringv1.ThanosSpec{Version: ptr.To("")}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Image(&tc.spec)
			require.Equal(t, tc.ok, ok)
			if ok {
				require.Equal(t, tc.want, got)
			}
		})
	}
}

// objstore is an object storage configuration from a Secret.
func objstore() *corev1.SecretKeySelector {
	return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}
}

func TestPrometheusArgs(t *testing.T) {
	storage := corev1.VolumeMount{Name: "db", MountPath: "/prometheus"}
	for _, tc := range []struct {
		name string
		in   Inputs
		want []string
	}{
		{"nothing", Inputs{Prometheus: promcfg.Version{3, 13, 1}}, nil},
		{"a sidecar without object storage", Inputs{Spec: &monitoringv1.ThanosSpec{}, Prometheus: promcfg.Version{3, 13, 1}, OutOfOrder: true}, nil},
		{"disableCompaction alone", Inputs{DisableCompaction: true, Prometheus: promcfg.Version{2, 54, 0}, OutOfOrder: true},
			[]string{"--storage.tsdb.max-block-duration=2h", "--storage.tsdb.min-block-duration=2h"}},
		{"disableCompaction with blockSize", Inputs{Spec: &monitoringv1.ThanosSpec{BlockDuration: "1h"}, DisableCompaction: true, Prometheus: promcfg.Version{2, 55, 0}, OutOfOrder: true},
			[]string{"--storage.tsdb.max-block-duration=1h", "--storage.tsdb.min-block-duration=1h", "--no-storage.tsdb.allow-overlapping-compaction"}},
		{"uploads, Prometheus before 3.9", Inputs{Spec: &monitoringv1.ThanosSpec{ObjectStorageConfig: objstore()}, Prometheus: promcfg.Version{3, 8, 0}},
			[]string{"--storage.tsdb.max-block-duration=2h", "--storage.tsdb.min-block-duration=2h"}},
		{"uploads, Thanos before 0.41", Inputs{Spec: &monitoringv1.ThanosSpec{ObjectStorageConfigFile: ptr.To("/f"), Version: ptr.To("v0.40.0")}, Prometheus: promcfg.Version{3, 9, 0}},
			[]string{"--storage.tsdb.max-block-duration=2h", "--storage.tsdb.min-block-duration=2h"}},
		{"uploads, delayed", Inputs{Spec: &monitoringv1.ThanosSpec{ObjectStorageConfig: objstore(), BlockDuration: "1h"}, Prometheus: promcfg.Version{3, 9, 0}, OutOfOrder: true},
			[]string{"--storage.tsdb.delay-compact-file.path=/prometheus/thanos.shipper.json", "--no-storage.tsdb.allow-overlapping-compaction"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Storage = storage
			got := PrometheusArgs(tc.in)
			if tc.want == nil {
				require.Nil(t, got)
				return
			}
			require.Equal(t, tc.want, compat.CommandLine(got))
		})
	}
}

func TestContainer(t *testing.T) {
	c, volumes := Container(Inputs{})
	require.Nil(t, c, "no spec.thanos, no sidecar")
	require.Nil(t, volumes)

	in := Inputs{
		Spec: &monitoringv1.ThanosSpec{
			Version: ptr.To("v0.36.0"), ObjectStorageConfig: objstore(), TracingConfigFile: "/t",
			TracingConfig: &corev1.SecretKeySelector{Key: "unused"},
			GRPCServerTLSConfig: &monitoringv1.GRPCServerTLSConfig{
				TLSConfig:    monitoringv1.TLSConfig{SafeTLSConfig: monitoringv1.SafeTLSConfig{MinVersion: ptr.To(monitoringv1.TLSVersion12)}},
				CipherSuites: []string{"c"},
			},
			GetConfigTimeout: "5s", HTTPListenLocal: true,
			VolumeMounts:   []corev1.VolumeMount{{Name: "v", MountPath: "/v", SubPath: "dropped", ReadOnly: true}},
			AdditionalArgs: []monitoringv1.Argument{{Name: "x"}},
		},
		Prometheus: promcfg.Version{3, 13, 1}, TLS: true, RoutePrefix: "/prom/", LogLevel: "debug", LogFormat: "logfmt",
		ImagePullPolicy: corev1.PullAlways, Storage: corev1.VolumeMount{Name: "db", MountPath: "/prometheus", SubPath: "prometheus-db", ReadOnly: true},
		HTTPClientSecret: HTTPClientSecretName("prometheus-k8s"),
	}
	c, volumes = Container(in)
	require.Equal(t, []string{
		"sidecar",
		"--prometheus.url=https://localhost:9090/prom",
		"--grpc-address=:10901",
		"--http-address=127.0.0.1:10902",
		// Ciphers from 0.42, the minimum version from 0.37: neither here.
		"--objstore.config=$(OBJSTORE_CONFIG)",
		"--tsdb.path=/prometheus",
		// Thanos 0.36: compaction off, no shipper flags.
		"--tracing.config-file=/t",
		"--log.level=debug",
		"--log.format=logfmt",
		"--prometheus.get_config_timeout=5s",
		"--prometheus.http-client-file=/etc/thanos/config/prometheus.http-client-file.yaml",
		"--x",
	}, c.Args)
	require.Equal(t, "quay.io/thanos/thanos:v0.36.0", c.Image)
	require.Equal(t, corev1.PullAlways, c.ImagePullPolicy)
	require.Equal(t, []corev1.EnvVar{{Name: "OBJSTORE_CONFIG", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: objstore()}}}, c.Env, "no TRACING_CONFIG with a file")
	require.Equal(t, []corev1.VolumeMount{
		{Name: "v", MountPath: "/v"},
		{Name: "db", MountPath: "/prometheus", SubPath: "prometheus-db"},
		{Name: HTTPClientVolume, MountPath: HTTPClientDir},
	}, c.VolumeMounts)
	require.Equal(t, []corev1.Volume{{Name: HTTPClientVolume, VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: "prometheus-k8s-thanos-prometheus-http-client-file"},
	}}}, volumes)

	// Before Thanos 0.24: no HTTP client file, nor Secret; 0.29's flags off.
	in.Spec.Version = ptr.To("v0.23.0")
	c, volumes = Container(in)
	require.NotContains(t, c.Args, "--prometheus.http-client-file=/etc/thanos/config/prometheus.http-client-file.yaml")
	require.NotContains(t, c.Args, "--prometheus.get_config_timeout=5s")
	require.Empty(t, volumes)
	require.Nil(t, HTTPClientSecret(in.Spec, "n", "ns", nil))
	require.Nil(t, HTTPClientSecret(nil, "n", "ns", nil), "no sidecar, no Secret")
	s := HTTPClientSecret(&monitoringv1.ThanosSpec{}, "n", "ns", map[string]string{"a": "b"})
	require.Equal(t, map[string][]byte{HTTPClientKey: []byte(HTTPClientConfig)}, s.Data)
	require.Equal(t, "ns", s.Namespace)
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec *monitoringv1.ThanosSpec
		err  string
	}{
		{"no sidecar", nil, ""},
		{"every default", &monitoringv1.ThanosSpec{}, ""},
		{"not a version", &monitoringv1.ThanosSpec{Version: ptr.To("latest")}, `spec.thanos.version: "latest" is not a version`},
		{"no image", &monitoringv1.ThanosSpec{BaseImage: ptr.To(" ")}, "spec.thanos.baseImage: no image to compose (set spec.thanos.image)"},
		{"an image, no base", &monitoringv1.ThanosSpec{BaseImage: ptr.To(""), Image: ptr.To("i")}, ""},
		{"a flag of the sidecar's", &monitoringv1.ThanosSpec{AdditionalArgs: []monitoringv1.Argument{{Name: "grpc-address", Value: ":1"}}},
			"spec.thanos.additionalArgs: grpc-address set by the controller itself"},
		{"its no- form", &monitoringv1.ThanosSpec{ObjectStorageConfig: objstore(), AdditionalArgs: []monitoringv1.Argument{{Name: "no-tsdb.path"}, {Name: "min-time"}}},
			"spec.thanos.additionalArgs: tsdb.path set by the controller itself"},
		{"a flag it is not given", &monitoringv1.ThanosSpec{AdditionalArgs: []monitoringv1.Argument{{Name: "tsdb.path"}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(Inputs{Spec: tc.spec, Prometheus: promcfg.Version{3, 13, 1}})
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.err)
		})
	}
}

func TestServicePorts(t *testing.T) {
	require.Empty(t, ServicePorts(nil))
	require.Equal(t, []corev1.ServicePort{{Name: "grpc", Port: 10901, TargetPort: intstr.FromString("grpc")}}, ServicePorts(&monitoringv1.ThanosSpec{}))
}
