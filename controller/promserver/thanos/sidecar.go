package thanos

import (
	"cmp"
	"path"
	"strconv"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/controller/compat"
	"github.com/podreload/podreload/controller/promcfg"
)

// localhost is how the sidecar reaches Prometheus (the operator's
// --localhost default).
const localhost = "localhost"

// Compaction is how Prometheus compacts its blocks beside a sidecar
// (compactionMode).
type Compaction int

const (
	// CompactionDefault leaves compaction to Prometheus: no block is
	// uploaded.
	CompactionDefault Compaction = iota
	// CompactionDisabled turns compaction off (equal minimum and maximum
	// block durations), so that the sidecar uploads every block as
	// Prometheus cut it.
	CompactionDisabled
	// CompactionDelayed keeps compaction on, Prometheus compacting only
	// the blocks the shipper's meta file says were uploaded (from
	// Prometheus 3.9 and Thanos 0.41).
	CompactionDelayed
)

// CompactionOf is the compaction of a Prometheus of version prometheus
// with spec.thanos t and spec.disableCompaction disable, as
// prometheus-operator decides it (compactionModeFor): off when asked,
// else Prometheus' own without object storage, else delayed when both
// versions have it, else off.
func CompactionOf(t *monitoringv1.ThanosSpec, disable bool, prometheus promcfg.Version) Compaction {
	switch {
	case disable:
		return CompactionDisabled
	case !objectStorage(t):
		return CompactionDefault
	}
	if v, ok := Version(t); ok && v.AtLeast(0, 41) && prometheus.AtLeast(3, 9) {
		return CompactionDelayed
	}
	return CompactionDisabled
}

// PrometheusArgs are the flags the compaction of in gives Prometheus, in
// prometheus-operator's order (makeStatefulSetSpec): the block durations
// (spec.thanos.blockSize, default 2h) when it is off, the shipper's meta
// file when it is delayed; and, either way, with an out-of-order window,
// no overlapping compaction from Prometheus 2.55. With neither a sidecar
// nor disableCompaction, none.
func PrometheusArgs(in Inputs) []monitoringv1.Argument {
	var args []monitoringv1.Argument
	mode := CompactionOf(in.Spec, in.DisableCompaction, in.Prometheus)
	switch mode {
	case CompactionDisabled:
		d := defaultBlockDuration
		if in.Spec != nil && in.Spec.BlockDuration != "" {
			d = string(in.Spec.BlockDuration)
		}
		args = append(args,
			monitoringv1.Argument{Name: "storage.tsdb.max-block-duration", Value: d},
			monitoringv1.Argument{Name: "storage.tsdb.min-block-duration", Value: d})
	case CompactionDelayed:
		args = append(args, monitoringv1.Argument{Name: "storage.tsdb.delay-compact-file.path", Value: path.Join(in.Storage.MountPath, ShipperMetaFile)})
	}
	if in.OutOfOrder && mode != CompactionDefault && in.Prometheus.AtLeast(2, 55) {
		args = append(args, monitoringv1.Argument{Name: "no-storage.tsdb.allow-overlapping-compaction"})
	}
	return args
}

// args are the sidecar's flags but additionalArgs, in
// prometheus-operator's order (createThanosContainer), each gated on the
// Thanos version as it gates them.
func args(in Inputs) []monitoringv1.Argument {
	t := in.Spec
	v, _ := Version(t)
	grpcHost, httpHost := "", ""
	if t.ListenLocal || t.GRPCListenLocal {
		grpcHost = "127.0.0.1"
	}
	if t.ListenLocal || t.HTTPListenLocal {
		httpHost = "127.0.0.1"
	}
	scheme := "http"
	if in.TLS {
		scheme = "https"
	}
	prefix := in.RoutePrefix
	if prefix == "" {
		prefix = "/"
	}
	args := []monitoringv1.Argument{
		{Name: "prometheus.url", Value: scheme + "://" + localhost + ":9090" + path.Clean(prefix)},
		{Name: "grpc-address", Value: grpcHost + ":" + strconv.Itoa(GRPCPort)},
		{Name: "http-address", Value: httpHost + ":" + strconv.Itoa(HTTPPort)},
	}
	args = append(args, grpcTLSArgs(t.GRPCServerTLSConfig, v)...)
	if objectStorage(t) {
		if t.ObjectStorageConfigFile != nil {
			args = append(args, monitoringv1.Argument{Name: "objstore.config-file", Value: *t.ObjectStorageConfigFile})
		} else {
			args = append(args, monitoringv1.Argument{Name: "objstore.config", Value: "$(OBJSTORE_CONFIG)"})
		}
		args = append(args, monitoringv1.Argument{Name: "tsdb.path", Value: in.Storage.MountPath})
		if CompactionOf(t, in.DisableCompaction, in.Prometheus) == CompactionDelayed {
			args = append(args,
				monitoringv1.Argument{Name: "shipper.meta-file-name", Value: ShipperMetaFile},
				monitoringv1.Argument{Name: "shipper.ignore-unequal-block-size"})
		}
	}
	switch {
	case t.TracingConfigFile != "":
		args = append(args, monitoringv1.Argument{Name: "tracing.config-file", Value: t.TracingConfigFile})
	case t.TracingConfig != nil:
		args = append(args, monitoringv1.Argument{Name: "tracing.config", Value: "$(TRACING_CONFIG)"})
	}
	for _, f := range []struct{ name, own, prometheus string }{
		{"log.level", t.LogLevel, in.LogLevel},
		{"log.format", t.LogFormat, in.LogFormat},
	} {
		if value := cmp.Or(f.own, f.prometheus); value != "" {
			args = append(args, monitoringv1.Argument{Name: f.name, Value: value})
		}
	}
	for _, f := range []struct {
		name, value string
		since       int // The Thanos 0.x the flag needs.
	}{
		{"min-time", t.MinTime, 0},
		{"prometheus.ready_timeout", string(t.ReadyTimeout), 0},
		{"prometheus.get_config_timeout", string(t.GetConfigTimeout), 29},
		{"prometheus.get_config_interval", string(t.GetConfigInterval), 29},
	} {
		if f.value != "" && v.AtLeast(0, f.since) {
			args = append(args, monitoringv1.Argument{Name: f.name, Value: f.value})
		}
	}
	if httpClientFile(t) {
		args = append(args, monitoringv1.Argument{Name: "prometheus.http-client-file", Value: path.Join(HTTPClientDir, HTTPClientKey)})
	}
	return args
}

// grpcTLSArgs are the flags of the sidecar's gRPC server TLS of Thanos
// v: the files, the minimum version from 0.37, the cipher suites and
// curves from 0.42. The other fields are prometheus-operator's
// GRPCServerTLSConfig's but render nothing.
func grpcTLSArgs(tls *monitoringv1.GRPCServerTLSConfig, v promcfg.Version) []monitoringv1.Argument {
	if tls == nil {
		return nil
	}
	var args []monitoringv1.Argument
	for _, f := range []struct{ name, value string }{
		{"grpc-server-tls-cert", tls.CertFile},
		{"grpc-server-tls-key", tls.KeyFile},
		{"grpc-server-tls-client-ca", tls.CAFile},
	} {
		if f.value != "" {
			args = append(args, monitoringv1.Argument{Name: f.name, Value: f.value})
		}
	}
	if m := tlsVersion(ptr.Deref(tls.MinVersion, "")); m != "" && v.AtLeast(0, 37) {
		args = append(args, monitoringv1.Argument{Name: "grpc-server-tls-min-version", Value: m})
	}
	if v.AtLeast(0, 42) {
		for _, cs := range tls.CipherSuites {
			args = append(args, monitoringv1.Argument{Name: "grpc-server-tls-ciphers", Value: cs})
		}
		for _, c := range tls.Curves {
			args = append(args, monitoringv1.Argument{Name: "grpc-server-tls-curves", Value: c})
		}
	}
	return args
}

// tlsVersion is a TLS version as Thanos' flag spells it
// (pkg/operator/thanos.go TLSVersionForThanos): TLS12 is 1.2; "" for
// another value.
func tlsVersion(v monitoringv1.TLSVersion) string {
	switch v {
	case monitoringv1.TLSVersion10:
		return "1.0"
	case monitoringv1.TLSVersion11:
		return "1.1"
	case monitoringv1.TLSVersion12:
		return "1.2"
	case monitoringv1.TLSVersion13:
		return "1.3"
	}
	return ""
}

// httpClientFile reports whether the sidecar of t reads the HTTP client
// configuration file: from Thanos 0.24.
func httpClientFile(t *monitoringv1.ThanosSpec) bool {
	if t == nil {
		return false
	}
	v, _ := Version(t)
	return v.AtLeast(0, 24)
}

// HTTPClientSecret is the Secret of the HTTP client configuration of the
// sidecar of t, named name in namespace, with labels, when its pods mount
// it (from Thanos 0.24); nil otherwise. prometheus-operator writes it for
// every Prometheus, a sidecar or not; podreload when the pods need it.
func HTTPClientSecret(t *monitoringv1.ThanosSpec, name, namespace string, labels map[string]string) *corev1.Secret {
	if !httpClientFile(t) {
		return nil
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{HTTPClientKey: []byte(HTTPClientConfig)},
	}
}

// Container is the sidecar of in, with the volumes it needs besides the
// pod's (the HTTP client configuration's Secret, from Thanos 0.24), as
// prometheus-operator renders them; nil without spec.thanos. Validate
// accepted in.
func Container(in Inputs) (*corev1.Container, []corev1.Volume) {
	t := in.Spec
	if t == nil {
		return nil, nil
	}
	image, _ := Image(t)
	c := &corev1.Container{
		Name:                     ContainerName,
		Image:                    image,
		ImagePullPolicy:          in.ImagePullPolicy,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
		Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: HTTPPort}, {Name: "grpc", ContainerPort: GRPCPort}},
		Resources: t.Resources,
	}
	// Name and mount path alone, as prometheus-operator copies them.
	for _, m := range t.VolumeMounts {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: m.Name, MountPath: m.MountPath})
	}
	if objectStorage(t) {
		if t.ObjectStorageConfigFile == nil {
			c.Env = append(c.Env, corev1.EnvVar{Name: "OBJSTORE_CONFIG", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: t.ObjectStorageConfig}})
		}
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: in.Storage.Name, MountPath: in.Storage.MountPath, SubPath: in.Storage.SubPath})
	}
	if t.TracingConfigFile == "" && t.TracingConfig != nil {
		c.Env = append(c.Env, corev1.EnvVar{Name: "TRACING_CONFIG", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: t.TracingConfig}})
	}
	var volumes []corev1.Volume
	if httpClientFile(t) {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: HTTPClientVolume, MountPath: HTTPClientDir})
		volumes = append(volumes, corev1.Volume{Name: HTTPClientVolume, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: in.HTTPClientSecret},
		}})
	}
	c.Args = append([]string{"sidecar"}, compat.CommandLine(append(args(in), t.AdditionalArgs...))...)
	return c, volumes
}
