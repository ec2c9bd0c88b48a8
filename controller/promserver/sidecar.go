package promserver

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/configsecret"
	"github.com/podreload/podreload/controller/webconfig"
)

// reloadArgs are the flags that tell the config-reloader sidecar
// (sidecar.Containers) how it reloads Prometheus, over HTTPS with the
// verification of web when Prometheus serves HTTPS.
func reloadArgs(spec v1alpha1.PrometheusServerSpec, web webconfig.Pod) []string {
	var args []string
	local := web.Scheme + "://" + web.Host + ":" + strconv.Itoa(WebPort)
	switch {
	// The flag's default is http://127.0.0.1:9090/...
	case spec.Reloader.ReloadMethod == "signal" && (spec.RoutePrefix != "" || WebTLS(spec)):
		args = append(args, "--reload-method=signal", "--runtimeinfo-url="+local+WebPath(spec, "/api/v1/status/runtimeinfo"))
	case spec.Reloader.ReloadMethod == "signal":
		args = append(args, "--reload-method=signal")
	default:
		args = append(args, "--reload-url="+local+WebPath(spec, "/-/reload"))
	}
	return append(args, web.ReloaderArgs...)
}

// podSource is what the source of the reloaders puts into the pod: where
// they read and write.
type podSource struct {
	// volumes come before the storage volume, ruleVolumes after it.
	volumes, ruleVolumes []corev1.Volume
	// reloaderMounts are the mounts of the init container and the sidecar;
	// prometheusMounts, the rule mounts of Prometheus, after its
	// configuration and storage.
	reloaderMounts, prometheusMounts []corev1.VolumeMount
	// args tell both reloaders where to read and write.
	args []string
}

// volumePodSource reads the config Secret and the rule ConfigMaps from the
// volumes the kubelet projects: the Secret's, and the padded set of rule
// volumes (ruleShardVolumes) for shards of them, which both reloaders
// render (--rules-input-dir), their files gunzipped, into the emptyDir
// Prometheus reads at rulesMountPath, as those of the API source do. The
// part Secrets of a split configuration (parts of them) are projected
// into one volume (configPartsVolume).
func volumePodSource(server Target, shards, parts int, configOut string) podSource {
	mountConfig := corev1.VolumeMount{Name: "config", MountPath: ConfigMountPath, ReadOnly: true}
	rules, ruleMounts, inputs := ruleShardVolumes(server, shards)
	src := podSource{
		volumes: []corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: ConfigSecretOf(server)}}},
			configOutVolume(),
		},
		ruleVolumes: append(rules, rulesVolume()),
		reloaderMounts: slices.Concat([]corev1.VolumeMount{mountConfig, {Name: "config-out", MountPath: ConfigOutMountPath},
			{Name: "rules", MountPath: RulesMountPath}}, ruleMounts),
		prometheusMounts: []corev1.VolumeMount{{Name: "rules", MountPath: RulesMountPath, ReadOnly: true}},
		args: slices.Concat([]string{
			"--config-file=" + ConfigMountPath + "/" + ConfigSecretKey,
			"--config-envsubst-file=" + configOut,
			"--rules-dir=" + RulesMountPath,
		}, inputs),
	}
	if slots := configsecret.PartSlots(parts, RuleVolumeStep); slots > 0 {
		src.volumes = append(src.volumes, ConfigPartsVolume(server, slots))
		src.reloaderMounts = append(src.reloaderMounts, corev1.VolumeMount{Name: "config-parts", MountPath: configPartsMountPath, ReadOnly: true})
		src.args = append(src.args, "--config-parts-dir="+configPartsMountPath)
	}
	return src
}

// ConfigPartsVolume projects the part Secrets of a split configuration,
// slots of them, each optional, into one volume: the key ConfigSecretKey
// of the part Secret <name> is the file <name>, as the reloader reads it
// (--config-parts-dir). Mounting parts needs the pod to name their
// Secrets: a volume per part, or a source per part of one projected
// volume, is a change of the pod template, which restarts Prometheus. The
// volume source reserves configsecret.PartSlots of them, so that the pods change only
// when the count of parts crosses a multiple of 4 (the first split
// included); the API source, which reads the parts through the API server
// (a watch per part Secret, by name), supports any number of them
// without a change of the pod, and is the default.
func ConfigPartsVolume(server Target, slots int) corev1.Volume {
	sources := make([]corev1.VolumeProjection, slots)
	for i, name := range configsecret.PartNames(ConfigSecretOf(server), slots) {
		sources[i] = corev1.VolumeProjection{Secret: &corev1.SecretProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: name},
			Items:                []corev1.KeyToPath{{Key: ConfigSecretKey, Path: name}},
			Optional:             ptr.To(true),
		}}
	}
	return corev1.Volume{Name: "config-parts", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}}
}

// apiPodSource reads the config Secret and the rule ConfigMaps (those
// labelled ruleFilesLabels) from the API server, with the pod's
// service account token: the reloaders write each ConfigMap into a
// directory of its name in an emptyDir at rulesMountPath, which
// Prometheus mounts read-only. The pod has no volume per shard, so its
// template does not depend on the shard count.
func apiPodSource(server Target, configOut string) podSource {
	return podSource{
		volumes:     []corev1.Volume{configOutVolume()},
		ruleVolumes: []corev1.Volume{rulesVolume()},
		reloaderMounts: []corev1.VolumeMount{
			{Name: "config-out", MountPath: ConfigOutMountPath},
			{Name: "rules", MountPath: RulesMountPath},
		},
		prometheusMounts: []corev1.VolumeMount{{Name: "rules", MountPath: RulesMountPath, ReadOnly: true}},
		args: []string{
			"--config-secret=" + server.Namespace + "/" + ConfigSecretOf(server),
			"--config-secret-key=" + ConfigSecretKey,
			"--rules-configmap-selector=" + labels.SelectorFromSet(ruleFilesLabels(server)).String(),
			"--rules-dir=" + RulesMountPath,
			"--config-envsubst-file=" + configOut,
		},
	}
}

// rulesVolume is the emptyDir the reloaders write the rule files into.
func rulesVolume() corev1.Volume {
	return corev1.Volume{Name: "rules", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}

// configOutVolume is the emptyDir the reloaders write the expanded
// configuration into.
func configOutVolume() corev1.Volume {
	return corev1.Volume{Name: "config-out", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}

// ruleShardVolumes are the rule ConfigMaps' volumes (optional: a shard appears
// without a restart), their mounts in the reloaders and the reloaders'
// --rules-input-dir flags.
func ruleShardVolumes(server Target, shards int) ([]corev1.Volume, []corev1.VolumeMount, []string) {
	n := RuleVolumes(shards)
	volumes := make([]corev1.Volume, 0, n)
	mounts := make([]corev1.VolumeMount, 0, n)
	inputs := make([]string, 0, n)
	for i := range n {
		name := "rulefiles-" + strconv.Itoa(i)
		dir := RuleConfigMapsMountPath + "/" + RuleShardName(server, i)
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: RuleShardName(server, i)},
			Optional:             ptr.To(true),
		}}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: dir, ReadOnly: true})
		inputs = append(inputs, "--rules-input-dir="+dir)
	}
	return volumes, mounts, inputs
}
