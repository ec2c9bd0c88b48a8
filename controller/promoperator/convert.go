package promoperator

import (
	"cmp"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/promcfg"
)

// BaseImage and promserver.OperatorDefaultVersion make
// prometheus-operator's default Prometheus image at the version the
// takeover hands back to (v0.93.1, pkg/operator/defaults.go).
const BaseImage = "quay.io/prometheus/prometheus"

// DefaultBase is the base image of an image composed at the default
// version, which TakenOver.DefaultBase holds: base (or BaseImage) when
// image, version, tag and sha are all unset and base names no tag or
// digest; else "".
func DefaultBase(image *string, base, version, tag, sha string) string {
	base = cmp.Or(base, BaseImage)
	name := base[strings.LastIndexByte(base, '/')+1:]
	if ptr.Deref(image, "") != "" || version != "" || tag != "" || sha != "" || strings.ContainsAny(name, ":@") {
		return ""
	}
	return base
}

// CommonSpec is the PrometheusServer spec of the CommonPrometheusFields
// in, whose Prometheus image is image: every field CommonFields maps,
// with prometheus-operator's defaults where they differ from ours. A
// kind sets its own fields on top.
func CommonSpec(in monitoringv1.CommonPrometheusFields, image string) v1alpha1.PrometheusServerSpec {
	replicas := ptr.Deref(in.Replicas, 1)
	if replicas < 0 {
		replicas = 1
	}
	spec := v1alpha1.PrometheusServerSpec{
		Image:                           image,
		Version:                         in.Version,
		ImagePullPolicy:                 in.ImagePullPolicy,
		ImagePullSecrets:                in.ImagePullSecrets,
		Replicas:                        &replicas,
		Shards:                          ptr.To(max(ptr.Deref(in.Shards, 1), 1)),
		Paused:                          in.Paused,
		PodMetadata:                     in.PodMetadata,
		ServiceMonitorSelector:          in.ServiceMonitorSelector,
		ServiceMonitorNamespaceSelector: in.ServiceMonitorNamespaceSelector,
		PodMonitorSelector:              in.PodMonitorSelector,
		PodMonitorNamespaceSelector:     in.PodMonitorNamespaceSelector,
		ProbeSelector:                   in.ProbeSelector,
		ProbeNamespaceSelector:          in.ProbeNamespaceSelector,
		ScrapeConfigSelector:            in.ScrapeConfigSelector,
		ScrapeConfigNamespaceSelector:   in.ScrapeConfigNamespaceSelector,
		LogLevel:                        in.LogLevel,
		LogFormat:                       in.LogFormat,
		ScrapeInterval:                  cmp.Or(in.ScrapeInterval, promcfg.DefaultInterval),
		ScrapeTimeout:                   in.ScrapeTimeout,
		ExternalLabels:                  in.ExternalLabels,
		PrometheusExternalLabelName:     in.PrometheusExternalLabelName,
		ReplicaExternalLabelName:        in.ReplicaExternalLabelName,
		EnableFeatures:                  in.EnableFeatures,
		ExternalURL:                     in.ExternalURL,
		RoutePrefix:                     in.RoutePrefix,
		Storage:                         convertStorage(in.Storage),
		Web:                             in.Web,
		Resources:                       in.Resources,
		NodeSelector:                    in.NodeSelector,
		ServiceAccountName:              in.ServiceAccountName,
		Affinity:                        in.Affinity,
		Tolerations:                     in.Tolerations,
		TopologySpreadConstraints:       in.TopologySpreadConstraints,
		PriorityClassName:               in.PriorityClassName,
		RemoteWrite:                     operatorRemoteWrite(in.RemoteWrite),
		SecurityContext:                 in.SecurityContext,
		TSDB:                            operatorTSDB(in.TSDB),
		PortName:                        in.PortName,
		SchedulerName:                   in.SchedulerName,
		DNSPolicy:                       in.DNSPolicy,
		DNSConfig:                       in.DNSConfig,
		HostAliases:                     in.HostAliases,
		EnableServiceLinks:              in.EnableServiceLinks,
		HostUsers:                       in.HostUsers,
		TerminationGracePeriodSeconds:   in.TerminationGracePeriodSeconds,
		Secrets:                         in.Secrets,
		ConfigMaps:                      in.ConfigMaps,
		Volumes:                         in.Volumes,
		VolumeMounts:                    in.VolumeMounts,
		AdditionalArgs:                  in.AdditionalArgs,
		WALCompression:                  in.WALCompression,
		TakenOver: v1alpha1.TakenOver{
			Containers: in.Containers, InitContainers: in.InitContainers,
			PodManagementPolicy: in.PodManagementPolicy, UpdateStrategy: in.UpdateStrategy, MinReadySeconds: in.MinReadySeconds,
			PersistentVolumeClaimRetentionPolicy: in.PersistentVolumeClaimRetentionPolicy,
			HostNetwork:                          in.HostNetwork, MaximumStartupDurationSeconds: in.MaximumStartupDurationSeconds,
			TracingConfig: in.TracingConfig, Runtime: in.Runtime, OTLP: in.OTLP,
			ScrapeFailureLogFile: in.ScrapeFailureLogFile, PodTargetLabels: in.PodTargetLabels, APIServerConfig: in.APIServerConfig,
			EnableOTLPReceiver: in.EnableOTLPReceiver, ServiceName: in.ServiceName,
			NoServiceAccountToken: !ptr.Deref(in.AutomountServiceAccountToken, true),
		},
		Reloader: v1alpha1.ReloaderSpec{ReloadMethod: operatorReloadMethod(in.ReloadStrategy)},
	}
	if spec.NoServiceAccountToken {
		// No token to read the API server with: the reloaders read the
		// kubelet's volumes, as prometheus-operator's do.
		spec.Reloader.Source = v1alpha1.SourceVolume
	}
	if in.Storage != nil {
		spec.Ephemeral, spec.DisableMountSubPath = in.Storage.Ephemeral, in.Storage.DisableMountSubPath
	}
	commonGeneration(in, &spec)
	return spec
}

// commonGeneration sets in spec the fields of in that change the jobs
// prometheus-operator's generator makes of the monitors, and the
// additional ones; and its ServerFlags.
func commonGeneration(in monitoringv1.CommonPrometheusFields, spec *v1alpha1.PrometheusServerSpec) {
	spec.ServerFlags = v1alpha1.ServerFlags{
		EnableRemoteWriteReceiver: in.EnableRemoteWriteReceiver, RemoteWriteReceiverMessageVersions: in.RemoteWriteReceiverMessageVersions,
		ListenLocal: in.ListenLocal,
	}
	spec.EnforcedNamespaceLabel = in.EnforcedNamespaceLabel
	spec.ExcludedFromEnforcement = in.ExcludedFromEnforcement
	spec.ScrapeClasses = in.ScrapeClasses
	spec.ServiceDiscoveryRole = in.ServiceDiscoveryRole
	spec.AdditionalScrapeConfigs = in.AdditionalScrapeConfigs
	spec.ScrapeSettings = v1alpha1.ScrapeSettings{
		ScrapeProtocols: in.ScrapeProtocols,
		SampleLimit:     in.SampleLimit, TargetLimit: in.TargetLimit, LabelLimit: in.LabelLimit,
		LabelNameLengthLimit: in.LabelNameLengthLimit, LabelValueLengthLimit: in.LabelValueLengthLimit,
		KeepDroppedTargets: in.KeepDroppedTargets, BodySizeLimit: in.BodySizeLimit,
		EnforcedSampleLimit: in.EnforcedSampleLimit, EnforcedTargetLimit: in.EnforcedTargetLimit, EnforcedLabelLimit: in.EnforcedLabelLimit,
		EnforcedLabelNameLengthLimit: in.EnforcedLabelNameLengthLimit, EnforcedLabelValueLengthLimit: in.EnforcedLabelValueLengthLimit,
		EnforcedKeepDroppedTargets: in.EnforcedKeepDroppedTargets, EnforcedBodySizeLimit: in.EnforcedBodySizeLimit,
		OverrideHonorLabels: in.OverrideHonorLabels, OverrideHonorTimestamps: in.OverrideHonorTimestamps,
		IgnoreNamespaceSelectors: in.IgnoreNamespaceSelectors, ArbitraryFSAccessThroughSMs: in.ArbitraryFSAccessThroughSMs,
		NameValidationScheme: in.NameValidationScheme, NameEscapingScheme: in.NameEscapingScheme,
		ConvertClassicHistogramsToNHCB: in.ConvertClassicHistogramsToNHCB,
		ScrapeClassicHistograms:        in.ScrapeClassicHistograms, ScrapeNativeHistograms: in.ScrapeNativeHistograms,
	}
}

// operatorTSDB carries the mapped fields of spec.tsdb.
func operatorTSDB(t *monitoringv1.TSDBSpec) *v1alpha1.TSDBSpec {
	if t == nil || t.OutOfOrderTimeWindow == nil && t.StaleSeriesCompactionThreshold == nil && t.ChunkEncoding == nil {
		return nil
	}
	return &v1alpha1.TSDBSpec{OutOfOrderTimeWindow: t.OutOfOrderTimeWindow, StaleSeriesCompactionThreshold: t.StaleSeriesCompactionThreshold, ChunkEncoding: t.ChunkEncoding}
}

// operatorReloadMethod is the reloader's reloadMethod of a
// reloadStrategy: signal for ProcessSignal, else http.
func operatorReloadMethod(strategy *monitoringv1.ReloadStrategyType) string {
	if ptr.Deref(strategy, monitoringv1.HTTPReloadStrategyType) == monitoringv1.ProcessSignalReloadStrategyType {
		return "signal"
	}
	return "http"
}

// convertStorage is spec.storage: an emptyDir, or, with neither emptyDir
// nor ephemeral (refused), the claim template's metadata and spec.
func convertStorage(st *monitoringv1.StorageSpec) *v1alpha1.StorageSpec {
	switch {
	case st == nil || st.Ephemeral != nil:
		return nil
	case st.EmptyDir != nil:
		return &v1alpha1.StorageSpec{EmptyDir: st.EmptyDir}
	}
	return &v1alpha1.StorageSpec{VolumeClaimTemplate: &monitoringv1.EmbeddedPersistentVolumeClaim{
		EmbeddedObjectMetadata: st.VolumeClaimTemplate.EmbeddedObjectMetadata,
		Spec:                   st.VolumeClaimTemplate.Spec,
	}}
}

// operatorRemoteWrite carries the mapped fields of spec.remoteWrite.
func operatorRemoteWrite(rws []monitoringv1.RemoteWriteSpec) []v1alpha1.RemoteWriteSpec {
	var out []v1alpha1.RemoteWriteSpec
	for _, rw := range rws {
		out = append(out, v1alpha1.RemoteWriteSpec{
			URL: string(rw.URL), Name: ptr.Deref(rw.Name, ""),
			BasicAuth: rw.BasicAuth, Authorization: rw.Authorization,
			RemoteTimeout: rw.RemoteTimeout, Headers: rw.Headers,
			SendExemplars: rw.SendExemplars, SendNativeHistograms: rw.SendNativeHistograms,
			WriteRelabelConfigs: rw.WriteRelabelConfigs,
			QueueConfig:         rw.QueueConfig, MetadataConfig: rw.MetadataConfig,
			OAuth2: rw.OAuth2, TLSConfig: rw.TLSConfig, ProxyConfig: rw.ProxyConfig,
			FollowRedirects: rw.FollowRedirects, EnableHttp2: rw.EnableHttp2,
			RemoteWriteTakenOver: v1alpha1.RemoteWriteTakenOver{
				Sigv4: rw.Sigv4, AzureAD: rw.AzureAD,
				BearerToken: rw.BearerToken, BearerTokenFile: rw.BearerTokenFile,
				MessageVersion: rw.MessageVersion, RoundRobinDNS: rw.RoundRobinDNS,
			},
		})
	}
	return out
}
