package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PrometheusServerStatus is the observed state of a PrometheusServer.
type PrometheusServerStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Reconciled, Available and ConfigApplied (True when every
	// ready replica runs ContentHash).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Replicas is the number of pods of the StatefulSets, all shards.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// Shards is the number of shards whose StatefulSet exists.
	// +optional
	Shards int32 `json:"shards,omitempty"`
	// ReadyReplicas is the number of ready pods, all shards.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// ServiceMonitors counts the selected and rejected ServiceMonitors.
	// +optional
	ServiceMonitors Selection `json:"serviceMonitors,omitempty"`
	// PodMonitors counts the selected and rejected PodMonitors.
	// +optional
	PodMonitors Selection `json:"podMonitors,omitempty"`
	// Probes counts the selected and rejected Probes.
	// +optional
	Probes Selection `json:"probes,omitempty"`
	// ScrapeConfigs counts the selected and rejected ScrapeConfigs.
	// +optional
	ScrapeConfigs Selection `json:"scrapeConfigs,omitempty"`
	// Rules counts the selected and rejected PrometheusRules.
	// +optional
	Rules Selection `json:"rules,omitempty"`
	// ConfigHash is the hash of the configuration last written.
	// +optional
	ConfigHash string `json:"configHash,omitempty"`
	// ContentHash is the content hash of the configuration Secret and the
	// rule file ConfigMaps last written: the hash a replica's
	// config-reloader reports, in its pod's podreload.dev/applied
	// annotation, once Prometheus runs them.
	// +optional
	ContentHash string `json:"contentHash,omitempty"`
	// ReplicaStatuses are what each replica runs, as its config-reloader
	// reports it, by pod name.
	// +listType=map
	// +listMapKey=pod
	// +optional
	ReplicaStatuses []ReplicaStatus `json:"replicaStatuses,omitempty"`
	// LeftOut are the selected ServiceMonitors, PodMonitors, Probes,
	// ScrapeConfigs and PrometheusRules left out of the configuration, and
	// why: the first 50, by kind, namespace and name.
	// +listType=atomic
	// +optional
	LeftOut []LeftOutObject `json:"leftOut,omitempty"`
	// LeftOutCount is the number of objects left out, those LeftOut lists
	// and the rest.
	// +optional
	LeftOutCount int32 `json:"leftOutCount,omitempty"`
}

// LeftOutObject is a selected object left out of the configuration.
type LeftOutObject struct {
	// Kind is ServiceMonitor, PodMonitor, Probe, ScrapeConfig or
	// PrometheusRule.
	Kind string `json:"kind"`
	// Namespace of the object.
	Namespace string `json:"namespace"`
	// Name of the object.
	Name string `json:"name"`
	// Reason names the field at fault and the cause.
	Reason string `json:"reason"`
}

// The states of a replica, in ReplicaStatus.State.
const (
	// ReplicaApplied: Prometheus runs the content last written.
	ReplicaApplied = "Applied"
	// ReplicaPending: Prometheus runs older content.
	ReplicaPending = "Pending"
	// ReplicaRejected: Prometheus refused newer content.
	ReplicaRejected = "Rejected"
	// ReplicaUnknown: the pod has not reported what it runs (its
	// config-reloader has not yet, or cannot, or it is not ready).
	ReplicaUnknown = "Unknown"
)

// ReplicaStatus is what the Prometheus of one pod runs.
type ReplicaStatus struct {
	// Pod is the pod's name.
	Pod string `json:"pod"`
	// State is Applied (Prometheus runs ContentHash), Pending (older
	// content), Rejected (Prometheus refused newer content: see
	// LastRejection) or Unknown (nothing reported, or a report that
	// cannot be read; a pod not ready is Unknown too, whatever it
	// reported before).
	// +kubebuilder:validation:Enum=Applied;Pending;Rejected;Unknown
	State string `json:"state"`
	// AppliedHash is the content hash of what Prometheus last accepted,
	// comparable with ContentHash; empty while unknown (nothing reported
	// yet, or a report that cannot be read).
	// +optional
	AppliedHash string `json:"appliedHash,omitempty"`
	// AppliedTime is when Prometheus accepted it.
	// +optional
	AppliedTime *metav1.Time `json:"appliedTime,omitempty"`
	// LastRejection is Prometheus' refusal of newer content, while it
	// refuses it.
	// +optional
	LastRejection *Rejection `json:"lastRejection,omitempty"`
}

// Rejection is a reload Prometheus refused.
type Rejection struct {
	// Message is Prometheus' explanation.
	Message string `json:"message"`
	// Time is when it refused.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// Selection counts the objects a selector matched; a count of 0 is left
// out (the status is merge-patched: a field the stored object lacks must
// be one the controller's zero value lacks too).
type Selection struct {
	// Selected objects, rejected ones included.
	// +optional
	Selected int32 `json:"selected,omitempty"`
	// Rejected objects, left out of the configuration because they are invalid.
	// +optional
	Rejected int32 `json:"rejected,omitempty"`
}
