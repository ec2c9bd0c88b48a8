package v1alpha1

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TakenOver are the settings of a Prometheus or PrometheusAgent taken over
// that the PrometheusServer kind does not have: the model carries them,
// the API does not (PrometheusServerSpec has them inline, never
// serialized).
type TakenOver struct {
	// Containers and InitContainers (their containers and
	// initContainers) are merged by name into the rendered pod as
	// prometheus-operator merges them: one named as a rendered container
	// is a strategic merge patch of it, the others are appended. In
	// prometheus-operator's layout only.
	Containers     []corev1.Container `json:"-"`
	InitContainers []corev1.Container `json:"-"`
	// DefaultBase is, for an object whose spec sets no version, image, tag
	// nor sha, the base image its image is composed from: at
	// prometheus-operator's default version, or at the version its
	// running StatefulSet runs when that is newer (a takeover never
	// downgrades Prometheus).
	DefaultBase string `json:"-"`
	// RetentionPercentage is a Prometheus's retentionPercentage: the most
	// of the data volume's capacity its blocks may take, in the
	// configuration's storage.tsdb.retention from Prometheus 3.11 (there
	// is no flag for it before); above 0, it stands for the default
	// retention time, as retentionSize does.
	RetentionPercentage *resource.Quantity `json:"-"`
	// PodManagementPolicy (default Parallel), UpdateStrategy (default
	// RollingUpdate), MinReadySeconds and
	// PersistentVolumeClaimRetentionPolicy are the StatefulSets', as
	// prometheus-operator sets them.
	PodManagementPolicy                  *monitoringv1.PodManagementPolicyType                   `json:"-"`
	UpdateStrategy                       *monitoringv1.StatefulSetUpdateStrategy                 `json:"-"`
	MinReadySeconds                      *int32                                                  `json:"-"`
	PersistentVolumeClaimRetentionPolicy *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy `json:"-"`
	// HostNetwork runs the pods in the node's network namespace (with
	// dnsPolicy ClusterFirstWithHostNet unless dnsPolicy is set);
	// MaximumStartupDurationSeconds bounds the startup probe, as
	// prometheus-operator computes it.
	HostNetwork                   bool   `json:"-"`
	MaximumStartupDurationSeconds *int32 `json:"-"`
	// Ephemeral is storage.ephemeral, the data volume a generic
	// ephemeral one; DisableMountSubPath, storage.disableMountSubPath,
	// mounts the data volume without the sub-path prometheus-db.
	Ephemeral           *corev1.EphemeralVolumeSource `json:"-"`
	DisableMountSubPath bool                          `json:"-"`
	// RemoteRead is remote_read (a Prometheus's), TracingConfig tracing,
	// Runtime runtime and OTLP otlp; QueryLogFile (a Prometheus's) and
	// ScrapeFailureLogFile are global.query_log_file and
	// global.scrape_failure_log_file, a relative one in the log-file
	// emptyDir at /var/log/prometheus, as prometheus-operator mounts it;
	// PodTargetLabels are the pod labels every ServiceMonitor and
	// PodMonitor job copies onto its targets, after the monitor's own;
	// APIServerConfig is the API server every Kubernetes service
	// discovery of the monitors, Probes and Alertmanagers reads, and its
	// credentials. Each is rendered as prometheus-operator's generator
	// renders it, for the Prometheus versions that have it.
	RemoteRead           []monitoringv1.RemoteReadSpec `json:"-"`
	TracingConfig        *monitoringv1.TracingConfig   `json:"-"`
	Runtime              *monitoringv1.RuntimeConfig   `json:"-"`
	OTLP                 *monitoringv1.OTLPConfig      `json:"-"`
	QueryLogFile         string                        `json:"-"`
	ScrapeFailureLogFile *string                       `json:"-"`
	PodTargetLabels      []string                      `json:"-"`
	APIServerConfig      *monitoringv1.APIServerConfig `json:"-"`
	// EnableOTLPReceiver turns Prometheus' OTLP receiver on or off; unset,
	// it is on with an otlp section (--web.enable-otlp-receiver from
	// Prometheus 3, the feature otlp-write-receiver from 2.47).
	// AllowOverlappingBlocks (a Prometheus's, deprecated) is
	// --storage.tsdb.allow-overlapping-blocks, from Prometheus 2.11 to
	// 2.38.
	EnableOTLPReceiver     *bool `json:"-"`
	AllowOverlappingBlocks bool  `json:"-"`
	// ServiceName names the user's governing Service of the StatefulSets,
	// which must select the pods: prometheus-operated (or
	// prometheus-agent-operated) is then neither their governing Service
	// nor written.
	ServiceName *string `json:"-"`
	// NoServiceAccountToken (automountServiceAccountToken false) mounts
	// no service account token in the pods: the reloaders read their
	// volumes (spec.reloader.source volume) and report nothing.
	NoServiceAccountToken bool `json:"-"`
	// Thanos (a Prometheus's) runs the Thanos sidecar beside Prometheus,
	// as prometheus-operator renders it (package promserver/thanos): its
	// container, volume and Secret, Prometheus' compaction flags, the
	// governing Service's grpc port.
	Thanos *monitoringv1.ThanosSpec `json:"-"`
}
