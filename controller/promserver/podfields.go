package promserver

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/promcfg"
	"github.com/podreload/podreload/controller/sidecar"
	"github.com/podreload/podreload/controller/takeover"
)

// The pod fields and flags of the spec that prometheus-operator's
// Prometheus has too, rendered as it renders them, so that a takeover
// carries them.

const (
	// secretsMountPath and configMapsMountPath hold the Secrets and
	// ConfigMaps of spec.secrets and spec.configMaps, one directory each,
	// where prometheus-operator mounts them.
	secretsMountPath    = "/etc/prometheus/secrets"
	configMapsMountPath = "/etc/prometheus/configmaps"
	// logFileVolume holds the query and scrape failure log files named
	// without a directory.
	logFileVolume = "log-file"
)

// invalidLabelChars are the characters a DNS label cannot hold.
var invalidLabelChars = regexp.MustCompile(`[^a-z0-9-]+`)

// podUserVolumes are the volumes of spec.volumes, spec.secrets and
// spec.configMaps and the log files', and the Prometheus container's
// mounts of spec.volumeMounts, of the secrets and configMaps and of the
// log files, as prometheus-operator renders them.
func podUserVolumes(spec v1alpha1.PrometheusServerSpec) ([]corev1.Volume, []corev1.VolumeMount) {
	volumes, mounts := slices.Clone(spec.Volumes), slices.Clone(spec.VolumeMounts)
	for _, s := range spec.Secrets {
		name := userVolumeName("secret", s)
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s}}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: secretsMountPath + "/" + s})
	}
	for _, c := range spec.ConfigMaps {
		name := userVolumeName("configmap", c)
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: c}}}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: configMapsMountPath + "/" + c})
	}
	// prometheus-operator's log-file emptyDir: for a scrape failure log
	// file without a directory, or for such a query log file when no
	// scrape failure log file is set (whatever its directory).
	if f := spec.ScrapeFailureLogFile; f != nil && promcfg.UsesLogVolume(*f) || f == nil && promcfg.UsesLogVolume(spec.QueryLogFile) {
		volumes = append(volumes, corev1.Volume{Name: logFileVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		mounts = append(mounts, corev1.VolumeMount{Name: logFileVolume, MountPath: promcfg.LogDirectory})
	}
	return volumes, mounts
}

// userVolumeName is the volume of the Secret or ConfigMap name:
// prefix-name lower-cased, with the characters a DNS label cannot hold
// replaced by "-", trimmed of "-" and cut to 63 characters, as
// prometheus-operator names it (validatePod refuses a name that is
// still not a label).
func userVolumeName(prefix, name string) string {
	label := strings.Trim(invalidLabelChars.ReplaceAllString(strings.ToLower(prefix+"-"+name), "-"), "-")
	return label[:min(len(label), validation.DNS1123LabelMaxLength)]
}

// portName is the name of Prometheus' container port: spec.portName, or web.
func portName(spec v1alpha1.PrometheusServerSpec) string {
	return cmp.Or(spec.PortName, "web")
}

// validatePod refuses the pods of sts (every shard's have the same
// volumes and mounts) that the API server would refuse because of
// spec.volumes, spec.volumeMounts, spec.secrets or spec.configMaps: a
// volume name that is not a DNS label or is used twice (among them, or
// by the controller), a mount of a volume that does not exist, a path
// mounted twice in a container.
func validatePod(sts *appsv1.StatefulSet) error {
	const fields = "spec.volumes, spec.secrets (volume secret-<name>) and spec.configMaps (configmap-<name>)"
	pod := sts.Spec.Template.Spec
	volumes := map[string]bool{}
	for _, c := range sts.Spec.VolumeClaimTemplates {
		volumes[c.Name] = true
	}
	for _, v := range pod.Volumes {
		if errs := validation.IsDNS1123Label(v.Name); len(errs) > 0 {
			return fmt.Errorf("%s: volume %q: %s", fields, v.Name, strings.Join(errs, "; "))
		}
		if volumes[v.Name] {
			return fmt.Errorf("%s: volume %q is used twice in the pod (by these fields and the controller's own volumes)", fields, v.Name)
		}
		volumes[v.Name] = true
	}
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
		paths := map[string]bool{}
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				return fmt.Errorf("spec.volumeMounts: volume %q is no volume of the pod", m.Name)
			}
			if paths[m.MountPath] {
				return fmt.Errorf("spec.volumeMounts: %s is mounted twice in container %s", m.MountPath, c.Name)
			}
			paths[m.MountPath] = true
		}
	}
	return nil
}

// validateContainers refuses spec.containers and spec.initContainers of a
// server taken over that do not merge into the rendered ones
// (takeover.MergeContainers: a patch that is no strategic merge patch of
// the container it names).
func validateContainers(server Target) error {
	for _, f := range []struct {
		field    string
		rendered []string
		patches  []corev1.Container
	}{
		{"containers", []string{"prometheus", sidecar.ContainerName}, server.Spec.Containers},
		{"initContainers", []string{sidecar.InitContainerName}, server.Spec.InitContainers},
	} {
		base := make([]corev1.Container, len(f.rendered))
		for i, name := range f.rendered {
			base[i].Name = name
		}
		if _, err := takeover.MergeContainers(base, f.patches); err != nil {
			return fmt.Errorf("spec.%s: %w", f.field, err)
		}
	}
	return nil
}

// mergeContainers merges into pod the user's containers of a Prometheus
// or agent taken over, as prometheus-operator merges them (Render checked
// that they merge, validateContainers), and sets its hostNetwork. A
// PrometheusServer has neither.
func mergeContainers(pod *corev1.PodSpec, spec v1alpha1.PrometheusServerSpec) {
	if spec.HostNetwork {
		pod.HostNetwork = true
		if spec.DNSPolicy == nil {
			pod.DNSPolicy = corev1.DNSClusterFirstWithHostNet
		}
	}
	if merged, err := takeover.MergeContainers(pod.Containers, spec.Containers); err == nil {
		pod.Containers = merged
	}
	if merged, err := takeover.MergeContainers(pod.InitContainers, spec.InitContainers); err == nil {
		pod.InitContainers = merged
	}
}
