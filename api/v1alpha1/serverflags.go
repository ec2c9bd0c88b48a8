package v1alpha1

import monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

// ServerFlags are the settings of a PrometheusServer that are flags of
// the Prometheus container, with prometheus-operator's field names and
// meaning (each flag set for the Prometheus versions that have it).
// PrometheusServerSpec has them inline.
type ServerFlags struct {
	// EnableRemoteWriteReceiver lets Prometheus accept remote writes on
	// /api/v1/write (--web.enable-remote-write-receiver, Prometheus 2.33
	// and later).
	// +optional
	EnableRemoteWriteReceiver bool `json:"enableRemoteWriteReceiver,omitempty"`
	// RemoteWriteReceiverMessageVersions are the remote write messages the
	// receiver accepts, V1.0 or V2.0
	// (--web.remote-write-receiver.accepted-protobuf-messages, Prometheus
	// 2.54 and later); with enableRemoteWriteReceiver only.
	// +listType=set
	// +optional
	RemoteWriteReceiverMessageVersions []monitoringv1.RemoteWriteMessageVersion `json:"remoteWriteReceiverMessageVersions,omitempty"`
	// DisableCompaction turns off the compaction of the TSDB's blocks
	// (--storage.tsdb.min-block-duration and max-block-duration both 2h),
	// and, with tsdb.outOfOrderTimeWindow, the overlapping compaction of
	// out-of-order blocks (--no-storage.tsdb.allow-overlapping-compaction,
	// Prometheus 2.55 and later).
	// +optional
	DisableCompaction bool `json:"disableCompaction,omitempty"`
	// ListenLocal, of a Prometheus taken over (its listenLocal), runs
	// Prometheus on 127.0.0.1 only, as prometheus-operator does: no
	// container port, the probes in the container, the config-reloader on
	// localhost. In prometheus-operator's layout only: not a field of the
	// PrometheusServer kind.
	ListenLocal bool `json:"-"`
}
