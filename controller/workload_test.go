package controller

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/podreload/podreload/api/v1alpha1"
)

const (
	testPrometheusImage = "quay.io/prometheus/prometheus:v3.10.0"
	testReloaderImage   = "ghcr.io/podreload/config-reloader:v0.1.0"
)

func testServer() *v1alpha1.PrometheusServer {
	return &v1alpha1.PrometheusServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "main", UID: "0d7e5a4c-6b8f-4e0a-9c1d-2e3f4a5b6c7d"},
	}
}

func testOptions() WorkloadOptions {
	return WorkloadOptions{DefaultPrometheusImage: testPrometheusImage, DefaultReloaderImage: testReloaderImage, RuleShards: 1}
}

// workloadCases are the servers of the golden files, by file name.
func workloadCases() []struct {
	name   string
	server func(*v1alpha1.PrometheusServer)
	opts   func(*WorkloadOptions)
} {
	return []struct {
		name   string
		server func(*v1alpha1.PrometheusServer)
		opts   func(*WorkloadOptions)
	}{
		{name: "defaults"},
		{name: "no-rules", opts: func(o *WorkloadOptions) { o.RuleShards = 0 }},
		{
			name: "pvc",
			server: func(s *v1alpha1.PrometheusServer) {
				s.Spec.Replicas = ptr.To[int32](2)
				s.Spec.Retention = "30d"
				s.Spec.Storage = &v1alpha1.StorageSpec{VolumeClaimTemplate: &monitoringv1.EmbeddedPersistentVolumeClaim{
					EmbeddedObjectMetadata: monitoringv1.EmbeddedObjectMetadata{Name: "tsdb", Labels: map[string]string{"backup": "daily"}},
					Spec: corev1.PersistentVolumeClaimSpec{
						AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						StorageClassName: ptr.To("fast"),
						Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("50Gi")}},
					},
				}}
			},
		},
		{
			name: "emptydir-limit",
			server: func(s *v1alpha1.PrometheusServer) {
				s.Spec.Storage = &v1alpha1.StorageSpec{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("10Gi"))}}
			},
		},
		{
			name: "signal",
			server: func(s *v1alpha1.PrometheusServer) {
				s.Spec.Reloader.ReloadMethod = "signal"
			},
		},
		{
			name: "resources",
			server: func(s *v1alpha1.PrometheusServer) {
				s.Spec.Image = "registry.example.com/prometheus:v3.9.1"
				s.Spec.ServiceAccountName = "prometheus"
				s.Spec.Resources = corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("2Gi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")},
				}
				s.Spec.Reloader = v1alpha1.ReloaderSpec{
					Image:        "registry.example.com/config-reloader:v0.1.0",
					ReloadMethod: "http",
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
						Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")},
					},
				}
			},
		},
		{name: "many-shards", opts: func(o *WorkloadOptions) { o.RuleShards = 9 }},
	}
}

func renderCase(server func(*v1alpha1.PrometheusServer), opts func(*WorkloadOptions)) (*corev1.Service, *appsv1.StatefulSet) {
	s, o := testServer(), testOptions()
	if server != nil {
		server(s)
	}
	if opts != nil {
		opts(&o)
	}
	return renderWorkload(s, o)
}

func TestRenderWorkloadGolden(t *testing.T) {
	for _, tc := range workloadCases() {
		t.Run(tc.name, func(t *testing.T) {
			svc, sts := renderCase(tc.server, tc.opts)
			a, err := yaml.Marshal(svc)
			require.NoError(t, err)
			b, err := yaml.Marshal(sts)
			require.NoError(t, err)
			golden(t, filepath.Join("testdata", "workload", tc.name+".golden"), slices.Concat(a, []byte("---\n"), b))
		})
	}
}

// TestRenderWorkloadConsistent checks what the golden files cannot show at
// a glance: every mount has a volume, the sidecar watches exactly the rule
// directories, the rule_files glob finds them, and the pods pass the
// restricted Pod Security Standard's checks on security contexts.
func TestRenderWorkloadConsistent(t *testing.T) {
	for _, tc := range workloadCases() {
		t.Run(tc.name, func(t *testing.T) {
			svc, sts := renderCase(tc.server, tc.opts)
			pod := sts.Spec.Template.Spec

			require.Equal(t, svc.Name, sts.Spec.ServiceName)
			require.Equal(t, svc.Spec.Selector, sts.Spec.Selector.MatchLabels)
			require.Equal(t, sts.Spec.Selector.MatchLabels, sts.Spec.Template.Labels)

			volumes := map[string]bool{}
			for _, v := range pod.Volumes {
				require.False(t, volumes[v.Name], "volume %s twice", v.Name)
				volumes[v.Name] = true
			}
			for _, c := range sts.Spec.VolumeClaimTemplates {
				require.False(t, volumes[c.Name], "volume %s twice", c.Name)
				volumes[c.Name] = true
			}
			o := testOptions()
			if tc.opts != nil {
				tc.opts(&o)
			}
			globs := ruleFilesGlobs(testServer(), o.RuleShards)
			for _, glob := range globs {
				require.Regexp(t, `^[^*]*(\*[^/]*)?$`, glob, "Prometheus allows a wildcard in the last path element only")
			}
			for _, v := range pod.Volumes {
				if v.ConfigMap != nil {
					require.True(t, *v.ConfigMap.Optional, v.Name)
				}
			}
			var ruleDirs []string
			containers := slices.Concat(pod.InitContainers, pod.Containers)
			for _, c := range containers {
				for _, m := range c.VolumeMounts {
					require.True(t, volumes[m.Name], "%s mounts %s, which is no volume", c.Name, m.Name)
					if c.Name == "prometheus" && strings.HasPrefix(m.MountPath, rulesMountPath+"/") {
						// The i-th glob finds the files of the i-th directory,
						// not the kubelet's ..data.
						// Prometheus resolves it against its config file's directory.
						require.Contains(t, c.Args, "--config.file="+configOutMountPath+"/"+configEnvsubstFile)
						glob := filepath.Join(configOutMountPath, globs[len(ruleDirs)])
						ruleDirs = append(ruleDirs, m.MountPath)
						ok, err := filepath.Match(glob, m.MountPath+"/apps-api-uid.yaml")
						require.NoError(t, err)
						require.True(t, ok, "%s does not find the files of %s", glob, m.MountPath)
						ok, err = filepath.Match(glob, m.MountPath+"/..data")
						require.NoError(t, err)
						require.False(t, ok, "%s finds the kubelet's ..data", glob)
					}
				}
				sc := c.SecurityContext
				require.False(t, *sc.AllowPrivilegeEscalation, c.Name)
				require.True(t, *sc.ReadOnlyRootFilesystem, c.Name)
				require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop, c.Name)
			}
			require.Len(t, ruleDirs, ruleVolumes(o.RuleShards), "rule volumes")
			require.Len(t, globs, len(ruleDirs))

			sidecar := containers[slices.IndexFunc(containers, func(c corev1.Container) bool { return c.Name == "config-reloader" })]
			var watched []string
			for _, a := range sidecar.Args {
				if dir, ok := strings.CutPrefix(a, "--watched-dir="); ok {
					watched = append(watched, dir)
				}
			}
			require.Equal(t, ruleDirs, watched)

			psc := pod.SecurityContext
			require.True(t, *psc.RunAsNonRoot)
			require.NotZero(t, *psc.RunAsUser)
			require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, psc.SeccompProfile.Type)
		})
	}
}

func TestRuleVolumes(t *testing.T) {
	for _, tc := range []struct{ shards, want int }{
		{0, 4}, {1, 4}, {3, 4}, {4, 4}, {5, 8}, {8, 8}, {9, 12}, {100, 100}, {101, 104},
	} {
		require.Equal(t, tc.want, ruleVolumes(tc.shards), "shards %d", tc.shards)
	}
}

func TestInputHash(t *testing.T) {
	hash := func(server func(*v1alpha1.PrometheusServer), opts func(*WorkloadOptions)) string {
		t.Helper()
		_, sts := renderCase(server, opts)
		h := sts.Spec.Template.Annotations[annotationInputHash]
		require.Len(t, h, 64)
		return h
	}
	base := hash(nil, nil)
	require.Equal(t, base, hash(nil, nil), "deterministic")

	for _, tc := range []struct {
		name    string
		server  func(*v1alpha1.PrometheusServer)
		opts    func(*WorkloadOptions)
		changes bool
	}{
		{name: "prometheus image", server: func(s *v1alpha1.PrometheusServer) { s.Spec.Image = "prometheus:v3.11.0" }, changes: true},
		{name: "default prometheus image", opts: func(o *WorkloadOptions) { o.DefaultPrometheusImage = "prometheus:v3.11.0" }, changes: true},
		{name: "same image as the default", server: func(s *v1alpha1.PrometheusServer) { s.Spec.Image = testPrometheusImage }},
		{name: "reloader image", server: func(s *v1alpha1.PrometheusServer) { s.Spec.Reloader.Image = "config-reloader:v0.2.0" }, changes: true},
		{name: "default reloader image", opts: func(o *WorkloadOptions) { o.DefaultReloaderImage = "config-reloader:v0.2.0" }, changes: true},
		{name: "resources", server: func(s *v1alpha1.PrometheusServer) {
			s.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
		}, changes: true},
		{name: "reloader resources", server: func(s *v1alpha1.PrometheusServer) {
			s.Spec.Reloader.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")}
		}, changes: true},
		{name: "reload method", server: func(s *v1alpha1.PrometheusServer) { s.Spec.Reloader.ReloadMethod = "signal" }, changes: true},
		{name: "retention", server: func(s *v1alpha1.PrometheusServer) { s.Spec.Retention = "30d" }, changes: true},
		{name: "default retention spelled out", server: func(s *v1alpha1.PrometheusServer) { s.Spec.Retention = defaultRetention }},
		{name: "storage", server: func(s *v1alpha1.PrometheusServer) {
			s.Spec.Storage = &v1alpha1.StorageSpec{VolumeClaimTemplate: &monitoringv1.EmbeddedPersistentVolumeClaim{}}
		}, changes: true},
		{name: "service account", server: func(s *v1alpha1.PrometheusServer) { s.Spec.ServiceAccountName = "prometheus" }, changes: true},
		{name: "rule volumes grow", opts: func(o *WorkloadOptions) { o.RuleShards = 5 }, changes: true},
		{name: "rule shards within the padding", opts: func(o *WorkloadOptions) { o.RuleShards = 4 }},
		{name: "no rule shards", opts: func(o *WorkloadOptions) { o.RuleShards = 0 }},
		{name: "replicas", server: func(s *v1alpha1.PrometheusServer) { s.Spec.Replicas = ptr.To[int32](3) }},
		{name: "scrape settings reach the config, not the pods", server: func(s *v1alpha1.PrometheusServer) {
			s.Spec.ScrapeInterval = "10s"
			s.Spec.ExternalLabels = map[string]string{"cluster": "eu1"}
			s.Spec.RuleSelector = &metav1.LabelSelector{}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.changes {
				require.NotEqual(t, base, hash(tc.server, tc.opts))
			} else {
				require.Equal(t, base, hash(tc.server, tc.opts))
			}
		})
	}
}

func TestRuleFilesGlobs(t *testing.T) {
	for _, tc := range []struct {
		shards int
		want   []string
	}{
		{0, []string{
			"../rules/main-rulefiles-0/*.yaml",
			"../rules/main-rulefiles-1/*.yaml",
			"../rules/main-rulefiles-2/*.yaml",
			"../rules/main-rulefiles-3/*.yaml",
		}},
		{3, []string{
			"../rules/main-rulefiles-0/*.yaml",
			"../rules/main-rulefiles-1/*.yaml",
			"../rules/main-rulefiles-2/*.yaml",
			"../rules/main-rulefiles-3/*.yaml",
		}},
		{5, []string{
			"../rules/main-rulefiles-0/*.yaml",
			"../rules/main-rulefiles-1/*.yaml",
			"../rules/main-rulefiles-2/*.yaml",
			"../rules/main-rulefiles-3/*.yaml",
			"../rules/main-rulefiles-4/*.yaml",
			"../rules/main-rulefiles-5/*.yaml",
			"../rules/main-rulefiles-6/*.yaml",
			"../rules/main-rulefiles-7/*.yaml",
		}},
	} {
		require.Equal(t, tc.want, ruleFilesGlobs(testServer(), tc.shards), "shards %d", tc.shards)
	}
}
