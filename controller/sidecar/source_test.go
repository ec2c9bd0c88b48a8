package sidecar

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// testSource is a source of the config Secret "main" and two rule
// ConfigMaps.
func testSource(api bool, parts ...string) Source {
	return Source{
		API: api, Namespace: "ns", ConfigSecret: "main", ConfigKey: "c.gz",
		ConfigDir: "/config", ConfigOutDir: "/out", ConfigOut: "/out/c.yaml", RulesDir: "/rules",
		RuleLabels: map[string]string{"rules": "main"}, RuleConfigMaps: []string{"main-r-0", "main-r-1"}, RuleConfigMapsDir: "/rulecms",
		Parts: parts, PartsDir: "/parts",
	}
}

func volumeNames(vs []corev1.Volume) []string {
	var names []string
	for _, v := range vs {
		names = append(names, v.Name)
	}
	return names
}

// TestSourceAPI: the API source reads the Secret by name and the rule
// ConfigMaps by label, with no volume per ConfigMap or part.
func TestSourceAPI(t *testing.T) {
	p := testSource(true, "main-1").Pod()
	require.Equal(t, []string{"--config-secret=ns/main", "--config-secret-key=c.gz", "--rules-configmap-selector=rules=main",
		"--rules-dir=/rules", "--config-envsubst-file=/out/c.yaml", StateSecretArg}, p.Args)
	require.Equal(t, []string{"config-out"}, volumeNames(p.Volumes))
	require.Equal(t, []string{"rules"}, volumeNames(p.RuleVolumes))
	require.Equal(t, []corev1.VolumeMount{{Name: "config-out", MountPath: "/out"}, {Name: "rules", MountPath: "/rules"}}, p.ReloaderMounts)
	require.Equal(t, []corev1.VolumeMount{{Name: "rules", MountPath: "/rules", ReadOnly: true}}, p.ServerMounts)
}

// TestSourceVolumes: the volume source mounts the Secret, each rule
// ConfigMap (optional) in the directory of its name, and the parts in one
// projected volume when there are parts.
func TestSourceVolumes(t *testing.T) {
	p := testSource(false).Pod()
	require.Equal(t, []string{"--config-file=/config/c.gz", "--config-envsubst-file=/out/c.yaml", "--rules-dir=/rules",
		"--rules-input-dir=/rulecms/main-r-0", "--rules-input-dir=/rulecms/main-r-1", StateSecretArg}, p.Args)
	require.Equal(t, []string{"config", "config-out"}, volumeNames(p.Volumes))
	require.Equal(t, "main", p.Volumes[0].Secret.SecretName)
	require.Equal(t, []string{"rulefiles-0", "rulefiles-1", "rules"}, volumeNames(p.RuleVolumes))
	require.Equal(t, "main-r-1", p.RuleVolumes[1].ConfigMap.Name)
	require.True(t, *p.RuleVolumes[1].ConfigMap.Optional)
	require.Equal(t, corev1.VolumeMount{Name: "rulefiles-1", MountPath: "/rulecms/main-r-1", ReadOnly: true}, p.ReloaderMounts[4])
	require.Len(t, p.ReloaderMounts, 5)

	src := testSource(false, "main-1", "main-2")
	src.StateDir, src.StateMount = "/data/.state", corev1.VolumeMount{Name: "data", MountPath: "/data"}
	p = src.Pod()
	require.Equal(t, []string{"--config-parts-dir=/parts", "--state-dir=/data/.state"}, p.Args[len(p.Args)-2:])
	require.Equal(t, src.StateMount, p.ReloaderMounts[len(p.ReloaderMounts)-1], "the state on the data volume")
	require.Equal(t, []string{"config", "config-out", "config-parts"}, volumeNames(p.Volumes))
	require.Equal(t, corev1.VolumeMount{Name: "config-parts", MountPath: "/parts", ReadOnly: true}, p.ReloaderMounts[len(p.ReloaderMounts)-2])
	sources := p.Volumes[2].Projected.Sources
	require.Len(t, sources, 2)
	require.Equal(t, "main-2", sources[1].Secret.Name)
	require.Equal(t, []corev1.KeyToPath{{Key: "c.gz", Path: "main-2"}}, sources[1].Secret.Items)
	require.True(t, *sources[1].Secret.Optional)
}
