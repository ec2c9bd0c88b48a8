// Package thanos renders the Thanos sidecar of a Prometheus taken over
// (spec.thanos) as prometheus-operator v0.93.1 renders it
// (pkg/prometheus/server/statefulset.go createThanosContainer and
// compactionModeFor, thanos_sidecar_config.go, operator.go's governing
// Service): the thanos-sidecar container, its volume and the Secret that
// volume mounts, the flags it changes on Prometheus, and the gRPC port of
// the governing Service. It is pure: package promserver puts them into
// the pods, and promargs the flags into Prometheus' command line.
package thanos

import (
	"fmt"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/controller/compat"
	"github.com/podreload/podreload/controller/promcfg"
)

// prometheus-operator's names and defaults for the sidecar.
const (
	// ContainerName is the sidecar's container.
	ContainerName = "thanos-sidecar"
	// DefaultVersion is the Thanos version of a spec.thanos that sets
	// none (pkg/operator/defaults.go DefaultThanosVersion).
	DefaultVersion = "v0.42.2"
	// DefaultBaseImage is the image a spec.thanos without image nor
	// baseImage runs, at its version (DefaultThanosBaseImage, the
	// operator's --thanos-default-base-image).
	DefaultBaseImage = "quay.io/thanos/thanos"
	// GRPCPort and HTTPPort are the sidecar's ports, named grpc and http.
	GRPCPort = 10901
	HTTPPort = 10902
	// HTTPClientVolume is the volume of the sidecar's HTTP client
	// configuration, and the suffix of its Secret's name
	// (HTTPClientSecretName); HTTPClientDir is where it is mounted and
	// HTTPClientKey the file's name, from Thanos 0.24.
	HTTPClientVolume = "thanos-prometheus-http-client-file"
	HTTPClientDir    = "/etc/thanos/config"
	HTTPClientKey    = "prometheus.http-client-file.yaml"
	// ShipperMetaFile is the file, in the TSDB directory, in which the
	// sidecar's shipper notes the blocks it uploaded.
	ShipperMetaFile = "thanos.shipper.json"
	// defaultBlockDuration is the block duration of a Prometheus that
	// does not compact (spec.thanos.blockSize's default).
	defaultBlockDuration = "2h"
)

// HTTPClientConfig is the sidecar's HTTP client configuration, the
// Secret's one key, byte for byte as prometheus-operator marshals it
// (buildPrometheusHTTPClientConfigSecret): Prometheus' certificate is
// not verified.
const HTTPClientConfig = "tls_config:\n  insecure_skip_verify: true\n"

// HTTPClientSecretName is the name of the Secret holding HTTPClientConfig
// for the Prometheus whose objects are prefixed prefixed
// (prometheus-<name>).
func HTTPClientSecretName(prefixed string) string { return prefixed + "-" + HTTPClientVolume }

// Inputs are what the sidecar of a Prometheus is rendered from: its
// spec.thanos and what it reads of the Prometheus beside it.
type Inputs struct {
	// Spec is spec.thanos; nil renders no sidecar.
	Spec *monitoringv1.ThanosSpec
	// Prometheus is the version of Prometheus, for the compaction mode.
	Prometheus promcfg.Version
	// DisableCompaction is spec.disableCompaction, OutOfOrder whether
	// spec.tsdb sets an out-of-order time window.
	DisableCompaction, OutOfOrder bool
	// TLS tells that Prometheus serves HTTPS (spec.web.tlsConfig);
	// RoutePrefix is spec.routePrefix.
	TLS         bool
	RoutePrefix string
	// LogLevel and LogFormat are Prometheus', the sidecar's unless
	// spec.thanos sets its own.
	LogLevel, LogFormat string
	// ImagePullPolicy is spec.imagePullPolicy.
	ImagePullPolicy corev1.PullPolicy
	// Storage is Prometheus' data volume mount, which the sidecar mounts
	// to upload its blocks.
	Storage corev1.VolumeMount
	// HTTPClientSecret names the Secret of the HTTP client configuration
	// (HTTPClientSecretName).
	HTTPClientSecret string
}

// objectStorage reports whether the sidecar uploads blocks.
func objectStorage(t *monitoringv1.ThanosSpec) bool {
	return t != nil && (t.ObjectStorageConfig != nil || t.ObjectStorageConfigFile != nil)
}

// Version is the Thanos version of t, spec.thanos.version or
// DefaultVersion, read as prometheus-operator reads it (blang's
// semver.ParseTolerant: spaces and a leading v trimmed, a missing minor
// or patch is 0); ok is false when it is not a version, which
// prometheus-operator fails on.
func Version(t *monitoringv1.ThanosSpec) (v promcfg.Version, ok bool) {
	s, ok := compat.SemverTolerant(ptr.Deref(t.Version, DefaultVersion))
	if !ok {
		return v, false
	}
	return promcfg.ParseVersion(s), true
}

// Image is the sidecar's image, composed as prometheus-operator's
// BuildImagePath composes it: spec.thanos.image as is; else baseImage
// (default DefaultBaseImage) as is when it has a tag or a digest, else
// with sha, tag or the version as written (default DefaultVersion), in
// that order of preference. ok is false when there is no image to
// compose (a blank baseImage, or version, without image), which
// prometheus-operator fails on.
func Image(t *monitoringv1.ThanosSpec) (string, bool) {
	if image := ptr.Deref(t.Image, ""); strings.TrimSpace(image) != "" {
		return image, true
	}
	base := ptr.Deref(t.BaseImage, DefaultBaseImage)
	name := base[strings.LastIndexByte(base, '/')+1:]
	switch {
	case strings.TrimSpace(base) == "":
		return "", false
	case strings.ContainsAny(name, ":@"):
		return base, true
	case ptr.Deref(t.SHA, "") != "":
		return base + "@sha256:" + *t.SHA, true
	case ptr.Deref(t.Tag, "") != "":
		return normalizedName(base) + ":" + *t.Tag, true
	}
	version := ptr.Deref(t.Version, DefaultVersion)
	return base + ":" + version, version != ""
}

// normalizedName is an image name as the reference library normalizes it
// when prometheus-operator adds a tag: a name without a registry is on
// docker.io, one of a single component in its library.
func normalizedName(name string) string {
	first, _, more := strings.Cut(name, "/")
	switch {
	case !more:
		return "docker.io/library/" + name
	case strings.ContainsAny(first, ".:") || first == "localhost":
		return name
	}
	return "docker.io/" + name
}

// Validate refuses a spec.thanos prometheus-operator writes no
// StatefulSet for: a version that is not one, no image to compose, or
// additionalArgs naming a flag the sidecar is given (in either form,
// name or no-name), each error naming its field.
func Validate(in Inputs) error {
	t := in.Spec
	if t == nil {
		return nil
	}
	if _, ok := Version(t); !ok {
		return fmt.Errorf("spec.thanos.version: %q is not a version", ptr.Deref(t.Version, ""))
	}
	if _, ok := Image(t); !ok {
		return fmt.Errorf("spec.thanos.baseImage: no image to compose (set spec.thanos.image)")
	}
	own := map[string]bool{}
	for _, a := range args(in) {
		own[a.Name] = true
	}
	var clash []string
	for _, a := range t.AdditionalArgs {
		negated, found := strings.CutPrefix(a.Name, "no-")
		if !found {
			negated = "no-" + a.Name
		}
		switch {
		case own[a.Name]:
			clash = append(clash, a.Name)
		case own[negated]:
			clash = append(clash, negated)
		}
	}
	if len(clash) > 0 {
		return fmt.Errorf("spec.thanos.additionalArgs: %s set by the controller itself", strings.Join(clash, ", "))
	}
	return nil
}

// ServicePorts are the ports the sidecar of t adds to the governing
// Service, after Prometheus' (operator.go sync): its Store API's, grpc;
// none without spec.thanos.
func ServicePorts(t *monitoringv1.ThanosSpec) []corev1.ServicePort {
	if t == nil {
		return nil
	}
	return []corev1.ServicePort{{Name: "grpc", Port: GRPCPort, TargetPort: intstr.FromString("grpc")}}
}
