package promserver

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
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
	"github.com/podreload/podreload/controller/promcfg"
	"github.com/podreload/podreload/controller/promserver/promargs"
	"github.com/podreload/podreload/controller/sidecar"
	"github.com/podreload/podreload/controller/takeover"
)

const (
	// ConfigMountPath is where the config Secret is mounted.
	ConfigMountPath = "/etc/prometheus/config"
	// ConfigSecretKey is the key of the gzipped configuration in the config
	// Secret; $(POD_NAME) and $(SHARD) are left in it for the reloader.
	ConfigSecretKey = "prometheus.yaml.gz"
	// configPartsMountPath is where the part Secrets of a split
	// configuration are projected, with the volume source.
	configPartsMountPath = "/etc/prometheus/config-parts"
	// ConfigOutMountPath is the emptyDir where the reloaders write the
	// expanded configuration Prometheus reads.
	ConfigOutMountPath = promargs.ConfigOutDir
	// ConfigEnvsubstFile is the name of the expanded configuration.
	ConfigEnvsubstFile = promargs.ConfigEnvsubstFile
	// RulesMountPath holds one directory per rule file ConfigMap, named
	// after the ConfigMap: an emptyDir the reloaders write the rule files
	// into, gunzipped, which Prometheus mounts read-only.
	RulesMountPath = "/etc/prometheus/rules"
	// RuleConfigMapsMountPath holds, with the volume source, the rule
	// file ConfigMaps' volumes, one directory per ConfigMap named after
	// it, mounted into the reloaders only (--rules-input-dir): their
	// files are gzipped, which Prometheus cannot read.
	RuleConfigMapsMountPath = "/etc/prometheus/rule-configmaps"
	// storageMountPath is the TSDB directory.
	storageMountPath = promargs.StorageDir
	// AnnotationInputHash is, on the pod template, a hash of everything
	// rendered into the pods; the pods roll when it changes. The config
	// Secret and the rule ConfigMaps are not part of it: they are reloaded.
	AnnotationInputHash = kube.AnnotationInputHash

	// RuleVolumeStep is the granularity of the rule volumes a pod mounts:
	// the rule shard count rounded up to a multiple of it, at least one step.
	RuleVolumeStep = 4
	// WebPort is the port Prometheus listens on.
	WebPort = promargs.WebPort
	// nobody is the user of the Prometheus image.
	nobody  = 65534
	fsGroup = 2000
	// DefaultRetention is podreload's retention when the spec sets none.
	DefaultRetention = "15d"
	// gracePeriod lets Prometheus finish writing its TSDB head on shutdown.
	gracePeriod = 600

	// App is the value of kube.LabelName on the objects of
	// PrometheusServers: those the controller caches.
	App = "prometheus"
	// LabelInstance names, on every object of a server, the server.
	LabelInstance = "app.kubernetes.io/instance"
	// labelShard marks the pods of shards other than 0 with their number.
	labelShard = "podreload.dev/shard"
)

// WorkloadOptions are the controller-wide inputs of RenderWorkload: its
// configuration only (Render adds the rest, PodOptions).
type WorkloadOptions struct {
	// DefaultPrometheusImage is the image of servers that set none.
	DefaultPrometheusImage string
	// DefaultReloaderImage is the config-reloader image of servers that set none.
	DefaultReloaderImage string
}

// ConfigSecretName is the name of the Secret holding the configuration of
// server, a PrometheusServer object (in podreload's layout).
func ConfigSecretName(server *v1alpha1.PrometheusServer) string {
	return ConfigSecretOf(OwnTarget(server))
}

// ConfigSecretOf is the name of the Secret holding the configuration of
// server, in its layout.
func ConfigSecretOf(server Target) string {
	if server.Layout.Operator() {
		return operatorName(server)
	}
	return server.Name + "-config"
}

// APISource reports whether the reloaders of server read from the API
// server: spec.reloader.source api, or empty (the CRD's default, which
// the API server leaves unset when spec.reloader is absent).
func APISource(server Target) bool {
	return server.Spec.Reloader.Source != v1alpha1.SourceVolume
}

// RuleFilesGlobs are the rule_files entries for the rule file ConfigMaps
// of server when there are shards of them: one per directory, because
// Prometheus allows a wildcard in the last path element only. The
// reloaders write each ConfigMap into a directory of the same name under
// rulesMountPath. With the volume source they cover the padded count of
// mounted volumes (ruleVolumes), so the configuration does not change
// when a shard is added within it; with the API source, which needs no
// volume per shard, they are exactly the shards. They are relative to the
// directory of the expanded configuration (configOutMountPath), which
// Prometheus resolves them against, so the configuration holds wherever
// the pod's volumes are mounted. In prometheus-operator's layout they are
// operatorRuleFilesGlobs.
func RuleFilesGlobs(server Target, shards int) []string {
	if server.Layout.Operator() {
		return operatorRuleFilesGlobs(server, shards)
	}
	n := shards
	if !APISource(server) {
		n = RuleVolumes(shards)
	}
	globs := make([]string, n)
	for i := range globs {
		globs[i] = "../" + strings.TrimPrefix(ruleDir(server, i), path.Dir(ConfigOutMountPath)+"/") + "/*.yaml"
	}
	return globs
}

// RuleVolumes is the number of rule file ConfigMaps the pods mount for
// shards of them: shards rounded up to a multiple of 4, at least 4. The
// volumes are optional, so a new shard within that count appears in the
// running pods without a restart.
func RuleVolumes(shards int) int {
	return max(RuleVolumeStep, (shards+RuleVolumeStep-1)/RuleVolumeStep*RuleVolumeStep)
}

// RenderWorkload renders the headless Service of server, which selects the
// pods of every shard, and the StatefulSet of shard 0 (renderShard).
func RenderWorkload(server Target, opts PodOptions) (*corev1.Service, *appsv1.StatefulSet) {
	if server.Layout.Operator() {
		return governingService(server), RenderShard(server, opts, 0)
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: server.Name, Namespace: server.Namespace, Labels: SelectorLabels(server)},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  SelectorLabels(server),
			Ports: []corev1.ServicePort{{
				Name:       portName(server.Spec),
				Port:       WebPort,
				TargetPort: intstr.FromString(portName(server.Spec)),
			}},
		},
	}
	if WebTLS(server.Spec) {
		// For whoever scrapes or queries Prometheus through the Service:
		// a ServiceMonitor of it needs scheme https.
		svc.Spec.Ports[0].AppProtocol = ptr.To("https")
	}
	return svc, RenderShard(server, opts, 0)
}

// ShardCount is spec.shards, at least 1.
func ShardCount(server Target) int {
	return max(1, int(ptr.Deref(server.Spec.Shards, 1)))
}

// ShardName is the name of the StatefulSet of a shard of server: the
// server's name for shard 0, which is all there was before shards, and
// <name>-shard-<i>, as prometheus-operator names them, for the others.
func ShardName(server Target, shard int) string {
	name := server.Name
	if server.Layout.Operator() {
		name = operatorName(server)
	}
	if shard == 0 {
		return name
	}
	return name + "-shard-" + strconv.Itoa(shard)
}

// shardLabels are the labels that select the pods of a shard of server:
// the server's for shard 0, so that a server of one shard renders what it
// did before shards (its StatefulSet's selector cannot change), and
// labelShard besides for the others. Shard 0's StatefulSet selects the
// other shards' pods too, but adopts no pod another StatefulSet controls.
func shardLabels(server Target, shard int) map[string]string {
	l := SelectorLabels(server)
	if server.Layout.DaemonSet() {
		return l // No shard: one DaemonSet (daemonset.go makeDaemonSetSpec).
	}
	if server.Layout.Operator() {
		// On every shard, 0 included.
		l[labelOperatorShard] = strconv.Itoa(shard)
		return l
	}
	if shard > 0 {
		l[labelShard] = strconv.Itoa(shard)
	}
	return l
}

// RenderShard renders the StatefulSet of a shard of server. Its pod
// template carries annotationInputHash, and sets SHARD, which the reloaders
// expand in the configuration. Owner references are not set.
func RenderShard(server Target, opts PodOptions, shard int) *appsv1.StatefulSet {
	template, claims := podTemplate(server, opts, shard)
	sts := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: ShardName(server, shard), Namespace: server.Namespace, Labels: shardLabels(server, shard)},
		Spec: appsv1.StatefulSetSpec{
			Replicas:             ptr.To(ptr.Deref(server.Spec.Replicas, 1)),
			Selector:             &metav1.LabelSelector{MatchLabels: shardLabels(server, shard)},
			ServiceName:          server.Name,
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			Template:             template,
			VolumeClaimTemplates: claims,
		},
	}
	if server.Layout.Operator() {
		operatorStatefulSet(server, sts)
	}
	return sts
}

// ruleDir is where the reloaders write the files of the i-th rule file
// ConfigMap of server.
func ruleDir(server Target, i int) string {
	return RulesMountPath + "/" + RuleShardName(server, i)
}

// SelectorLabels are the labels the StatefulSets of server select their
// pods by, in its layout.
func SelectorLabels(server Target) map[string]string {
	if server.Layout.Operator() {
		return operatorSelectorLabels(server)
	}
	return map[string]string{kube.LabelName: App, LabelInstance: server.Name}
}

func podTemplate(server Target, opts PodOptions, shard int) (corev1.PodTemplateSpec, []corev1.PersistentVolumeClaim) {
	spec := server.Spec
	signal := spec.Reloader.ReloadMethod == "signal"

	configOut := ConfigOutMountPath + "/" + ConfigEnvsubstFile
	operator := server.Layout.Operator()
	storage, storageVolumes, claims := storageVolume(spec.Storage)
	if operator {
		storage, storageVolumes, claims = operatorStorage(server)
	}
	src := podSource(server, opts.RuleShards, opts.ConfigParts, configOut, storage)
	web := webPod(server, opts.Reload)
	userVolumes, userMounts := podUserVolumes(spec)
	volumes := slices.Concat(src.Volumes, storageVolumes, src.RuleVolumes, web.Volumes, userVolumes)

	prometheus := prometheusContainer(spec, opts.WorkloadOptions, configOut, storage, slices.Concat(userMounts, src.ServerMounts, web.ServerMounts))
	meta, security, spread := podMetadata(server, shard), cmp.Or(spec.SecurityContext, PodSecurity()), topologySpread(server, shard)
	reloaderSecurity := containerSecurity()
	if operator {
		reloaderSecurity = operatorReloaderSecurity(spec)
		prometheus = operatorPrometheusContainer(server, opts.WorkloadOptions, storage, slices.Concat(userMounts, src.ServerMounts, web.ServerMounts))
		// prometheus-operator leaves an unset securityContext unset.
		meta, security, spread = operatorPodMetadata(server, shard, opts.WebConfigHash), spec.SecurityContext, operatorTopologySpread(server, shard)
	}
	initReloader, reloader := sidecar.Containers(sidecar.Spec{
		Image:           cmp.Or(spec.Reloader.Image, opts.DefaultReloaderImage),
		Resources:       spec.Reloader.Resources,
		Env:             reloaderEnv(server, shard),
		SourceArgs:      src.Args,
		ReloadArgs:      reloadArgs(spec, web),
		Mounts:          src.ReloaderMounts,
		SidecarMounts:   web.ReloaderMounts,
		SecurityContext: reloaderSecurity,
		ListenHost:      reloaderListenHost(spec),
		LogLevel:        spec.LogLevel,
		LogFormat:       spec.LogFormat,
		NoReport:        spec.NoServiceAccountToken,
	})
	initReloader.ImagePullPolicy, reloader.ImagePullPolicy = spec.ImagePullPolicy, spec.ImagePullPolicy

	t := corev1.PodTemplateSpec{
		ObjectMeta: meta,
		Spec: corev1.PodSpec{
			ServiceAccountName:            spec.ServiceAccountName,
			AutomountServiceAccountToken:  ptr.To(!spec.NoServiceAccountToken), // Whatever the service account says: the sidecar reports, and reads with the API source.
			TerminationGracePeriodSeconds: ptr.To(ptr.Deref(spec.TerminationGracePeriodSeconds, gracePeriod)),
			SecurityContext:               security,
			InitContainers:                []corev1.Container{initReloader},
			Containers:                    []corev1.Container{prometheus, reloader},
			Volumes:                       volumes,
			NodeSelector:                  spec.NodeSelector,
			Tolerations:                   spec.Tolerations,
			Affinity:                      spec.Affinity,
			TopologySpreadConstraints:     spread,
			PriorityClassName:             spec.PriorityClassName,
			ImagePullSecrets:              spec.ImagePullSecrets,
			SchedulerName:                 spec.SchedulerName,
			DNSPolicy:                     corev1.DNSPolicy(ptr.Deref(spec.DNSPolicy, "")),
			DNSConfig:                     takeover.PodDNSConfig(spec.DNSConfig),
			HostAliases:                   takeover.HostAliases(spec.HostAliases),
			EnableServiceLinks:            spec.EnableServiceLinks,
			HostUsers:                     spec.HostUsers,
		},
	}
	addThanos(&t.Spec, server, storage)
	mergeContainers(&t.Spec, spec)
	if signal {
		// The reloader signals Prometheus, which runs as the same user.
		t.Spec.ShareProcessNamespace = ptr.To(true)
	}
	// The hash is of the template without it: set last.
	t.Annotations[AnnotationInputHash] = inputHash(t, claims)
	return t, claims
}

// podMetadata is the metadata of a shard's pods: spec.podMetadata's labels
// and annotations, under the shard's selector labels (and the input hash
// annotation) the controller sets.
func podMetadata(server Target, shard int) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Labels: map[string]string{}, Annotations: map[string]string{}}
	if pm := server.Spec.PodMetadata; pm != nil {
		maps.Copy(m.Labels, pm.Labels)
		maps.Copy(m.Annotations, pm.Annotations)
	}
	maps.Copy(m.Labels, shardLabels(server, shard))
	return m
}

// topologySpread is spec.topologySpreadConstraints for the pods of a
// shard, with the labels of the server's pods added to the labelSelector
// of those that ask for them (additionalLabelSelectors OnResource), or of
// the shard's pods (OnShard).
func topologySpread(server Target, shard int) []corev1.TopologySpreadConstraint {
	var out []corev1.TopologySpreadConstraint
	for _, c := range server.Spec.TopologySpreadConstraints {
		tsc := spreadConstraint(c)
		if c.AdditionalLabelSelectors != nil {
			maps.Copy(tsc.LabelSelector.MatchLabels, SelectorLabels(server))
			if *c.AdditionalLabelSelectors == monitoringv1.ShardAndResourceNameLabelSelector {
				maps.Copy(tsc.LabelSelector.MatchLabels, shardLabels(server, shard))
				if shard == 0 { // Shard 0's pods are those without the label.
					tsc.LabelSelector.MatchExpressions = append(tsc.LabelSelector.MatchExpressions,
						metav1.LabelSelectorRequirement{Key: labelShard, Operator: metav1.LabelSelectorOpDoesNotExist})
				}
			}
		}
		out = append(out, tsc)
	}
	return out
}

// spreadConstraint is c as a pod's constraint, with a label selector and
// its matchLabels ready to take the labels additionalLabelSelectors asks
// for, when it asks for some.
func spreadConstraint(c monitoringv1.TopologySpreadConstraint) corev1.TopologySpreadConstraint {
	tsc := corev1.TopologySpreadConstraint(*c.CoreV1TopologySpreadConstraint.DeepCopy())
	if c.AdditionalLabelSelectors != nil {
		if tsc.LabelSelector == nil {
			tsc.LabelSelector = &metav1.LabelSelector{}
		}
		if tsc.LabelSelector.MatchLabels == nil {
			tsc.LabelSelector.MatchLabels = map[string]string{}
		}
	}
	return tsc
}

// prometheusContainer runs Prometheus on the rendered configuration.
func prometheusContainer(spec v1alpha1.PrometheusServerSpec, opts WorkloadOptions, configOut string, storage corev1.VolumeMount, ruleMounts []corev1.VolumeMount) corev1.Container {
	// validateArgs refused the additional arguments that clash.
	args := slices.Concat(prometheusArgs(spec, configOut), spec.AdditionalArgs)
	return corev1.Container{
		Name:            "prometheus",
		Image:           prometheusImage(spec, opts.DefaultPrometheusImage),
		Args:            compat.CommandLine(args),
		ImagePullPolicy: spec.ImagePullPolicy,
		Ports:           []corev1.ContainerPort{{Name: portName(spec), ContainerPort: WebPort, Protocol: corev1.ProtocolTCP}},
		ReadinessProbe:  httpProbe(spec, WebPath(spec, "/-/ready"), 5, 3),
		LivenessProbe:   httpProbe(spec, WebPath(spec, "/-/healthy"), 10, 6),
		Resources:       spec.Resources,
		VolumeMounts:    append([]corev1.VolumeMount{{Name: "config-out", MountPath: ConfigOutMountPath, ReadOnly: true}, storage}, ruleMounts...),
		SecurityContext: containerSecurity(),
	}
}

// prometheusArgs are the flags the controller sets on Prometheus, in order.
func prometheusArgs(spec v1alpha1.PrometheusServerSpec, configOut string) []monitoringv1.Argument {
	args := []monitoringv1.Argument{
		{Name: "config.file", Value: configOut},
		{Name: "web.enable-lifecycle"},
		{Name: "storage.tsdb.path", Value: storageMountPath},
		{Name: "storage.tsdb.retention.time", Value: cmp.Or(string(spec.Retention), DefaultRetention)},
		{Name: "web.listen-address", Value: ":" + strconv.Itoa(WebPort)},
	}
	if spec.RetentionSize != "" {
		args = append(args, monitoringv1.Argument{Name: "storage.tsdb.retention.size", Value: string(spec.RetentionSize)})
	}
	if spec.WALCompression != nil {
		name := "storage.tsdb.wal-compression"
		if !*spec.WALCompression {
			name = "no-" + name
		}
		args = append(args, monitoringv1.Argument{Name: name})
	}
	if len(spec.EnableFeatures) > 0 {
		features := make([]string, len(spec.EnableFeatures))
		for i, f := range spec.EnableFeatures {
			features[i] = string(f)
		}
		args = append(args, monitoringv1.Argument{Name: "enable-feature", Value: strings.Join(features, ",")})
	}
	if spec.ExternalURL != "" {
		args = append(args, monitoringv1.Argument{Name: "web.external-url", Value: spec.ExternalURL})
	}
	// Set whenever an external URL is: Prometheus would otherwise serve
	// under the URL's path, where the probes and the reloader do not look.
	if spec.RoutePrefix != "" || spec.ExternalURL != "" {
		args = append(args, monitoringv1.Argument{Name: "web.route-prefix", Value: cmp.Or(spec.RoutePrefix, "/")})
	}
	v := promcfg.ParseVersion(spec.Version)
	args = append(append(args, promargs.Query(spec, v)...), promargs.Receiver(spec, v)...)
	if spec.LogLevel != "" {
		args = append(args, monitoringv1.Argument{Name: "log.level", Value: spec.LogLevel})
	}
	if spec.LogFormat != "" {
		args = append(args, monitoringv1.Argument{Name: "log.format", Value: spec.LogFormat})
	}
	return slices.Concat(args, webArgs(spec), promargs.Compaction(spec, promcfg.ParseVersion(spec.Version)))
}

// webArgs are the flags of spec.web.
func webArgs(spec v1alpha1.PrometheusServerSpec) []monitoringv1.Argument {
	if spec.Web == nil {
		return nil
	}
	var args []monitoringv1.Argument
	if webConfigFile(spec) {
		args = append(args, monitoringv1.Argument{Name: "web.config.file", Value: WebConfigMountPath + "/" + WebConfigSecretKey})
	}
	if spec.Web.PageTitle != nil {
		args = append(args, monitoringv1.Argument{Name: "web.page-title", Value: *spec.Web.PageTitle})
	}
	if spec.Web.MaxConnections != nil {
		args = append(args, monitoringv1.Argument{Name: "web.max-connections", Value: strconv.Itoa(int(*spec.Web.MaxConnections))})
	}
	return args
}

// ValidateArgs refuses spec.additionalArgs that name a flag the controller
// sets, in either form (name or no-name), as prometheus-operator does.
func ValidateArgs(server Target) error {
	spec := server.Spec
	own := prometheusArgs(spec, "")
	if server.Layout.Operator() {
		own = OperatorPrometheusArgs(server)
	}
	set := map[string]bool{}
	for _, a := range own {
		set[strings.TrimPrefix(a.Name, "no-")] = true
	}
	var clash []string
	for _, a := range spec.AdditionalArgs {
		if set[strings.TrimPrefix(a.Name, "no-")] {
			clash = append(clash, a.Name)
		}
	}
	if len(clash) > 0 {
		return fmt.Errorf("spec.additionalArgs: %s set by the controller itself", strings.Join(clash, ", "))
	}
	return nil
}

// WebPath is p under Prometheus' route prefix.
func WebPath(spec v1alpha1.PrometheusServerSpec, p string) string {
	return path.Clean("/" + spec.RoutePrefix + p)
}

// prometheusImage is spec.image; else the default image, with the tag
// spec.version when it is set.
func prometheusImage(spec v1alpha1.PrometheusServerSpec, def string) string {
	switch {
	case spec.Image != "":
		return spec.Image
	case spec.Version == "":
		return def
	}
	repo, _, _ := strings.Cut(def, "@")
	if i := strings.LastIndexByte(repo, ':'); i > strings.LastIndexByte(repo, '/') {
		repo = repo[:i]
	}
	return repo + ":" + spec.Version
}

// PodSecurity runs the pod as non-root with the runtime's seccomp profile;
// fsGroup makes the data volume writable.
func PodSecurity() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:        ptr.To(true),
		RunAsUser:           ptr.To[int64](nobody),
		RunAsGroup:          ptr.To[int64](nobody),
		FSGroup:             ptr.To[int64](fsGroup),
		FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
		SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// storageVolume is Prometheus' data volume: a claim from the template, the
// given emptyDir, or an emptyDir by default.
func storageVolume(st *v1alpha1.StorageSpec) (corev1.VolumeMount, []corev1.Volume, []corev1.PersistentVolumeClaim) {
	storage := corev1.VolumeMount{Name: "storage", MountPath: storageMountPath}
	switch {
	case st != nil && st.VolumeClaimTemplate != nil:
		t := st.VolumeClaimTemplate
		if t.Name != "" {
			storage.Name = t.Name
		}
		// No apiVersion and kind: the API server keeps none in a
		// StatefulSet's claim templates, and the live StatefulSet would
		// never hold the rendered one (a write at every reconciliation).
		return storage, nil, []corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: storage.Name, Labels: t.Labels, Annotations: t.Annotations},
			Spec:       t.Spec,
		}}
	case st != nil && st.EmptyDir != nil:
		return storage, []corev1.Volume{{Name: storage.Name, VolumeSource: corev1.VolumeSource{EmptyDir: st.EmptyDir}}}, nil
	default:
		return storage, []corev1.Volume{{Name: storage.Name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}, nil
	}
}

// inputHash hashes the pod template (before it carries the hash) and the
// volume claims: exactly what rolls the pods, replicas and the content of
// the config Secret and rule ConfigMaps excluded. encoding/json writes
// struct fields in order and map keys sorted, so it is deterministic.
func inputHash(t corev1.PodTemplateSpec, claims []corev1.PersistentVolumeClaim) string {
	// Kubernetes API types always marshal.
	b, _ := json.Marshal(struct {
		Template corev1.PodTemplateSpec         `json:"template"`
		Claims   []corev1.PersistentVolumeClaim `json:"claims"`
	}{t, claims})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// httpProbe probes Prometheus at path, over HTTPS when it serves HTTPS
// (the kubelet does not verify the certificate).
func httpProbe(spec v1alpha1.PrometheusServerSpec, path string, period, failures int32) *corev1.Probe {
	scheme := corev1.URISchemeHTTP
	if WebTLS(spec) {
		scheme = corev1.URISchemeHTTPS
	}
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromString(portName(spec)), Scheme: scheme,
		}},
		PeriodSeconds:    period,
		TimeoutSeconds:   3,
		SuccessThreshold: 1,
		FailureThreshold: failures,
	}
}

func containerSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}
