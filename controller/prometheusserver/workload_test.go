package prometheusserver

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/webconfig"
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

func testOptions() promserver.WorkloadOptions {
	return promserver.WorkloadOptions{DefaultPrometheusImage: testPrometheusImage, DefaultReloaderImage: testReloaderImage}
}

// testPodOptions are testOptions with one rule file ConfigMap.
func testPodOptions() promserver.PodOptions {
	return promserver.PodOptions{WorkloadOptions: testOptions(), RuleShards: 1}
}

// workloadCases are the servers of the golden files, by file name.
func workloadCases() []struct {
	name   string
	server func(*v1alpha1.PrometheusServer)
	opts   func(*promserver.PodOptions)
} {
	return []struct {
		name   string
		server func(*v1alpha1.PrometheusServer)
		opts   func(*promserver.PodOptions)
	}{
		{name: "defaults"},
		{name: "no-rules", opts: func(o *promserver.PodOptions) { o.RuleShards = 0 }},
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
		{name: "many-shards", opts: func(o *promserver.PodOptions) { o.RuleShards = 9 }},
		{name: "production", server: production},
		{
			name: "production-signal",
			server: func(s *v1alpha1.PrometheusServer) {
				production(s)
				s.Spec.Reloader.ReloadMethod = "signal"
			},
		},
		{
			name: "version",
			server: func(s *v1alpha1.PrometheusServer) {
				s.Spec.Version = "v3.1.0"
				s.Spec.ExternalURL = "https://prometheus.example.com/"
				s.Spec.WALCompression = ptr.To(false)
			},
		},
		{name: "volume", server: volume},
		{name: "volume-no-rules", server: volume, opts: func(o *promserver.PodOptions) { o.RuleShards = 0 }},
		{name: "volume-many-shards", server: volume, opts: func(o *promserver.PodOptions) { o.RuleShards = 9 }},
		// 60 part Secrets (some 20 KiB gzipped each), 64 mounted.
		{name: "volume-config-parts", server: volume, opts: func(o *promserver.PodOptions) { o.ConfigParts = 60 }},
		{
			name: "volume-signal",
			server: func(s *v1alpha1.PrometheusServer) {
				volume(s)
				s.Spec.Reloader.ReloadMethod = "signal"
			},
		},
		{
			name:   "web-tls",
			server: webTLSServer,
			opts: func(o *promserver.PodOptions) {
				o.Reload = webconfig.Reload{CA: &monitoringv1.SecretOrConfigMap{ConfigMap: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "web-client-ca"}, Key: "ca.crt",
				}}, ServerName: "main.monitoring.svc"}
			},
		},
		{
			name: "web-tls-signal",
			server: func(s *v1alpha1.PrometheusServer) {
				webTLSServer(s)
				volume(s)
				s.Spec.Reloader.ReloadMethod = "signal"
				s.Spec.Web.TLSConfig.ClientCA = monitoringv1.SecretOrConfigMap{}
				s.Spec.Web.TLSConfig.ClientAuthType = nil
			},
			opts: func(o *promserver.PodOptions) { o.Reload = webconfig.Reload{Host: "127.0.0.1"} },
		},
	}
}

// webTLSServer gives s HTTPS with its certificate in a kubernetes.io/tls
// Secret, client certificates verified when given, and web settings.
func webTLSServer(s *v1alpha1.PrometheusServer) {
	sel := func(key string) *corev1.SecretKeySelector {
		return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "web-tls"}, Key: key}
	}
	s.Spec.Web = &monitoringv1.PrometheusWebSpec{
		PageTitle:      ptr.To("Platform Prometheus"),
		MaxConnections: ptr.To[int32](512),
		WebConfigFileFields: monitoringv1.WebConfigFileFields{
			TLSConfig: &monitoringv1.WebTLSConfig{
				Cert:      monitoringv1.SecretOrConfigMap{Secret: sel("tls.crt")},
				KeySecret: *sel("tls.key"),
				ClientCA: monitoringv1.SecretOrConfigMap{ConfigMap: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "web-client-ca"}, Key: "ca.crt",
				}},
				ClientAuthType: ptr.To(monitoringv1.ClientAuthType("VerifyClientCertIfGiven")),
				MinVersion:     ptr.To("TLS12"),
			},
			HTTPConfig: &monitoringv1.WebHTTPConfig{HTTP2: ptr.To(false)},
		},
	}
}

// production sets the fields of prometheus-operator's Prometheus kind a
// platform team sets.
func production(s *v1alpha1.PrometheusServer) {
	s.Spec.LogLevel, s.Spec.LogFormat = "debug", "json"
	s.Spec.EnableFeatures = []monitoringv1.EnableFeature{"exemplar-storage", "memory-snapshot-on-shutdown"}
	s.Spec.ExternalURL = "https://example.com/prometheus"
	s.Spec.RoutePrefix = "/prometheus"
	s.Spec.RetentionSize = "40GB"
	s.Spec.WALCompression = ptr.To(true)
	s.Spec.AdditionalArgs = []monitoringv1.Argument{{Name: "query.max-samples", Value: "10000000"}, {Name: "web.enable-admin-api"}}
	s.Spec.PodMetadata = &monitoringv1.EmbeddedObjectMetadata{
		Labels:      map[string]string{"team": "platform", kube.LabelName: "not-this"},
		Annotations: map[string]string{"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"},
	}
	s.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux", "node-role": "monitoring"}
	s.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "monitoring", Effect: corev1.TaintEffectNoSchedule}}
	s.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				TopologyKey:   "kubernetes.io/hostname",
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{promserver.LabelInstance: "main"}},
			},
		}},
	}}
	s.Spec.TopologySpreadConstraints = []monitoringv1.TopologySpreadConstraint{
		{
			CoreV1TopologySpreadConstraint: monitoringv1.CoreV1TopologySpreadConstraint{
				MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway,
			},
			AdditionalLabelSelectors: ptr.To(monitoringv1.ResourceNameLabelSelector),
		},
		{
			CoreV1TopologySpreadConstraint: monitoringv1.CoreV1TopologySpreadConstraint{
				MaxSkew: 2, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "platform"}},
			},
		},
	}
	s.Spec.PriorityClassName = "system-cluster-critical"
	s.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
	s.Spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1000), FSGroup: ptr.To[int64](1000),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// volume gives s the volume source.
func volume(s *v1alpha1.PrometheusServer) { s.Spec.Reloader.Source = v1alpha1.SourceVolume }

func renderCase(server func(*v1alpha1.PrometheusServer), opts func(*promserver.PodOptions)) (*corev1.Service, *appsv1.StatefulSet) {
	s, o := testServer(), testPodOptions()
	if server != nil {
		server(s)
	}
	if opts != nil {
		opts(&o)
	}
	return promserver.RenderWorkload(promserver.OwnTarget(s), o)
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
// a glance: every mount has a volume, the reloaders read and write where
// Prometheus finds the rule files through the rule_files globs, and the
// pods pass the restricted Pod Security Standard's checks on security
// contexts.
func TestRenderWorkloadConsistent(t *testing.T) {
	for _, tc := range workloadCases() {
		t.Run(tc.name, func(t *testing.T) {
			server, o := testServer(), testPodOptions()
			if tc.server != nil {
				tc.server(server)
			}
			if tc.opts != nil {
				tc.opts(&o)
			}
			svc, sts := promserver.RenderWorkload(promserver.OwnTarget(server), o)
			pod := sts.Spec.Template.Spec

			require.Equal(t, svc.Name, sts.Spec.ServiceName)
			require.Equal(t, svc.Spec.Selector, sts.Spec.Selector.MatchLabels)
			require.Subset(t, sts.Spec.Template.Labels, sts.Spec.Selector.MatchLabels, "the pods carry the selector's labels")

			volumes := map[string]corev1.Volume{}
			for _, v := range pod.Volumes {
				require.NotContains(t, volumes, v.Name, "volume %s twice", v.Name)
				volumes[v.Name] = v
			}
			for _, c := range sts.Spec.VolumeClaimTemplates {
				require.NotContains(t, volumes, c.Name, "volume %s twice", c.Name)
				volumes[c.Name] = corev1.Volume{Name: c.Name}
			}
			globs := promserver.RuleFilesGlobs(promserver.OwnTarget(server), o.RuleShards)
			for _, glob := range globs {
				require.Regexp(t, `^[^*]*(\*[^/]*)?$`, glob, "Prometheus allows a wildcard in the last path element only")
			}
			containers := map[string]corev1.Container{}
			for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
				containers[c.Name] = c
				for _, m := range c.VolumeMounts {
					require.Contains(t, volumes, m.Name, "%s mounts %s, which is no volume", c.Name, m.Name)
				}
				sc := c.SecurityContext
				require.False(t, *sc.AllowPrivilegeEscalation, c.Name)
				require.True(t, *sc.ReadOnlyRootFilesystem, c.Name)
				require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop, c.Name)
			}
			// Prometheus resolves the globs against its config file's directory.
			require.Contains(t, containers["prometheus"].Args, "--config.file="+promserver.ConfigOutMountPath+"/"+promserver.ConfigEnvsubstFile)
			require.Equal(t, ptr.To(true), pod.AutomountServiceAccountToken, "the reloaders need the token")
			require.Contains(t, containers["config-reloader"].Args, "--report-pod=$(POD_NAMESPACE)/$(POD_NAME)")
			require.Contains(t, containers["config-reloader"].Env, corev1.EnvVar{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}})
			require.NotContains(t, containers["init-config-reloader"].Args, "--report-pod=$(POD_NAMESPACE)/$(POD_NAME)", "the init container reloads nothing")
			if promserver.APISource(promserver.OwnTarget(server)) {
				checkAPISource(t, server, o.RuleShards, volumes, containers, globs)
			} else {
				checkVolumeSource(t, server, o.RuleShards, volumes, containers, globs)
			}

			psc := pod.SecurityContext
			require.True(t, *psc.RunAsNonRoot)
			require.NotZero(t, *psc.RunAsUser)
			require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, psc.SeccompProfile.Type)
		})
	}
}

// checkVolumeSource checks the pod of a server with the volume source:
// the rule volumes, optional, are mounted in both reloaders only, which
// render each (--rules-input-dir) into the directory of its name in the
// emptyDir Prometheus mounts read-only, where the i-th glob finds the
// files of the i-th rule volume, not the kubelet's ..data.
func checkVolumeSource(t *testing.T, server *v1alpha1.PrometheusServer, shards int, volumes map[string]corev1.Volume, containers map[string]corev1.Container, globs []string) {
	t.Helper()
	for _, m := range containers["prometheus"].VolumeMounts {
		require.Nil(t, volumes[m.Name].ConfigMap, "Prometheus mounts the rule volume %s, gzipped", m.Name)
	}
	i := slices.IndexFunc(containers["prometheus"].VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == promserver.RulesMountPath })
	require.GreaterOrEqual(t, i, 0, "Prometheus mounts its rules")
	rules := containers["prometheus"].VolumeMounts[i]
	require.True(t, rules.ReadOnly, "Prometheus mounts its rules read-only")
	require.NotNil(t, volumes[rules.Name].EmptyDir, "rules in an emptyDir")

	require.Len(t, globs, promserver.RuleVolumes(shards))
	for _, name := range []string{"init-config-reloader", "config-reloader"} {
		c := containers[name]
		var inputs []string
		for _, m := range c.VolumeMounts {
			if m.Name == rules.Name {
				require.Equal(t, promserver.RulesMountPath, m.MountPath, name)
				require.False(t, m.ReadOnly, "%s writes the rules", name)
			}
			if dir, ok := strings.CutPrefix(m.MountPath, promserver.RuleConfigMapsMountPath+"/"); ok {
				require.True(t, *volumes[m.Name].ConfigMap.Optional, m.Name)
				require.Equal(t, promserver.RuleShardName(promserver.OwnTarget(server), len(inputs)), volumes[m.Name].ConfigMap.Name, m.Name)
				require.Equal(t, promserver.RuleShardName(promserver.OwnTarget(server), len(inputs)), dir, m.Name)
				inputs = append(inputs, m.MountPath)
			}
		}
		require.Len(t, inputs, promserver.RuleVolumes(shards), "%s: rule volumes", name)
		var args []string
		for _, a := range c.Args {
			if dir, ok := strings.CutPrefix(a, "--rules-input-dir="); ok {
				args = append(args, dir)
			}
			require.False(t, strings.HasPrefix(a, "--config-secret") || strings.HasPrefix(a, "--rules-configmap-selector") || strings.HasPrefix(a, "--watched-dir"), "%s: %s", name, a)
		}
		require.Equal(t, inputs, args, name)
		require.Subset(t, c.Args, []string{"--config-file=" + promserver.ConfigMountPath + "/" + promserver.ConfigSecretKey, "--rules-dir=" + promserver.RulesMountPath}, name)
		for i, dir := range inputs {
			// The reloaders write the volume's files under its base name.
			glob := filepath.Join(promserver.ConfigOutMountPath, globs[i])
			out := filepath.Join(promserver.RulesMountPath, filepath.Base(dir))
			ok, err := filepath.Match(glob, out+"/apps-api-uid.yaml")
			require.NoError(t, err)
			require.True(t, ok, "%s does not find the files of %s", glob, dir)
			ok, err = filepath.Match(glob, out+"/..data")
			require.NoError(t, err)
			require.False(t, ok, "%s finds the kubelet's ..data", glob)
		}
	}
}

// checkAPISource checks the pod of a server with the API source: no volume
// the kubelet projects; Prometheus reads read-only the emptyDir the
// reloaders write the rules into, where the i-th glob finds the files of
// the i-th shard; both reloaders read the config Secret and exactly the
// rule ConfigMaps of server, with the pod's service account token.
func checkAPISource(t *testing.T, server *v1alpha1.PrometheusServer, shards int, volumes map[string]corev1.Volume, containers map[string]corev1.Container, globs []string) {
	t.Helper()
	for _, v := range volumes {
		if strings.HasPrefix(v.Name, "web-") {
			continue // spec.web's files, which Prometheus reads where the kubelet projects them.
		}
		require.Nil(t, v.Secret, v.Name)
		require.Nil(t, v.ConfigMap, v.Name)
	}
	mountOf := func(c corev1.Container, path string) corev1.VolumeMount {
		t.Helper()
		i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == path })
		require.GreaterOrEqual(t, i, 0, "%s mounts nothing at %s", c.Name, path)
		return c.VolumeMounts[i]
	}
	rules := mountOf(containers["prometheus"], promserver.RulesMountPath)
	require.True(t, rules.ReadOnly, "Prometheus mounts its rules read-only")
	require.NotNil(t, volumes[rules.Name].EmptyDir, "rules in an emptyDir")

	require.Len(t, globs, shards)
	for i, glob := range globs {
		file := promserver.RulesMountPath + "/" + promserver.RuleShardName(promserver.OwnTarget(server), i) + "/apps-api-uid.yaml"
		ok, err := filepath.Match(filepath.Join(promserver.ConfigOutMountPath, glob), file)
		require.NoError(t, err)
		require.True(t, ok, "%s does not find %s", glob, file)
	}

	selector := ""
	for _, name := range []string{"init-config-reloader", "config-reloader"} {
		c := containers[name]
		m := mountOf(c, promserver.RulesMountPath)
		require.Equal(t, rules.Name, m.Name, name)
		require.False(t, m.ReadOnly, "%s writes the rules", name)
		require.False(t, mountOf(c, promserver.ConfigOutMountPath).ReadOnly, "%s writes the configuration", name)
		require.Subset(t, c.Args, []string{
			"--config-secret=" + server.Namespace + "/" + promserver.ConfigSecretName(server),
			"--config-secret-key=" + promserver.ConfigSecretKey,
			"--rules-dir=" + promserver.RulesMountPath,
			"--config-envsubst-file=" + promserver.ConfigOutMountPath + "/" + promserver.ConfigEnvsubstFile,
		}, name)
		for _, a := range c.Args {
			require.False(t, strings.HasPrefix(a, "--config-file=") || strings.HasPrefix(a, "--watched-dir="), "%s: %s", name, a)
			if v, ok := strings.CutPrefix(a, "--rules-configmap-selector="); ok {
				selector = v
			}
		}
	}
	sel, err := labels.Parse(selector)
	require.NoError(t, err, "--rules-configmap-selector")
	require.True(t, sel.Matches(labels.Set(promserver.RuleShards(promserver.OwnTarget(server)).ConfigMap(0).Labels)), "%s selects the rule shards", selector)
	other := &v1alpha1.PrometheusServer{ObjectMeta: metav1.ObjectMeta{Namespace: server.Namespace, Name: server.Name + "-other"}}
	require.False(t, sel.Matches(labels.Set(promserver.RuleShards(promserver.OwnTarget(other)).ConfigMap(0).Labels)), "%s selects another server's rule shards", selector)
}

// testDryRun has the real API server validate, with a server-side dry
// run, the Service and StatefulSet of every golden case: what the golden
// files hold is what the API server accepts.
func (cp *controlPlane) testDryRun(t *testing.T) {
	cp.namespace(t, testServer().Namespace, nil)
	for _, tc := range workloadCases() {
		t.Run(tc.name, func(t *testing.T) {
			svc, sts := renderCase(tc.server, tc.opts)
			require.NoError(t, cp.c.Create(t.Context(), svc, client.DryRunAll), "Service")
			require.NoError(t, cp.c.Create(t.Context(), sts, client.DryRunAll), "StatefulSet")
		})
	}
	t.Run("shard 2", func(t *testing.T) {
		server := testServer()
		production(server)
		server.Spec.Shards = ptr.To[int32](3)
		require.NoError(t, cp.c.Create(t.Context(), promserver.RenderShard(promserver.OwnTarget(server), testPodOptions(), 2), client.DryRunAll))
	})
}

func TestRuleVolumes(t *testing.T) {
	for _, tc := range []struct{ shards, want int }{
		{0, 4}, {1, 4}, {3, 4}, {4, 4}, {5, 8}, {8, 8}, {9, 12}, {100, 100}, {101, 104},
	} {
		require.Equal(t, tc.want, promserver.RuleVolumes(tc.shards), "shards %d", tc.shards)
	}
}

func TestInputHash(t *testing.T) {
	hash := func(server func(*v1alpha1.PrometheusServer), opts func(*promserver.PodOptions)) string {
		t.Helper()
		_, sts := renderCase(server, opts)
		h := sts.Spec.Template.Annotations[promserver.AnnotationInputHash]
		require.Len(t, h, 64)
		return h
	}
	base := hash(nil, nil)
	require.Equal(t, base, hash(nil, nil), "deterministic")
	volumeBase := hash(volume, nil)

	for _, tc := range []struct {
		name   string
		server func(*v1alpha1.PrometheusServer)
		opts   func(*promserver.PodOptions)
		// volume compares a server with the volume source with the
		// default one with the volume source.
		volume  bool
		changes bool
	}{
		{name: "source", server: volume, changes: true},
		{name: "source api spelled out", server: func(s *v1alpha1.PrometheusServer) { s.Spec.Reloader.Source = v1alpha1.SourceAPI }},
		{name: "prometheus image", server: func(s *v1alpha1.PrometheusServer) { s.Spec.Image = "prometheus:v3.11.0" }, changes: true},
		{name: "default prometheus image", opts: func(o *promserver.PodOptions) { o.DefaultPrometheusImage = "prometheus:v3.11.0" }, changes: true},
		{name: "same image as the default", server: func(s *v1alpha1.PrometheusServer) { s.Spec.Image = testPrometheusImage }},
		{name: "reloader image", server: func(s *v1alpha1.PrometheusServer) { s.Spec.Reloader.Image = "config-reloader:v0.2.0" }, changes: true},
		{name: "default reloader image", opts: func(o *promserver.PodOptions) { o.DefaultReloaderImage = "config-reloader:v0.2.0" }, changes: true},
		{name: "resources", server: func(s *v1alpha1.PrometheusServer) {
			s.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
		}, changes: true},
		{name: "reloader resources", server: func(s *v1alpha1.PrometheusServer) {
			s.Spec.Reloader.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")}
		}, changes: true},
		{name: "reload method", server: func(s *v1alpha1.PrometheusServer) { s.Spec.Reloader.ReloadMethod = "signal" }, changes: true},
		{name: "retention", server: func(s *v1alpha1.PrometheusServer) { s.Spec.Retention = "30d" }, changes: true},
		{name: "default retention spelled out", server: func(s *v1alpha1.PrometheusServer) { s.Spec.Retention = promserver.DefaultRetention }},
		{name: "storage", server: func(s *v1alpha1.PrometheusServer) {
			s.Spec.Storage = &v1alpha1.StorageSpec{VolumeClaimTemplate: &monitoringv1.EmbeddedPersistentVolumeClaim{}}
		}, changes: true},
		{name: "service account", server: func(s *v1alpha1.PrometheusServer) { s.Spec.ServiceAccountName = "prometheus" }, changes: true},
		{name: "rule shards with the API source", opts: func(o *promserver.PodOptions) { o.RuleShards = 9 }},
		{name: "no rule shards with the API source", opts: func(o *promserver.PodOptions) { o.RuleShards = 0 }},
		{name: "rule volumes grow", volume: true, opts: func(o *promserver.PodOptions) { o.RuleShards = 5 }, changes: true},
		{name: "rule shards within the padding", volume: true, opts: func(o *promserver.PodOptions) { o.RuleShards = 4 }},
		{name: "no rule shards", volume: true, opts: func(o *promserver.PodOptions) { o.RuleShards = 0 }},
		{name: "replicas", server: func(s *v1alpha1.PrometheusServer) { s.Spec.Replicas = ptr.To[int32](3) }},
		{name: "web TLS", server: webTLSServer, changes: true},
		{name: "web TLS verified otherwise", server: webTLSServer, opts: func(o *promserver.PodOptions) { o.Reload.ServerName = "prometheus" }, changes: true},
		{name: "scrape settings reach the config, not the pods", server: func(s *v1alpha1.PrometheusServer) {
			s.Spec.ScrapeInterval = "10s"
			s.Spec.ExternalLabels = map[string]string{"cluster": "eu1"}
			s.Spec.RuleSelector = &metav1.LabelSelector{}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, server := base, tc.server
			if tc.volume {
				want, server = volumeBase, func(s *v1alpha1.PrometheusServer) {
					volume(s)
					if tc.server != nil {
						tc.server(s)
					}
				}
			}
			if tc.changes {
				require.NotEqual(t, want, hash(server, tc.opts))
			} else {
				require.Equal(t, want, hash(server, tc.opts))
			}
		})
	}
}

func TestRuleFilesGlobs(t *testing.T) {
	api, vol := testServer(), testServer()
	volume(vol)
	globs := func(n int) []string {
		g := []string{}
		for i := range n {
			g = append(g, "../rules/main-rulefiles-"+strconv.Itoa(i)+"/*.yaml")
		}
		return g
	}
	for _, tc := range []struct {
		server *v1alpha1.PrometheusServer
		shards int
		want   []string
	}{
		{vol, 0, globs(4)},
		{vol, 3, globs(4)},
		{vol, 5, globs(8)},
		// The API source mounts no volume per shard: nothing to pad.
		{api, 0, globs(0)},
		{api, 1, globs(1)},
		{api, 5, globs(5)},
	} {
		require.Equal(t, tc.want, promserver.RuleFilesGlobs(promserver.OwnTarget(tc.server), tc.shards), "source %q, shards %d", tc.server.Spec.Reloader.Source, tc.shards)
	}
	require.Equal(t, []string{
		"../rules/main-rulefiles-0/*.yaml",
		"../rules/main-rulefiles-1/*.yaml",
	}, globs(2))
}
