package prometheus

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/promserver"
)

// TestOperatorWorkloadFields: the fields added for the takeover are
// rendered, and a taken-over object without a securityContext gets none
// (a PrometheusServer without one gets podreload's default).
func TestOperatorWorkloadFields(t *testing.T) {
	_, sts := promserver.RenderWorkload(promserver.OwnTarget(testServer()), testPodOptions())
	require.Equal(t, promserver.PodSecurity(), sts.Spec.Template.Spec.SecurityContext)

	p := testPrometheus()
	p.Spec.PortName = "http-web"
	p.Spec.ImagePullPolicy = corev1.PullIfNotPresent
	server, unsupported := FromPrometheus(p)
	require.Empty(t, unsupported)
	svc, sts := promserver.RenderWorkload(server, testPodOptions())
	pod := sts.Spec.Template.Spec
	require.Nil(t, pod.SecurityContext)

	server.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}
	_, withSC := promserver.RenderWorkload(server, testPodOptions())
	require.Equal(t, server.Spec.SecurityContext, withSC.Spec.Template.Spec.SecurityContext)

	require.Len(t, pod.InitContainers, 1)
	require.Len(t, pod.Containers, 2)
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
		require.Equal(t, corev1.PullIfNotPresent, c.ImagePullPolicy, c.Name)
	}
	prom := pod.Containers[0]
	require.Equal(t, "prometheus", prom.Name)
	require.Equal(t, []corev1.ContainerPort{{Name: "http-web", ContainerPort: promserver.WebPort, Protocol: corev1.ProtocolTCP}}, prom.Ports)
	require.Equal(t, intstr.FromString("http-web"), prom.ReadinessProbe.HTTPGet.Port)
	require.Equal(t, intstr.FromString("http-web"), prom.LivenessProbe.HTTPGet.Port)
	require.Equal(t, "http-web", svc.Spec.Ports[0].Name)
	require.Equal(t, intstr.FromString("http-web"), svc.Spec.Ports[0].TargetPort)
}

// TestOperatorPodFields: the pod fields a takeover carries are rendered
// as prometheus-operator renders them.
func TestOperatorPodFields(t *testing.T) {
	server, unsupported := convert(t, `
schedulerName: sched
dnsPolicy: None
dnsConfig: {nameservers: [10.0.0.10], searches: [svc.local], options: [{name: ndots, value: "2"}]}
hostAliases: [{ip: 10.0.0.1, hostnames: [a, b]}]
enableServiceLinks: false
hostUsers: false
terminationGracePeriodSeconds: 60
secrets: [etcd-certs, Odd_Name]
configMaps: [ca]
volumes: [{name: extra, emptyDir: {}}]
volumeMounts: [{name: extra, mountPath: /extra}]
`)
	require.Empty(t, unsupported)
	_, sts := promserver.RenderWorkload(server, testPodOptions())
	pod := sts.Spec.Template.Spec
	require.Equal(t, "sched", pod.SchedulerName)
	require.Equal(t, corev1.DNSNone, pod.DNSPolicy)
	require.Equal(t, &corev1.PodDNSConfig{
		Nameservers: []string{"10.0.0.10"}, Searches: []string{"svc.local"},
		Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}},
	}, pod.DNSConfig)
	require.Equal(t, []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"a", "b"}}}, pod.HostAliases)
	require.Equal(t, ptr.To(false), pod.EnableServiceLinks)
	require.Equal(t, ptr.To(false), pod.HostUsers)
	require.Equal(t, ptr.To[int64](60), pod.TerminationGracePeriodSeconds)

	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	require.Equal(t, corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}, volumes["extra"].VolumeSource)
	require.Equal(t, corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "etcd-certs"}}, volumes["secret-etcd-certs"].VolumeSource)
	require.Equal(t, corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "Odd_Name"}}, volumes["secret-odd-name"].VolumeSource)
	require.Equal(t, corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "ca"}}}, volumes["configmap-ca"].VolumeSource)
	prom := pod.Containers[0]
	require.Equal(t, "prometheus", prom.Name)
	require.Equal(t, []corev1.VolumeMount{
		{Name: "extra", MountPath: "/extra"},
		{Name: "secret-etcd-certs", ReadOnly: true, MountPath: "/etc/prometheus/secrets/etcd-certs"},
		{Name: "secret-odd-name", ReadOnly: true, MountPath: "/etc/prometheus/secrets/Odd_Name"},
		{Name: "configmap-ca", ReadOnly: true, MountPath: "/etc/prometheus/configmaps/ca"},
	}, prom.VolumeMounts[2:6], "after config-out and the data volume")
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers[1:]) {
		for _, m := range c.VolumeMounts {
			require.NotEqual(t, "extra", m.Name, "only Prometheus mounts them")
		}
	}

	// Unset, the defaults stay.
	server, _ = convert(t, "{}")
	_, sts = promserver.RenderWorkload(server, testPodOptions())
	pod = sts.Spec.Template.Spec
	require.Equal(t, ptr.To[int64](600), pod.TerminationGracePeriodSeconds)
	require.Empty(t, pod.SchedulerName)
	require.Empty(t, pod.DNSPolicy)
	require.Nil(t, pod.DNSConfig)
	require.Nil(t, pod.HostAliases)
	require.Nil(t, pod.EnableServiceLinks)
	require.Nil(t, pod.HostUsers)
}

// TestRenderRefusesPodVolumes: a volume name used twice, a mount of a
// volume that does not exist, a path mounted twice, a Secret whose
// volume name cannot be a label: render refuses the spec with the field
// and the cause, as the API server would refuse the StatefulSet.
func TestRenderRefusesPodVolumes(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(s *v1alpha1.PrometheusServerSpec)
		err  string
	}{
		{"twice", func(s *v1alpha1.PrometheusServerSpec) {
			s.Secrets = []string{"a"}
			s.Volumes = []corev1.Volume{{Name: "secret-a", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}, `spec.volumes, spec.secrets (volume secret-<name>) and spec.configMaps (configmap-<name>): volume "secret-a" is used twice in the pod (by these fields and the controller's own volumes)`},
		{"controller's", func(s *v1alpha1.PrometheusServerSpec) {
			s.Volumes = []corev1.Volume{{Name: "config-out", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}, `spec.volumes, spec.secrets (volume secret-<name>) and spec.configMaps (configmap-<name>): volume "config-out" is used twice in the pod (by these fields and the controller's own volumes)`},
		{"no volume", func(s *v1alpha1.PrometheusServerSpec) {
			s.VolumeMounts = []corev1.VolumeMount{{Name: "nope", MountPath: "/x"}}
		}, `spec.volumeMounts: volume "nope" is no volume of the pod`},
		{"path twice", func(s *v1alpha1.PrometheusServerSpec) {
			s.Volumes = []corev1.Volume{{Name: "x", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			s.VolumeMounts = []corev1.VolumeMount{{Name: "x", MountPath: "/prometheus"}}
		}, `spec.volumeMounts: /prometheus is mounted twice in container prometheus`},
		{"not a label", func(s *v1alpha1.PrometheusServerSpec) {
			s.ConfigMaps = []string{strings.Repeat("a", 52) + ".b"} // Cut to 63 characters, the label ends with "-".
		}, `spec.volumes, spec.secrets (volume secret-<name>) and spec.configMaps (configmap-<name>): volume "configmap-` + strings.Repeat("a", 52) + `-": a lowercase RFC 1123 label must consist of`},
	} {
		t.Run(c.name, func(t *testing.T) {
			server := testServer()
			c.set(&server.Spec)
			_, err := promserver.Render(promserver.Inputs{Server: server}, testOptions(), nil)
			require.Error(t, err)
			require.True(t, strings.HasPrefix(err.Error(), c.err), "%v", err)
		})
	}
}

// TestOperatorQueryArgs: enableAdminAPI, rules and query are Prometheus
// flags, as prometheus-operator renders them, and additionalArgs cannot
// set them again.
func TestOperatorQueryArgs(t *testing.T) {
	server, unsupported := convert(t, `
enableAdminAPI: true
rules: {alert: {forOutageTolerance: 1h, forGracePeriod: 10m, resendDelay: 2m}}
query: {lookbackDelta: 2m, maxConcurrency: 10, maxSamples: 1000, timeout: 1m}
`)
	require.Empty(t, unsupported)
	_, sts := promserver.RenderWorkload(server, testPodOptions())
	args := sts.Spec.Template.Spec.Containers[0].Args
	for _, a := range []string{
		"--web.enable-admin-api",
		"--rules.alert.for-outage-tolerance=1h", "--rules.alert.for-grace-period=10m", "--rules.alert.resend-delay=2m",
		"--query.lookback-delta=2m", "--query.max-samples=1000", "--query.max-concurrency=10", "--query.timeout=1m",
	} {
		require.Contains(t, args, a)
	}

	server, _ = convert(t, "query: {maxSamples: 0, maxConcurrency: 0}")
	_, sts = promserver.RenderWorkload(server, testPodOptions())
	for _, a := range sts.Spec.Template.Spec.Containers[0].Args {
		require.False(t, strings.HasPrefix(a, "--query.") || strings.HasPrefix(a, "--rules.") || a == "--web.enable-admin-api", a)
	}

	server, _ = convert(t, "{query: {timeout: 1m}, additionalArgs: [{name: query.timeout, value: 2m}]}")
	require.EqualError(t, promserver.ValidateArgs(server), "spec.additionalArgs: query.timeout set by the controller itself")
}

// argsOf are the Prometheus flags rendered for a Prometheus with spec.
func argsOf(t *testing.T, spec string) []string {
	t.Helper()
	server, unsupported := convert(t, spec)
	require.Empty(t, unsupported)
	_, sts := promserver.RenderWorkload(server, testPodOptions())
	return sts.Spec.Template.Spec.Containers[0].Args
}

// TestOperatorFlagFields: allowOverlappingBlocks and enableOTLPReceiver
// are the flags prometheus-operator renders for them, at the versions it
// gates them on (buildServerArgs, BuildCommonPrometheusArgs), and nothing
// outside them.
func TestOperatorFlagFields(t *testing.T) {
	const overlapping = "--storage.tsdb.allow-overlapping-blocks"
	for version, want := range map[string]bool{"v2.10.0": false, "v2.11.0": true, "v2.38.0": true, "v2.39.0": false, "v3.13.1": false} {
		require.Equal(t, want, slices.Contains(argsOf(t, "{allowOverlappingBlocks: true, version: "+version+"}"), overlapping), version)
	}
	require.NotContains(t, argsOf(t, "{allowOverlappingBlocks: false, version: v2.20.0}"), overlapping)

	otlp := func(args []string) []string {
		var out []string
		for _, a := range args {
			if a == "--web.enable-otlp-receiver" || strings.HasPrefix(a, "--enable-feature=") {
				out = append(out, a)
			}
		}
		return out
	}
	for _, c := range []struct {
		spec string
		want []string
	}{
		{"{enableOTLPReceiver: true, version: v2.46.0}", nil},
		{"{enableOTLPReceiver: true, version: v2.47.0}", []string{"--enable-feature=otlp-write-receiver"}},
		{"{enableOTLPReceiver: true, version: v2.55.1, enableFeatures: [exemplar-storage]}", []string{"--enable-feature=otlp-write-receiver", "--enable-feature=exemplar-storage"}},
		{"{enableOTLPReceiver: true, version: v3.0.0}", []string{"--web.enable-otlp-receiver"}},
		{"{enableOTLPReceiver: true}", []string{"--web.enable-otlp-receiver"}},
		{"{otlp: {promoteResourceAttributes: [a]}}", []string{"--web.enable-otlp-receiver"}},
		{"{enableOTLPReceiver: false, otlp: {promoteResourceAttributes: [a]}}", nil},
		{"{enableOTLPReceiver: false}", nil},
		{"{}", nil},
	} {
		require.Equal(t, c.want, otlp(argsOf(t, c.spec)), c.spec)
	}
}

// TestOperatorServiceName: with serviceName, the StatefulSets' governing
// Service is the user's, and prometheus-operated is not rendered, as
// prometheus-operator does.
func TestOperatorServiceName(t *testing.T) {
	server, unsupported := convert(t, "{serviceName: mine, shards: 2}")
	require.Empty(t, unsupported)
	svc, sts := promserver.RenderWorkload(server, testPodOptions())
	require.Nil(t, svc)
	require.Equal(t, "mine", sts.Spec.ServiceName)
	require.Equal(t, "mine", promserver.RenderShard(server, testPodOptions(), 1).Spec.ServiceName)
	objs, err := promserver.Render(promserver.Inputs{Server: server.PrometheusServer, Layout: server.Layout}, testOptions(), nil)
	require.NoError(t, err)
	require.Nil(t, objs.Service)

	server, _ = convert(t, "{}")
	svc, sts = promserver.RenderWorkload(server, testPodOptions())
	require.Equal(t, "prometheus-operated", svc.Name)
	require.Equal(t, "prometheus-operated", sts.Spec.ServiceName)
}

// TestOperatorNoServiceAccountToken: with automountServiceAccountToken
// false the pods mount no token, as prometheus-operator's, and both
// config-reloaders read the volumes, keep their state on the data volume
// (no state Secret) and report nothing; unset, the token is mounted and
// they read, keep and report through the API server.
func TestOperatorNoServiceAccountToken(t *testing.T) {
	render := func(spec string) (corev1.PodSpec, *promserver.Objects) {
		server, unsupported := convert(t, spec)
		require.Empty(t, unsupported)
		objs, err := promserver.Render(promserver.Inputs{Server: server.PrometheusServer, Layout: server.Layout}, testOptions(), nil)
		require.NoError(t, err)
		return objs.StatefulSets[0].Spec.Template.Spec, objs
	}
	pod, objs := render("{automountServiceAccountToken: false, ruleSelector: {}}")
	require.Equal(t, ptr.To(false), pod.AutomountServiceAccountToken)
	require.Empty(t, objs.StateSecrets)
	for _, c := range []corev1.Container{pod.InitContainers[0], pod.Containers[1]} {
		require.Contains(t, c.Args, "--config-file=/etc/prometheus/config/prometheus.yaml.gz", c.Name)
		require.Contains(t, c.Args, "--state-dir="+promserver.ReloaderStateDir, c.Name)
		require.Contains(t, c.Args, "--rules-input-dir=/etc/prometheus/rule-configmaps/prometheus-k8s-rulefiles-0", c.Name)
		for _, a := range c.Args {
			require.False(t, strings.HasPrefix(a, "--config-secret=") || strings.HasPrefix(a, "--state-secret=") || strings.HasPrefix(a, "--report-pod="), "%s: %s", c.Name, a)
		}
	}
	require.True(t, slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool {
		return v.Secret != nil && v.Secret.SecretName == "prometheus-k8s"
	}), "the configuration Secret's volume")

	for _, spec := range []string{"{ruleSelector: {}}", "{automountServiceAccountToken: true, ruleSelector: {}}"} {
		pod, objs = render(spec)
		require.Equal(t, ptr.To(true), pod.AutomountServiceAccountToken, spec)
		require.Len(t, objs.StateSecrets, 1, spec)
		require.Contains(t, pod.Containers[1].Args, "--config-secret=monitoring/prometheus-k8s", spec)
		require.Contains(t, pod.Containers[1].Args, "--report-pod=$(POD_NAMESPACE)/$(POD_NAME)", spec)
	}
}
