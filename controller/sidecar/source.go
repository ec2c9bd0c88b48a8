package sidecar

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// Source is where a kind's reloaders read the configuration and the rule
// files, and where they write them for the server: the config Secret and
// the rule ConfigMaps, read from the API server or from the volumes the
// kubelet projects.
type Source struct {
	// API reads them from the API server, with the pod's service account
	// token; false, from the volumes the kubelet projects.
	API bool
	// Namespace of the config Secret and the rule ConfigMaps.
	Namespace string
	// ConfigSecret is the name of the config Secret, ConfigKey its key
	// (and that of its part Secrets) of the configuration, gzipped.
	ConfigSecret, ConfigKey string
	// ConfigDir is where the volume source mounts the config Secret.
	ConfigDir string
	// ConfigOutDir is the emptyDir the reloaders write the expanded
	// configuration into; ConfigOut, its file.
	ConfigOutDir, ConfigOut string
	// RulesDir is the emptyDir the reloaders write the rule files into,
	// which the server mounts read-only.
	RulesDir string
	// RuleLabels select the rule ConfigMaps the API source reads.
	RuleLabels map[string]string
	// RuleConfigMaps are the rule ConfigMaps the volume source mounts,
	// each optional (one appears without a restart), each in the
	// directory of its name under RuleConfigMapsDir.
	RuleConfigMaps    []string
	RuleConfigMapsDir string
	// Parts are the part Secrets of a split configuration the volume
	// source projects into one volume at PartsDir (PartsVolume); none
	// without a split.
	Parts    []string
	PartsDir string
	// StateDir, when set, is where on StateMount, the server's data
	// volume, the reloaders keep their state (--state-dir); unset, they
	// keep it in their pod's state Secret (StateSecretArg), so that it
	// outlives the pod: a new pod starts the server on what it last
	// accepted, not on content it rejected.
	StateDir   string
	StateMount corev1.VolumeMount
}

// Pod is what a Source puts into the pod.
type Pod struct {
	// Volumes come before the server's storage volume, RuleVolumes after
	// it.
	Volumes, RuleVolumes []corev1.Volume
	// ReloaderMounts are the mounts of the init container and the
	// sidecar; ServerMounts, the server's rule mounts.
	ReloaderMounts, ServerMounts []corev1.VolumeMount
	// Args tell both reloaders where to read and write.
	Args []string
}

// Pod returns what s puts into the pod. The API source has no volume per
// rule ConfigMap or part, so that the pod template does not depend on
// their count: the reloaders write each ConfigMap into a directory of its
// name in RulesDir. The volume source renders the rule ConfigMaps' files
// (--rules-input-dir), gunzipped, into RulesDir as the API source does.
func (s Source) Pod() Pod {
	p := s.pod()
	if s.StateDir != "" {
		p.Args = append(p.Args, "--state-dir="+s.StateDir)
		p.ReloaderMounts = append(p.ReloaderMounts, s.StateMount)
	} else {
		p.Args = append(p.Args, StateSecretArg)
	}
	return p
}

// pod is what s puts into the pod, but for the state.
func (s Source) pod() Pod {
	if s.API {
		return Pod{
			Volumes:        []corev1.Volume{emptyDir("config-out")},
			RuleVolumes:    []corev1.Volume{emptyDir("rules")},
			ReloaderMounts: []corev1.VolumeMount{{Name: "config-out", MountPath: s.ConfigOutDir}, {Name: "rules", MountPath: s.RulesDir}},
			ServerMounts:   []corev1.VolumeMount{{Name: "rules", MountPath: s.RulesDir, ReadOnly: true}},
			Args: []string{
				"--config-secret=" + s.Namespace + "/" + s.ConfigSecret,
				"--config-secret-key=" + s.ConfigKey,
				"--rules-configmap-selector=" + labels.SelectorFromSet(s.RuleLabels).String(),
				"--rules-dir=" + s.RulesDir,
				"--config-envsubst-file=" + s.ConfigOut,
			},
		}
	}
	rules, ruleMounts, inputs := s.ruleVolumes()
	p := Pod{
		Volumes: []corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s.ConfigSecret}}},
			emptyDir("config-out"),
		},
		RuleVolumes: append(rules, emptyDir("rules")),
		ReloaderMounts: slices.Concat([]corev1.VolumeMount{{Name: "config", MountPath: s.ConfigDir, ReadOnly: true},
			{Name: "config-out", MountPath: s.ConfigOutDir}, {Name: "rules", MountPath: s.RulesDir}}, ruleMounts),
		ServerMounts: []corev1.VolumeMount{{Name: "rules", MountPath: s.RulesDir, ReadOnly: true}},
		Args: slices.Concat([]string{
			"--config-file=" + s.ConfigDir + "/" + s.ConfigKey,
			"--config-envsubst-file=" + s.ConfigOut,
			"--rules-dir=" + s.RulesDir,
		}, inputs),
	}
	if len(s.Parts) > 0 {
		p.Volumes = append(p.Volumes, PartsVolume(s.Parts, s.ConfigKey))
		p.ReloaderMounts = append(p.ReloaderMounts, corev1.VolumeMount{Name: "config-parts", MountPath: s.PartsDir, ReadOnly: true})
		p.Args = append(p.Args, "--config-parts-dir="+s.PartsDir)
	}
	return p
}

// PartsVolume projects parts, the part Secrets of a split configuration,
// each optional, into one volume: the key of the part Secret <name> is
// the file <name>, as the reloader reads it (--config-parts-dir).
// Mounting parts needs the pod to name their Secrets: a volume per part,
// or a source per part of one projected volume, is a change of the pod
// template, which restarts the server; a kind reserves more parts than
// it has, so that its pods change less often. The API source, which
// reads the parts through the API server (a watch per part Secret, by
// name), supports any number of them without a change of the pod.
func PartsVolume(parts []string, key string) corev1.Volume {
	sources := make([]corev1.VolumeProjection, len(parts))
	for i, name := range parts {
		sources[i] = corev1.VolumeProjection{Secret: &corev1.SecretProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: name},
			Items:                []corev1.KeyToPath{{Key: key, Path: name}},
			Optional:             ptr.To(true),
		}}
	}
	return corev1.Volume{Name: "config-parts", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}}
}

// emptyDir is an emptyDir the reloaders write into.
func emptyDir(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}

// ruleVolumes are the rule ConfigMaps' volumes, their mounts in the
// reloaders and the reloaders' --rules-input-dir flags.
func (s Source) ruleVolumes() ([]corev1.Volume, []corev1.VolumeMount, []string) {
	volumes := make([]corev1.Volume, 0, len(s.RuleConfigMaps))
	mounts := make([]corev1.VolumeMount, 0, len(s.RuleConfigMaps))
	inputs := make([]string, 0, len(s.RuleConfigMaps))
	for i, cm := range s.RuleConfigMaps {
		name := "rulefiles-" + strconv.Itoa(i)
		dir := s.RuleConfigMapsDir + "/" + cm
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: cm},
			Optional:             ptr.To(true),
		}}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: dir, ReadOnly: true})
		inputs = append(inputs, "--rules-input-dir="+dir)
	}
	return volumes, mounts, inputs
}
