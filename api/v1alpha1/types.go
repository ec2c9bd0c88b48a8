// Package v1alpha1 is the podreload.dev/v1alpha1 API: the PrometheusServer
// kind. The objects it selects are the upstream monitoring.coreos.com/v1
// ServiceMonitor, PodMonitor, Probe and PrometheusRule kinds and the
// monitoring.coreos.com/v1alpha1 ScrapeConfig kind.
//
// +kubebuilder:object:generate=true
// +groupName=podreload.dev
package v1alpha1

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	// Group is the API group.
	Group = "podreload.dev"
	// Version is the API version.
	Version = "v1alpha1"
	// Kind is the kind of PrometheusServer objects.
	Kind = "PrometheusServer"
)

// GroupVersion returns the group and version of this API.
func GroupVersion() schema.GroupVersion { return schema.GroupVersion{Group: Group, Version: Version} }

// AddToScheme adds the kinds of this API to s.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion(), &PrometheusServer{}, &PrometheusServerList{})
	metav1.AddToGroupVersion(s, GroupVersion())
	return nil
}

// PrometheusServer runs a Prometheus StatefulSet whose configuration and
// rules come from the ServiceMonitors, PodMonitors, Probes, ScrapeConfigs
// and PrometheusRules its selectors match. Configuration changes reach Prometheus through the
// config-reloader sidecar, never by restarting the pods.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=promsrv,categories=podreload
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Reconciled",type=string,JSONPath=`.status.conditions[?(@.type=="Reconciled")].status`
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.conditions[?(@.type=="ConfigApplied")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PrometheusServer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PrometheusServerSpec   `json:"spec,omitempty"`
	Status PrometheusServerStatus `json:"status,omitempty"`
}

// PrometheusServerList is a list of PrometheusServers.
//
// +kubebuilder:object:root=true
type PrometheusServerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PrometheusServer `json:"items"`
}

// PrometheusServerSpec is the desired state of a PrometheusServer.
type PrometheusServerSpec struct {
	// Image is the Prometheus image; empty means the controller's default.
	// +optional
	Image string `json:"image,omitempty"`
	// Replicas is the number of Prometheus pods of each shard; each pod of a
	// shard scrapes every target of the shard.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Shards splits the targets among this many groups of Replicas pods,
	// as prometheus-operator's shards do: each shard is a StatefulSet (shard
	// 0 is <name>, shard i is <name>-shard-<i>) whose Prometheus keeps the
	// targets whose __address__ hashes (hashmod) to it. A relabeling that
	// sets __tmp_hash shards on something else; one that sets
	// __tmp_disable_sharding makes every shard scrape the target. Every
	// shard evaluates every rule. Fewer shards delete the extra
	// StatefulSets, not their volume claims.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +optional
	Shards *int32 `json:"shards,omitempty"`
	// ServiceAccountName is the service account of the Prometheus pods.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// Resources of the Prometheus container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// Storage of the TSDB; none means an emptyDir.
	// +optional
	Storage *StorageSpec `json:"storage,omitempty"`
	// Retention is how long samples are kept, a Prometheus duration.
	// +kubebuilder:default="15d"
	// +optional
	Retention monitoringv1.Duration `json:"retention,omitempty"`
	// Paused stops every write of the controller for this object.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// ExternalLabels are added to every series and alert. The controller
	// also sets prometheus=<namespace>/<name> and prometheus_replica=<pod name>
	// (see PrometheusExternalLabelName and ReplicaExternalLabelName), which
	// win.
	// +optional
	ExternalLabels map[string]string `json:"externalLabels,omitempty"`
	// PrometheusExternalLabelName is the name of the external label whose
	// value is <namespace>/<name>; unset is prometheus, "" sets none.
	// +optional
	PrometheusExternalLabelName *string `json:"prometheusExternalLabelName,omitempty"`
	// ReplicaExternalLabelName is the name of the external label whose
	// value is the pod's name, which alerts drop (so that Alertmanager
	// deduplicates the replicas' alerts); unset is prometheus_replica, ""
	// sets none.
	// +optional
	ReplicaExternalLabelName *string `json:"replicaExternalLabelName,omitempty"`
	// ScrapeInterval is the default scrape interval.
	// +kubebuilder:default="30s"
	// +optional
	ScrapeInterval monitoringv1.Duration `json:"scrapeInterval,omitempty"`
	// EvaluationInterval is the rule evaluation interval.
	// +kubebuilder:default="30s"
	// +optional
	EvaluationInterval monitoringv1.Duration `json:"evaluationInterval,omitempty"`
	// Alerting lists the Alertmanagers alerts are sent to.
	// +optional
	Alerting *AlertingSpec `json:"alerting,omitempty"`
	// RemoteWrite lists the remote write endpoints.
	// +optional
	RemoteWrite []RemoteWriteSpec `json:"remoteWrite,omitempty"`

	// ServiceMonitorSelector selects ServiceMonitors by label; nil selects none.
	// +optional
	ServiceMonitorSelector *metav1.LabelSelector `json:"serviceMonitorSelector,omitempty"`
	// ServiceMonitorNamespaceSelector selects the namespaces ServiceMonitors
	// are taken from; nil means the PrometheusServer's own namespace, {} all.
	// +optional
	ServiceMonitorNamespaceSelector *metav1.LabelSelector `json:"serviceMonitorNamespaceSelector,omitempty"`
	// PodMonitorSelector selects PodMonitors by label; nil selects none.
	// +optional
	PodMonitorSelector *metav1.LabelSelector `json:"podMonitorSelector,omitempty"`
	// PodMonitorNamespaceSelector selects the namespaces PodMonitors are
	// taken from; nil means the PrometheusServer's own namespace, {} all.
	// +optional
	PodMonitorNamespaceSelector *metav1.LabelSelector `json:"podMonitorNamespaceSelector,omitempty"`
	// ProbeSelector selects Probes by label; nil selects none.
	// +optional
	ProbeSelector *metav1.LabelSelector `json:"probeSelector,omitempty"`
	// ProbeNamespaceSelector selects the namespaces Probes are taken from;
	// nil means the PrometheusServer's own namespace, {} all.
	// +optional
	ProbeNamespaceSelector *metav1.LabelSelector `json:"probeNamespaceSelector,omitempty"`
	// ScrapeConfigSelector selects ScrapeConfigs (monitoring.coreos.com/
	// v1alpha1) by label; nil selects none.
	// +optional
	ScrapeConfigSelector *metav1.LabelSelector `json:"scrapeConfigSelector,omitempty"`
	// ScrapeConfigNamespaceSelector selects the namespaces ScrapeConfigs
	// are taken from; nil means the PrometheusServer's own namespace, {}
	// all.
	// +optional
	ScrapeConfigNamespaceSelector *metav1.LabelSelector `json:"scrapeConfigNamespaceSelector,omitempty"`
	// RuleSelector selects PrometheusRules by label; nil selects none.
	// +optional
	RuleSelector *metav1.LabelSelector `json:"ruleSelector,omitempty"`
	// RuleNamespaceSelector selects the namespaces PrometheusRules are taken
	// from; nil means the PrometheusServer's own namespace, {} all.
	// +optional
	RuleNamespaceSelector *metav1.LabelSelector `json:"ruleNamespaceSelector,omitempty"`

	// Reloader configures the config-reloader sidecar and init container.
	// +optional
	Reloader ReloaderSpec `json:"reloader,omitempty"`

	// The fields below have the names and the meaning of
	// prometheus-operator's Prometheus kind, so that a spec can be copied
	// across.

	// Version is the Prometheus version: with no Image, the tag of the
	// controller's default image.
	// +optional
	Version string `json:"version,omitempty"`
	// LogLevel of Prometheus, and of the reloaders (--log-level) when
	// not info.
	// +kubebuilder:validation:Enum="";debug;info;warn;error
	// +optional
	LogLevel string `json:"logLevel,omitempty"`
	// LogFormat of Prometheus, and of the reloaders (--log-format) when
	// not logfmt.
	// +kubebuilder:validation:Enum="";logfmt;json
	// +optional
	LogFormat string `json:"logFormat,omitempty"`
	// EnableFeatures are Prometheus' feature flags (--enable-feature).
	// +listType=set
	// +optional
	EnableFeatures []monitoringv1.EnableFeature `json:"enableFeatures,omitempty"`
	// ExternalURL is the URL Prometheus is reachable at, from outside
	// (--web.external-url).
	// +optional
	ExternalURL string `json:"externalUrl,omitempty"`
	// RoutePrefix is the path Prometheus serves under (--web.route-prefix);
	// the probes and the reloaders use it.
	// +optional
	RoutePrefix string `json:"routePrefix,omitempty"`
	// RetentionSize is the most the TSDB's blocks may take
	// (--storage.tsdb.retention.size), e.g. 512MB.
	// +optional
	RetentionSize monitoringv1.ByteSize `json:"retentionSize,omitempty"`
	// WALCompression compresses the write-ahead log; unset leaves
	// Prometheus' default (on).
	// +optional
	WALCompression *bool `json:"walCompression,omitempty"`
	// ScrapeTimeout is the default scrape timeout; unset leaves
	// Prometheus' default (10s, or the scrape interval if shorter).
	// +optional
	ScrapeTimeout monitoringv1.Duration `json:"scrapeTimeout,omitempty"`
	// EnforcedNamespaceLabel, when set, is a label the targets and series
	// of every monitor, Probe and ScrapeConfig, and the rules and series of
	// every PrometheusRule, get with the object's namespace as value,
	// whatever the object says: the last relabeling and metric relabeling
	// of each scrape job (before the shards' relabelings); on each
	// rule, the label, and a matcher on it in every selector of its
	// expression.
	// +optional
	EnforcedNamespaceLabel string `json:"enforcedNamespaceLabel,omitempty"`
	// ExcludedFromEnforcement are the objects enforcedNamespaceLabel
	// spares: an entry without a name spares every object of its resource
	// in its namespace.
	// +optional
	ExcludedFromEnforcement []monitoringv1.ObjectReference `json:"excludedFromEnforcement,omitempty"`
	// ScrapeClasses are settings ServiceMonitors, PodMonitors, Probes and
	// ScrapeConfigs take by naming one in their scrapeClass field, or from
	// the class with default: true when they name none, as
	// prometheus-operator's scrapeClasses: tlsConfig (files only: caFile,
	// certFile, keyFile fill in what the object's own tlsConfig leaves
	// unset; the whole class tlsConfig when the object has none),
	// authorization (credentialsFile only; when the object sets no
	// credentials of its own), relabelings (after the built-in ones,
	// before the object's), metricRelabelings (before the object's),
	// attachMetadata (monitors only) and fallbackScrapeProtocol (when the
	// object sets none). An object naming a class that does not exist is
	// left out; duplicate names, more than one default or an invalid
	// class refuse the spec (InvalidSpec).
	// +listType=map
	// +listMapKey=name
	// +optional
	ScrapeClasses []monitoringv1.ScrapeClass `json:"scrapeClasses,omitempty"`
	// ServiceDiscoveryRole is the role of the Kubernetes service
	// discovery of the ServiceMonitors that set none and of the
	// Alertmanagers of alerting: Endpoints (unset) or EndpointSlice (from
	// Prometheus 2.21; before, Endpoints), as prometheus-operator's.
	// +kubebuilder:validation:Enum=Endpoints;EndpointSlice
	// +optional
	ServiceDiscoveryRole *monitoringv1.ServiceDiscoveryRole `json:"serviceDiscoveryRole,omitempty"`
	// ScrapeSettings are the global scrape settings and those that
	// change the jobs made of the monitors (scrapesettings.go).
	ScrapeSettings `json:",inline"`
	// ServerFlags are settings that are flags of Prometheus
	// (serverflags.go).
	ServerFlags `json:",inline"`
	// TakenOver are settings of objects taken over alone (takenover.go).
	TakenOver `json:"-"`
	// Web configures Prometheus' web server, as prometheus-operator's
	// web field does: pageTitle (--web.page-title), maxConnections
	// (--web.max-connections), and, rendered into a web configuration file
	// (--web.config.file) in the Secret <name>-web-config, tlsConfig (HTTPS:
	// cert from a Secret or ConfigMap, keySecret, client_ca, clientAuthType,
	// minVersion, maxVersion, cipherSuites, preferServerCipherSuites,
	// curvePreferences) and httpConfig (http2, headers). With tlsConfig the
	// probes and the config-reloader use HTTPS, and the reloader verifies
	// Prometheus' certificate. certFile, keyFile and clientCAFile are
	// refused (the config-reloader, which verifies the certificate, reads
	// it from a Secret or ConfigMap, never from a file), and so are the
	// clientAuthTypes that require a client certificate (the kubelet's
	// probes present none).
	// +optional
	Web *monitoringv1.PrometheusWebSpec `json:"web,omitempty"`
	// AdditionalScrapeConfigs is a key of a Secret in the server's
	// namespace holding a YAML list of Prometheus scrape configurations,
	// appended after the generated jobs as prometheus-operator does (with
	// more than one shard, each job gets the sharding relabelings unless
	// it has a hashmod relabeling of its own). Their job names must be
	// unique and their relabelings valid, or the spec is refused
	// (InvalidSpec) and the last configuration stays; the rest is checked
	// by the Prometheus that loads it (condition ConfigApplied).
	// +optional
	AdditionalScrapeConfigs *corev1.SecretKeySelector `json:"additionalScrapeConfigs,omitempty"`
	// EnableAdminAPI enables Prometheus' admin API (--web.enable-admin-api),
	// which can delete series: anyone who reaches the web port can.
	// +optional
	EnableAdminAPI bool `json:"enableAdminAPI,omitempty"`
	// Rules are the alerting rules' flags: alert.forOutageTolerance
	// (--rules.alert.for-outage-tolerance), alert.forGracePeriod
	// (--rules.alert.for-grace-period), alert.resendDelay
	// (--rules.alert.resend-delay).
	// +optional
	Rules monitoringv1.Rules `json:"rules,omitempty"`
	// Query are the query engine's flags: lookbackDelta
	// (--query.lookback-delta), maxConcurrency (--query.max-concurrency),
	// maxSamples (--query.max-samples), timeout (--query.timeout).
	// +optional
	Query *monitoringv1.QuerySpec `json:"query,omitempty"`
	// RuleQueryOffset delays the queries of rule evaluations
	// (global.rule_query_offset), for samples that arrive late.
	// +optional
	RuleQueryOffset *monitoringv1.Duration `json:"ruleQueryOffset,omitempty"`
	// Exemplars: maxSize is the most exemplars kept in memory
	// (storage.exemplars.max_exemplars), with the exemplar-storage
	// feature.
	// +optional
	Exemplars *monitoringv1.Exemplars `json:"exemplars,omitempty"`
	// TSDB configures the TSDB (storage.tsdb of the configuration).
	// +optional
	TSDB *TSDBSpec `json:"tsdb,omitempty"`
	// AdditionalAlertManagerConfigs is a key of a Secret in the server's
	// namespace holding a YAML list of Prometheus alertmanager
	// configurations, appended after those of alerting, as
	// prometheus-operator does; their relabelings are checked, the rest is
	// checked by the Prometheus that loads them (condition ConfigApplied).
	// +optional
	AdditionalAlertManagerConfigs *corev1.SecretKeySelector `json:"additionalAlertManagerConfigs,omitempty"`
	// AdditionalAlertRelabelConfigs is a key of a Secret in the server's
	// namespace holding a YAML list of alert relabelings, appended after
	// the one that drops the replica label.
	// +optional
	AdditionalAlertRelabelConfigs *corev1.SecretKeySelector `json:"additionalAlertRelabelConfigs,omitempty"`
	// AdditionalArgs are more Prometheus flags, without the leading "--";
	// a flag the controller sets itself (or its "no-" form) is refused.
	// +optional
	AdditionalArgs []monitoringv1.Argument `json:"additionalArgs,omitempty"`

	// PodMetadata are labels and annotations added to the pods; the
	// labels the controller selects its pods by win.
	// +optional
	PodMetadata *monitoringv1.EmbeddedObjectMetadata `json:"podMetadata,omitempty"`
	// NodeSelector of the pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations of the pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// Affinity of the pods.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// TopologySpreadConstraints of the pods. additionalLabelSelectors
	// OnResource adds the labels the controller selects the server's pods
	// by to the labelSelector; OnShard, those of the shard's pods.
	// +optional
	TopologySpreadConstraints []monitoringv1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// PriorityClassName of the pods.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// ImagePullSecrets of the pods.
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// ImagePullPolicy of the Prometheus and config-reloader containers;
	// unset leaves the Kubernetes default.
	// +kubebuilder:validation:Enum="";Always;Never;IfNotPresent
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// PortName is the name of Prometheus' container port (9090), which the
	// probes use; unset is web.
	// +optional
	PortName string `json:"portName,omitempty"`
	// SchedulerName of the pods; unset is the default scheduler.
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`
	// DNSPolicy of the pods; unset is the Kubernetes default (ClusterFirst).
	// +optional
	DNSPolicy *monitoringv1.DNSPolicy `json:"dnsPolicy,omitempty"`
	// DNSConfig of the pods.
	// +optional
	DNSConfig *monitoringv1.PodDNSConfig `json:"dnsConfig,omitempty"`
	// HostAliases are entries of the pods' /etc/hosts.
	// +listType=map
	// +listMapKey=ip
	// +optional
	HostAliases []monitoringv1.HostAlias `json:"hostAliases,omitempty"`
	// EnableServiceLinks puts the Services of the namespace into the pods'
	// environment; unset is the Kubernetes default (true).
	// +optional
	EnableServiceLinks *bool `json:"enableServiceLinks,omitempty"`
	// HostUsers: false runs the pods in a user namespace of their own;
	// unset is the Kubernetes default (the host's).
	// +optional
	HostUsers *bool `json:"hostUsers,omitempty"`
	// TerminationGracePeriodSeconds of the pods, for Prometheus to write
	// its TSDB head on shutdown; unset is 600.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// Secrets are Secrets of the server's namespace mounted read-only into
	// the Prometheus container at /etc/prometheus/secrets/<name>, in a
	// volume named secret-<name>, as prometheus-operator does: files a
	// configuration can refer to.
	// +listType=set
	// +optional
	Secrets []string `json:"secrets,omitempty"`
	// ConfigMaps are ConfigMaps of the server's namespace mounted
	// read-only into the Prometheus container at
	// /etc/prometheus/configmaps/<name>, in a volume named
	// configmap-<name>.
	// +listType=set
	// +optional
	ConfigMaps []string `json:"configMaps,omitempty"`
	// Volumes are more volumes of the pods; a name the controller uses is
	// refused (InvalidSpec).
	// +optional
	Volumes []corev1.Volume `json:"volumes,omitempty"`
	// VolumeMounts are more mounts of the Prometheus container, after the
	// data volume's; a path mounted twice is refused (InvalidSpec).
	// +optional
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`
	// SecurityContext of the pods; unset means non-root (user and group
	// 65534), fsGroup 2000 and the runtime's seccomp profile. Every
	// container rendered has a restricted security context whatever this
	// says: read-only root filesystem, no privilege escalation, no
	// capabilities.
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`
}

// StorageSpec chooses the TSDB volume: exactly one of its fields.
type StorageSpec struct {
	// EmptyDir keeps the TSDB in an emptyDir volume.
	// +optional
	EmptyDir *corev1.EmptyDirVolumeSource `json:"emptyDir,omitempty"`
	// VolumeClaimTemplate gives each pod a PersistentVolumeClaim.
	// +optional
	VolumeClaimTemplate *monitoringv1.EmbeddedPersistentVolumeClaim `json:"volumeClaimTemplate,omitempty"`
}

// TSDBSpec configures the TSDB.
type TSDBSpec struct {
	// OutOfOrderTimeWindow is how old a sample may be and still be
	// ingested out of order (storage.tsdb.out_of_order_time_window).
	// +optional
	OutOfOrderTimeWindow *monitoringv1.Duration `json:"outOfOrderTimeWindow,omitempty"`
	// StaleSeriesCompactionThreshold (stale_series_compaction_threshold)
	// and ChunkEncoding (chunk_encoding), of an object taken over: not
	// fields of the PrometheusServer kind.
	StaleSeriesCompactionThreshold *resource.Quantity              `json:"-"`
	ChunkEncoding                  *monitoringv1.ChunkEncodingSpec `json:"-"`
}

// AlertingSpec lists Alertmanagers.
type AlertingSpec struct {
	// Alertmanagers are found through the endpoints of their Services.
	Alertmanagers []AlertmanagerEndpoint `json:"alertmanagers"`
}

// AlertmanagerEndpoint is a Service in front of Alertmanagers.
type AlertmanagerEndpoint struct {
	// Namespace of the Service; empty means the PrometheusServer's.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the Service.
	Name string `json:"name"`
	// Port of the Service, by name or number.
	Port intstr.IntOrString `json:"port"`
	// Scheme is http or https.
	// +kubebuilder:validation:Enum=http;https
	// +optional
	Scheme string `json:"scheme,omitempty"`
	// PathPrefix is prepended to the Alertmanager API paths.
	// +optional
	PathPrefix string `json:"pathPrefix,omitempty"`
	// APIVersion of the Alertmanager API.
	// +kubebuilder:validation:Enum=v2
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// Timeout of a request to the Alertmanagers.
	// +optional
	Timeout *monitoringv1.Duration `json:"timeout,omitempty"`
	// EnableHttp2 lets the requests use HTTP/2.
	// +optional
	EnableHttp2 *bool `json:"enableHttp2,omitempty"`
	// TLSConfig of the requests, from Secrets and ConfigMaps of the
	// server's namespace, or files.
	// +optional
	TLSConfig *monitoringv1.TLSConfig `json:"tlsConfig,omitempty"`
	// BasicAuth of the requests, from Secrets of the server's namespace.
	// +optional
	BasicAuth *monitoringv1.BasicAuth `json:"basicAuth,omitempty"`
	// Authorization header of the requests, from a Secret of the server's
	// namespace.
	// +optional
	Authorization *monitoringv1.SafeAuthorization `json:"authorization,omitempty"`
	// BearerTokenFile is a file of the pod holding the bearer token of the
	// requests (bearer_token_file; neither basicAuth nor authorization).
	// +optional
	BearerTokenFile string `json:"bearerTokenFile,omitempty"`
	// ProxyConfig: the proxy of the requests.
	// +optional
	monitoringv1.ProxyConfig `json:",inline"`
	// RelabelConfigs are relabelings of the discovered Alertmanagers,
	// after the controller's.
	// +optional
	RelabelConfigs []monitoringv1.RelabelConfig `json:"relabelings,omitempty"`
	// AlertRelabelConfigs relabel the alerts sent to these Alertmanagers.
	// +optional
	AlertRelabelConfigs []monitoringv1.RelabelConfig `json:"alertRelabelings,omitempty"`
	// Sigv4, of a Prometheus taken over (its sigv4), signs the requests
	// with AWS Signature Version 4; not a field of the PrometheusServer kind.
	Sigv4 *monitoringv1.Sigv4 `json:"-"`
}

// ReloaderSpec configures the config-reloader containers.
type ReloaderSpec struct {
	// Image of config-reloader; empty means the controller's default.
	// +optional
	Image string `json:"image,omitempty"`
	// Resources of the sidecar and the init container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// ReloadMethod is http (POST /-/reload) or signal (SIGHUP, with a shared
	// process namespace).
	// +kubebuilder:validation:Enum=http;signal
	// +kubebuilder:default=http
	// +optional
	ReloadMethod string `json:"reloadMethod,omitempty"`
	// Source is where the reloaders read the configuration and the rules.
	// api (the default; empty means api too): from the API server, the
	// config Secret and the rule file ConfigMaps watched directly and
	// written into an emptyDir of the pod, so that a change reaches
	// Prometheus in about a second. The controller grants the pod's
	// service account, with a Role of its own, get, list and watch on the
	// config Secret and list and watch on the ConfigMaps of the namespace
	// (a list by label selector cannot be limited to named objects), and
	// the pod mounts its service account token. volume: from the Secret
	// and ConfigMap volumes the kubelet projects, 60 to 90 s behind the
	// API server, with no Role.
	// +kubebuilder:validation:Enum=api;volume
	// +kubebuilder:default=api
	// +optional
	Source string `json:"source,omitempty"`
}

const (
	// SourceAPI is the ReloaderSpec.Source that reads from the API server.
	SourceAPI = "api"
	// SourceVolume is the ReloaderSpec.Source that reads from the volumes
	// the kubelet projects.
	SourceVolume = "volume"
)
