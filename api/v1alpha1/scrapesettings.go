package v1alpha1

import monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

// ScrapeSettings are the settings of a PrometheusServer that change the
// global section of its configuration and the scrape jobs made of its
// monitors, with prometheus-operator's field names and meaning (each key
// written for the Prometheus versions that have it, as its generator).
// PrometheusServerSpec has them inline.
type ScrapeSettings struct {
	// ScrapeProtocols is global.scrape_protocols (Prometheus 2.49 and
	// later; PrometheusText1.0.0 from Prometheus 3): the protocols, in
	// order of preference, of the jobs that set none.
	// +listType=set
	// +optional
	ScrapeProtocols []monitoringv1.ScrapeProtocol `json:"scrapeProtocols,omitempty"`
	// SampleLimit is global.sample_limit (Prometheus 2.45 and later): the
	// default of the jobs that set none.
	// +optional
	SampleLimit *int64 `json:"sampleLimit,omitempty"`
	// TargetLimit is global.target_limit (Prometheus 2.45 and later).
	// +optional
	TargetLimit *int64 `json:"targetLimit,omitempty"`
	// LabelLimit is global.label_limit (Prometheus 2.45 and later).
	// +optional
	LabelLimit *int64 `json:"labelLimit,omitempty"`
	// LabelNameLengthLimit is global.label_name_length_limit (Prometheus
	// 2.45 and later).
	// +optional
	LabelNameLengthLimit *int64 `json:"labelNameLengthLimit,omitempty"`
	// LabelValueLengthLimit is global.label_value_length_limit
	// (Prometheus 2.45 and later).
	// +optional
	LabelValueLengthLimit *int64 `json:"labelValueLengthLimit,omitempty"`
	// KeepDroppedTargets is global.keep_dropped_targets (Prometheus 2.47
	// and later): how many targets dropped by relabeling each job keeps
	// for the targets page; 0 or unset, Prometheus' default.
	// +optional
	KeepDroppedTargets *int64 `json:"keepDroppedTargets,omitempty"`
	// BodySizeLimit is global.body_size_limit (Prometheus 2.45 and
	// later), e.g. 10MB.
	// +optional
	BodySizeLimit *monitoringv1.ByteSize `json:"bodySizeLimit,omitempty"`
	// EnforcedSampleLimit caps the sample_limit of every job of the
	// monitors, Probes and ScrapeConfigs: a job with a higher limit, or
	// none, gets it (none from Prometheus 2.45: the global one applies,
	// itself capped).
	// +optional
	EnforcedSampleLimit *int64 `json:"enforcedSampleLimit,omitempty"`
	// EnforcedTargetLimit caps target_limit, as EnforcedSampleLimit.
	// +optional
	EnforcedTargetLimit *int64 `json:"enforcedTargetLimit,omitempty"`
	// EnforcedLabelLimit caps label_limit, as EnforcedSampleLimit.
	// +optional
	EnforcedLabelLimit *int64 `json:"enforcedLabelLimit,omitempty"`
	// EnforcedLabelNameLengthLimit caps label_name_length_limit, as
	// EnforcedSampleLimit.
	// +optional
	EnforcedLabelNameLengthLimit *int64 `json:"enforcedLabelNameLengthLimit,omitempty"`
	// EnforcedLabelValueLengthLimit caps label_value_length_limit, as
	// EnforcedSampleLimit.
	// +optional
	EnforcedLabelValueLengthLimit *int64 `json:"enforcedLabelValueLengthLimit,omitempty"`
	// EnforcedKeepDroppedTargets caps keep_dropped_targets, as
	// EnforcedSampleLimit.
	// +optional
	EnforcedKeepDroppedTargets *int64 `json:"enforcedKeepDroppedTargets,omitempty"`
	// EnforcedBodySizeLimit caps the body_size_limit of every job (from
	// Prometheus 2.28): a job with a larger limit, or none, gets it; the
	// global body_size_limit when bodySizeLimit is unset.
	// +optional
	EnforcedBodySizeLimit monitoringv1.ByteSize `json:"enforcedBodySizeLimit,omitempty"`
	// OverrideHonorLabels sets honor_labels to false on every job of the
	// ServiceMonitors, PodMonitors and ScrapeConfigs, whatever they say.
	// +optional
	OverrideHonorLabels bool `json:"overrideHonorLabels,omitempty"`
	// OverrideHonorTimestamps sets honor_timestamps to false on every job
	// of the monitors, Probes and ScrapeConfigs (those of ScrapeConfigs
	// that set honorTimestamps).
	// +optional
	OverrideHonorTimestamps bool `json:"overrideHonorTimestamps,omitempty"`
	// IgnoreNamespaceSelectors makes the ServiceMonitors, PodMonitors and
	// Probes discover targets in their own namespace only, whatever their
	// namespaceSelector says.
	// +optional
	IgnoreNamespaceSelectors bool `json:"ignoreNamespaceSelectors,omitempty"`
	// ArbitraryFSAccessThroughSMs with deny: true leaves out the
	// ServiceMonitors whose endpoints read the pod's files (bearerTokenFile,
	// tlsConfig caFile, certFile, keyFile), as prometheus-operator does.
	// +optional
	ArbitraryFSAccessThroughSMs monitoringv1.ArbitraryFSAccessThroughSMsConfig `json:"arbitraryFSAccessThroughSMs,omitempty"`
	// NameValidationScheme is global.metric_name_validation_scheme
	// (Prometheus 3 and later): UTF8 or Legacy.
	// +optional
	NameValidationScheme *monitoringv1.NameValidationSchemeOptions `json:"nameValidationScheme,omitempty"`
	// NameEscapingScheme is global.metric_name_escaping_scheme (Prometheus
	// 3.4 and later): AllowUTF8, Underscores, Dots or Values.
	// +optional
	NameEscapingScheme *monitoringv1.NameEscapingSchemeOptions `json:"nameEscapingScheme,omitempty"`
	// ConvertClassicHistogramsToNHCB is
	// global.convert_classic_histograms_to_nhcb (Prometheus 3.4 and later).
	// +optional
	ConvertClassicHistogramsToNHCB *bool `json:"convertClassicHistogramsToNHCB,omitempty"`
	// ScrapeClassicHistograms is global.always_scrape_classic_histograms
	// (Prometheus 3.5 and later).
	// +optional
	ScrapeClassicHistograms *bool `json:"scrapeClassicHistograms,omitempty"`
	// ScrapeNativeHistograms is global.scrape_native_histograms
	// (Prometheus 3.8 and later).
	// +optional
	ScrapeNativeHistograms *bool `json:"scrapeNativeHistograms,omitempty"`
}
