package promserver

import (
	"cmp"
	"maps"
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/compat"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promserver/promargs"
	"github.com/podreload/podreload/controller/promserver/thanos"
	"github.com/podreload/podreload/controller/takeover"
)

// What a PrometheusServer in prometheus-operator's layout (target.layout)
// renders differently from podreload's own: the names, labels, selectors,
// governing Service, data volume and Prometheus flags prometheus-operator
// v0.93.1 writes (docs/takeover.md sections 1 to 4, with the upstream file
// of each), so that its StatefulSets, PVCs and pods carry over in both
// directions. The reloaders stay ours.

const (
	// operatorPrefix starts the names of prometheus-operator's objects
	// for a Prometheus (pkg/prometheus/common.go Prefix).
	operatorPrefix = "prometheus-"
	// governingServiceName is the headless Service of every Prometheus of
	// a namespace (server/statefulset.go governingServiceName).
	governingServiceName = "prometheus-operated"
	// operatorManager is the value of the managed-by labels.
	operatorManager = "prometheus-operator"
	// labelManagedBy and labelAppManagedBy are set on every object
	// prometheus-operator writes (pkg/operator/factory.go UpdateObject).
	labelManagedBy    = "managed-by"
	labelAppManagedBy = "app.kubernetes.io/managed-by"
	// LabelOperatorName and the two labels after it are the selector
	// labels besides kube.LabelName and labelInstance
	// (server/operator.go makeSelectorLabels, statefulset.go).
	LabelOperatorName  = "operator.prometheus.io/name"
	labelPrometheus    = "prometheus"
	labelOperatorShard = "operator.prometheus.io/shard"
	// labelOperatorMode is on the StatefulSets, "server" or "agent":
	// prometheus-operator's informers select on it.
	labelOperatorMode = "operator.prometheus.io/mode"
	// labelVersion is the Prometheus version on the pods, without the v.
	labelVersion = "app.kubernetes.io/version"
	// labelOperated marks the governing Service.
	labelOperated = "operated-prometheus"
	// annotationDefaultContainer makes kubectl default to Prometheus.
	annotationDefaultContainer = "kubectl.kubernetes.io/default-container"
	// AnnotationWebConfig is, on the pod template, the hash of the web
	// configuration file: the pods mount it with a sub-path, which the
	// kubelet never refreshes, so a change must roll them.
	AnnotationWebConfig = "podreload.dev/web-config-hash"
	// kubectlAnnotations start the annotations kept off the StatefulSet
	// (pkg/operator/factory.go WithoutKubectlAnnotations).
	kubectlAnnotations = "kubectl.kubernetes.io/"

	// OperatorDefaultVersion is the Prometheus version of a Prometheus that
	// sets none (pkg/operator/defaults.go DefaultPrometheusVersion).
	OperatorDefaultVersion = promargs.DefaultVersion
	// OperatorDefaultRetention applies when neither retention nor
	// retentionSize is set (pkg/prometheus/common.go DefaultRetention).
	OperatorDefaultRetention = promargs.DefaultRetention
	// operatorStorageSubPath is the data volume's directory Prometheus
	// opens as its TSDB whenever spec.storage is set
	// (common.go SubPathForStorage).
	operatorStorageSubPath = "prometheus-db"
)

// operatorName is prometheus-<name>: the config Secret, the StatefulSet of
// shard 0, and the prefix of the other objects.
func operatorName(server Target) string {
	if server.Layout.Agent() {
		return agentPrefix + server.Name
	}
	return operatorPrefix + server.Name
}

// operatorSelectorLabels are the labels that select every pod of a server
// in prometheus-operator's layout; shardLabels adds the shard.
func operatorSelectorLabels(server Target) map[string]string {
	l := map[string]string{
		labelAppManagedBy: operatorManager,
		kube.LabelName:    AppOf(server),
		LabelInstance:     server.Name,
		LabelOperatorName: server.Name,
	}
	if !server.Layout.Agent() {
		l[labelPrometheus] = server.Name
	}
	return l
}

// operatorObjectLabels are the labels of the Secrets and ConfigMaps
// prometheus-operator writes for a Prometheus, and kube.LabelName, which
// puts them into the controller's caches.
func operatorObjectLabels(server Target) map[string]string {
	return map[string]string{labelManagedBy: operatorManager, labelAppManagedBy: operatorManager, kube.LabelName: AppOf(server)}
}

// governingService is prometheus-operated (prometheus-agent-operated for
// agents), shared by every Prometheus of the namespace: it selects all of
// their pods. With spec.serviceName it is nil: the governing Service is
// the user's, and prometheus-operated is left as it is, as
// prometheus-operator does (server/operator.go sync).
func governingService(server Target) *corev1.Service {
	if server.Spec.ServiceName != nil {
		return nil
	}
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name: governingServiceOf(server), Namespace: server.Namespace,
			Labels: map[string]string{labelOperated: "true", labelManagedBy: operatorManager, labelAppManagedBy: operatorManager},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  map[string]string{kube.LabelName: AppOf(server)},
			Ports: append([]corev1.ServicePort{{Name: portName(server.Spec), Port: WebPort, TargetPort: intstr.FromString(portName(server.Spec))}},
				thanos.ServicePorts(server.Spec.Thanos)...),
		},
	}
}

// operatorThanos is what the Thanos sidecar of server reads of it, its
// data volume mounted as storage (package thanos).
func operatorThanos(server Target, storage corev1.VolumeMount) thanos.Inputs {
	spec := server.Spec
	return thanos.Inputs{
		Spec: spec.Thanos, Prometheus: promargs.Version(spec), DisableCompaction: spec.DisableCompaction,
		TLS: WebTLS(spec), RoutePrefix: spec.RoutePrefix, LogLevel: spec.LogLevel, LogFormat: spec.LogFormat,
		ImagePullPolicy: spec.ImagePullPolicy, Storage: storage, HTTPClientSecret: thanos.HTTPClientSecretName(operatorName(server)),
	}
}

// operatorThanosSecret is the HTTP client Secret of server's Thanos
// sidecar, nil without one (thanos.HTTPClientSecret).
func operatorThanosSecret(server Target) *corev1.Secret {
	return thanos.HTTPClientSecret(server.Spec.Thanos, thanos.HTTPClientSecretName(operatorName(server)), server.Namespace, operatorObjectLabels(server))
}

// addThanos adds to pod, of server, the Thanos sidecar after the other
// containers, and its volume, in prometheus-operator's layout.
func addThanos(pod *corev1.PodSpec, server Target, storage corev1.VolumeMount) {
	if c, volumes := thanos.Container(operatorThanos(server, storage)); c != nil && server.Layout.Operator() {
		pod.Containers, pod.Volumes = append(pod.Containers, *c), append(pod.Volumes, volumes...)
	}
}

// operatorStatefulSet sets on sts, the StatefulSet of a shard of server,
// prometheus-operator's metadata (operatorWorkloadMetadata) and governing
// Service.
func operatorStatefulSet(server Target, sts *appsv1.StatefulSet) {
	sts.Labels, sts.Annotations = operatorWorkloadMetadata(server, sts.Spec.Selector.MatchLabels)
	sts.Spec.ServiceName = ptr.Deref(server.Spec.ServiceName, governingServiceOf(server))
	// As prometheus-operator (pkg/operator/statefulset.go
	// UpdateStrategyForStatefulSet, server/statefulset.go): unset, the API
	// server's default.
	sts.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}
	if u := server.Spec.UpdateStrategy; u != nil {
		sts.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.StatefulSetUpdateStrategyType(u.Type)}
		if u.RollingUpdate != nil {
			sts.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: u.RollingUpdate.MaxUnavailable}
		}
	}
	sts.Spec.PodManagementPolicy = appsv1.PodManagementPolicyType(ptr.Deref(server.Spec.PodManagementPolicy, monitoringv1.ParallelPodManagement))
	sts.Spec.MinReadySeconds = ptr.Deref(server.Spec.MinReadySeconds, 0)
	sts.Spec.PersistentVolumeClaimRetentionPolicy = server.Spec.PersistentVolumeClaimRetentionPolicy
}

// operatorWorkloadMetadata are the labels and annotations of a workload
// (a StatefulSet, the DaemonSet of an agent) of server whose selector
// labels are selector: the managed-by labels, the server's labels, the
// mode, then the selector labels (later ones win); the server's
// annotations but kubectl's and the layout's.
func operatorWorkloadMetadata(server Target, selector map[string]string) (labels, annotations map[string]string) {
	labels = map[string]string{labelManagedBy: operatorManager, labelAppManagedBy: operatorManager}
	maps.Copy(labels, server.Labels)
	labels[labelOperatorMode] = "server"
	if server.Layout.Agent() {
		labels[labelOperatorMode] = "agent"
	}
	maps.Copy(labels, selector)
	for k, v := range server.Annotations {
		if k == AnnotationLayout || strings.HasPrefix(k, kubectlAnnotations) {
			continue
		}
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[k] = v
	}
	return labels, annotations
}

// operatorPodMetadata is the metadata of a shard's pods: the version label
// and the default-container annotation, under spec.podMetadata's, under
// the shard's selector labels; and annotationWebConfig, with webConfig,
// the hash of the web configuration file, when it is not empty.
func operatorPodMetadata(server Target, shard int, webConfig string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{
		Labels:      map[string]string{labelVersion: promargs.VersionLabel(server.Spec)},
		Annotations: map[string]string{annotationDefaultContainer: "prometheus"},
	}
	if pm := server.Spec.PodMetadata; pm != nil {
		maps.Copy(m.Labels, pm.Labels)
		maps.Copy(m.Annotations, pm.Annotations)
	}
	maps.Copy(m.Labels, shardLabels(server, shard))
	if webConfig != "" {
		m.Annotations[AnnotationWebConfig] = webConfig
	}
	return m
}

// operatorStorage is the data volume of a server in prometheus-operator's
// layout: prometheus-<name>-db (or the claim template's name), mounted at
// storageMountPath with the sub-path operatorStorageSubPath whenever
// spec.storage is set, and an emptyDir without sub-path when it is not.
func operatorStorage(server Target) (corev1.VolumeMount, []corev1.Volume, []corev1.PersistentVolumeClaim) {
	st := server.Spec.Storage
	mount := corev1.VolumeMount{Name: operatorName(server) + "-db", MountPath: storageMountPath}
	if st == nil && server.Spec.Ephemeral != nil {
		st = &v1alpha1.StorageSpec{} // An ephemeral volume is a storage too.
	}
	if st == nil {
		return mount, []corev1.Volume{{Name: mount.Name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}, nil
	}
	if !server.Spec.DisableMountSubPath {
		mount.SubPath = operatorStorageSubPath
	}
	if server.Spec.Ephemeral != nil {
		return mount, []corev1.Volume{{Name: mount.Name, VolumeSource: corev1.VolumeSource{Ephemeral: server.Spec.Ephemeral}}}, nil
	}
	if t := st.VolumeClaimTemplate; t != nil {
		mount.Name = cmp.Or(t.Name, mount.Name)
		spec := *t.Spec.DeepCopy()
		if spec.AccessModes == nil {
			spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
		}
		// No apiVersion and kind, as storageVolume.
		return mount, nil, []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: mount.Name, Labels: t.Labels, Annotations: t.Annotations},
			Spec:       spec,
		}}
	}
	empty := st.EmptyDir
	if empty == nil {
		empty = &corev1.EmptyDirVolumeSource{}
	}
	return mount, []corev1.Volume{{Name: mount.Name, VolumeSource: corev1.VolumeSource{EmptyDir: empty}}}, nil
}

// operatorPrometheusContainer runs Prometheus as prometheus-operator does:
// its flags (operatorPrometheusArgs), port and probes.
func operatorPrometheusContainer(server Target, opts WorkloadOptions, storage corev1.VolumeMount, mounts []corev1.VolumeMount) corev1.Container {
	// validateArgs refused the additional arguments that clash.
	spec := server.Spec
	args := append(OperatorPrometheusArgs(server), spec.AdditionalArgs...)
	versioned := spec
	versioned.Version = cmp.Or(spec.Version, OperatorDefaultVersion)
	ready := operatorProbe(spec, WebPath(spec, "/-/ready"), 5, 3)
	startup := *ready
	startup.PeriodSeconds, startup.FailureThreshold = startupBounds(spec.MaximumStartupDurationSeconds)
	ports := []corev1.ContainerPort{{Name: portName(spec), ContainerPort: WebPort, Protocol: corev1.ProtocolTCP}}
	if spec.ListenLocal {
		ports = nil
	}
	return corev1.Container{
		Name:                     "prometheus",
		Image:                    prometheusImage(versioned, opts.DefaultPrometheusImage),
		ImagePullPolicy:          spec.ImagePullPolicy,
		Args:                     compat.CommandLine(args),
		Ports:                    ports,
		StartupProbe:             &startup,
		ReadinessProbe:           ready,
		LivenessProbe:            operatorProbe(spec, WebPath(spec, "/-/healthy"), 5, 6),
		Resources:                spec.Resources,
		VolumeMounts:             append([]corev1.VolumeMount{{Name: "config-out", MountPath: ConfigOutMountPath, ReadOnly: true}, storage}, mounts...),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          containerSecurity(),
	}
}

// operatorProbe is a probe of Prometheus at path, as prometheus-operator
// renders it (BuildProbes): an HTTP GET on its port; with listenLocal, a
// command in the container that gets http://localhost:9090<path> with
// curl, or else wget (the Prometheus images have one of them), failing
// when neither is there.
func operatorProbe(spec v1alpha1.PrometheusServerSpec, path string, period, failures int32) *corev1.Probe {
	p := httpProbe(spec, path, period, failures)
	if spec.ListenLocal {
		u := "http://localhost:" + strconv.Itoa(WebPort) + path
		p.HTTPGet = nil
		p.Exec = &corev1.ExecAction{Command: []string{"sh", "-c",
			`if command -v curl >/dev/null; then exec curl --fail ` + u + `; fi; ` +
				`if command -v wget >/dev/null; then exec wget -q -O /dev/null ` + u + `; fi; exit 1`}}
	}
	return p
}

// reloaderListenHost is where the config-reloader of spec serves
// (sidecar.Spec.ListenHost): with listenLocal, localhost only, as
// prometheus-operator (its --localhost default); else every interface.
func reloaderListenHost(spec v1alpha1.PrometheusServerSpec) string {
	if spec.ListenLocal {
		return "localhost"
	}
	return ""
}

// operatorTopologySpread is spec.topologySpreadConstraints for the pods of
// a shard, with prometheus-operator's selector labels added to those that
// ask for them: all of them but the shard's for OnResource, all of them
// for OnShard (common.go MakeK8sTopologySpreadConstraint).
func operatorTopologySpread(server Target, shard int) []corev1.TopologySpreadConstraint {
	var out []corev1.TopologySpreadConstraint
	for _, c := range server.Spec.TopologySpreadConstraints {
		tsc := spreadConstraint(c)
		if c.AdditionalLabelSelectors != nil {
			for k, v := range shardLabels(server, shard) {
				if k == labelOperatorShard && *c.AdditionalLabelSelectors == monitoringv1.ResourceNameLabelSelector {
					continue
				}
				tsc.LabelSelector.MatchLabels[k] = v
			}
		}
		out = append(out, tsc)
	}
	return out
}

// RetentionPercentageSet tells whether spec's retentionPercentage is set
// above 0 (promargs.RetentionPercentageSet).
func RetentionPercentageSet(spec v1alpha1.PrometheusServerSpec) bool {
	return promargs.RetentionPercentageSet(spec)
}

// operatorReloaderSecurity is the securityContext of the reloaders of a
// server in prometheus-operator's layout. Without a pod securityContext,
// which prometheus-operator leaves unset when spec.securityContext is,
// they run as the Prometheus image's user (nobody), as they do under
// podreload's own default: the user they signal (reloadMethod signal) and
// whose data directory they keep their state in.
func operatorReloaderSecurity(spec v1alpha1.PrometheusServerSpec) *corev1.SecurityContext {
	sc := containerSecurity()
	if spec.SecurityContext == nil {
		sc.RunAsUser, sc.RunAsGroup = ptr.To[int64](nobody), ptr.To[int64](nobody)
	}
	return sc
}

// notOlder is in.Server, or, for a server taken over whose image is
// composed at prometheus-operator's default version (spec.DefaultBase),
// a copy of it at the version its running StatefulSet's (or DaemonSet's)
// Prometheus runs when that is newer (takeover.NotOlder): a takeover never
// downgrades Prometheus, whatever the default of the prometheus-operator
// it comes from.
func notOlder(in Inputs) *v1alpha1.PrometheusServer {
	server := Target{PrometheusServer: in.Server, Layout: in.Layout}
	if !server.Layout.Operator() || server.Spec.DefaultBase == "" {
		return in.Server
	}
	live := in.Running[ShardName(server, 0)]
	if live == nil {
		return in.Server
	}
	for _, c := range live.Spec.Template.Spec.Containers {
		if v := takeover.NotOlder(OperatorDefaultVersion, c.Image); c.Name == "prometheus" && v != OperatorDefaultVersion {
			s := *in.Server
			s.Spec.Version, s.Spec.Image = v, s.Spec.DefaultBase+":"+v
			return &s
		}
	}
	return in.Server
}

// OperatorPrometheusArgs are the flags prometheus-operator sets on the
// Prometheus of server, a server or an agent (promargs.Operator).
func OperatorPrometheusArgs(server Target) []monitoringv1.Argument {
	return promargs.Operator(server.Spec, server.Layout.Agent())
}

// startupBounds are the period and the failure threshold of the startup
// probe of Prometheus for maximumStartupDurationSeconds max, as
// prometheus-operator computes them (promcfg.go
// getStatupProbePeriodSecondsAndFailureThreshold): 15 s × 60, or from 60 s
// on a threshold of ceil(max/60) and a period of ceil(max/threshold).
func startupBounds(maxSeconds *int32) (period, failures int32) {
	m := ptr.Deref(maxSeconds, 0)
	if m < 60 {
		return 15, 60
	}
	failures = (m + 59) / 60
	return (m + failures - 1) / failures, failures
}
