package prometheus

import (
	"cmp"
	"slices"
	"strings"

	"github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/promcfg"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/takeover"
)

// operatorBaseImage and operatorDefaultVersion (layout_workload.go) make
// prometheus-operator's default Prometheus image at the version the
// takeover hands back to (v0.93.1, pkg/operator/defaults.go).
const operatorBaseImage = "quay.io/prometheus/prometheus"

// unmanagedConfiguration is listed as unsupported for a Prometheus whose
// four monitor selectors are all unset: prometheus-operator (without
// --disable-unmanaged-prometheus-configuration) then leaves the
// configuration Secret to the user and never writes it
// (unmanagedPrometheusConfiguration); a takeover would overwrite it.
const unmanagedConfiguration = "serviceMonitorSelector, podMonitorSelector, probeSelector, scrapeConfigSelector: all unset (the configuration Secret is the user's)"

// convertSpec is the PrometheusServer spec of a Prometheus spec in (for
// fromPrometheus): every field operatorFields maps, with
// prometheus-operator's defaults where they differ from ours; and the
// refused fields in sets to a value they do not accept (by JSON path under
// spec, "[]" standing for any item of a list), "version" for a version
// prometheus-operator cannot parse, and unmanagedConfiguration, sorted.
func convertSpec(in monitoringv1.PrometheusSpec) (spec v1alpha1.PrometheusServerSpec, unsupported []string) {
	in = *in.DeepCopy()
	unsupported = takeover.RefusedFields(in, operatorFields())
	image, ok := operatorImage(&in)
	if !ok {
		unsupported = append(unsupported, "version")
	}
	if in.ServiceMonitorSelector == nil && in.PodMonitorSelector == nil && in.ProbeSelector == nil && in.ScrapeConfigSelector == nil {
		unsupported = append(unsupported, unmanagedConfiguration)
	}
	slices.Sort(unsupported)
	return operatorSpec(in, image), unsupported
}

// operatorSpec is the PrometheusServer spec of a Prometheus spec in, whose
// image is image: its mapped fields, with prometheus-operator's defaults.
func operatorSpec(in monitoringv1.PrometheusSpec, image string) v1alpha1.PrometheusServerSpec {
	retention := in.Retention
	if retention == "" && in.RetentionSize == "" {
		retention = promserver.OperatorDefaultRetention
	}
	replicas := ptr.Deref(in.Replicas, 1)
	if replicas < 0 {
		replicas = 1
	}
	return v1alpha1.PrometheusServerSpec{
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
		RuleSelector:                    in.RuleSelector,
		RuleNamespaceSelector:           in.RuleNamespaceSelector,
		LogLevel:                        in.LogLevel,
		LogFormat:                       in.LogFormat,
		ScrapeInterval:                  cmp.Or(in.ScrapeInterval, promcfg.DefaultInterval),
		ScrapeTimeout:                   in.ScrapeTimeout,
		EvaluationInterval:              cmp.Or(in.EvaluationInterval, promcfg.DefaultInterval),
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
		AdditionalScrapeConfigs:         in.AdditionalScrapeConfigs,
		RuleQueryOffset:                 in.RuleQueryOffset,
		Exemplars:                       in.Exemplars,
		TSDB:                            operatorTSDB(in.TSDB),
		AdditionalAlertManagerConfigs:   in.AdditionalAlertManagerConfigs,
		AdditionalAlertRelabelConfigs:   in.AdditionalAlertRelabelConfigs,
		PortName:                        in.PortName,
		EnableAdminAPI:                  in.EnableAdminAPI,
		Rules:                           in.Rules,
		Query:                           in.Query,
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
		EnforcedNamespaceLabel:          in.EnforcedNamespaceLabel,
		ExcludedFromEnforcement:         operatorExcluded(in),
		AdditionalArgs:                  in.AdditionalArgs,
		WALCompression:                  in.WALCompression,
		ScrapeClasses:                   in.ScrapeClasses,
		Retention:                       retention,
		RetentionSize:                   in.RetentionSize,
		Alerting:                        operatorAlerting(in.Alerting),
		Reloader:                        v1alpha1.ReloaderSpec{ReloadMethod: operatorReloadMethod(in.ReloadStrategy)},
	}
}

// operatorTSDB carries the mapped fields of spec.tsdb.
func operatorTSDB(t *monitoringv1.TSDBSpec) *v1alpha1.TSDBSpec {
	if t == nil || t.OutOfOrderTimeWindow == nil {
		return nil
	}
	return &v1alpha1.TSDBSpec{OutOfOrderTimeWindow: t.OutOfOrderTimeWindow}
}

// operatorReloadMethod is the reloader's reloadMethod of a
// reloadStrategy: signal for ProcessSignal, else http.
func operatorReloadMethod(strategy *monitoringv1.ReloadStrategyType) string {
	if ptr.Deref(strategy, monitoringv1.HTTPReloadStrategyType) == monitoringv1.ProcessSignalReloadStrategyType {
		return "signal"
	}
	return "http"
}

// operatorExcluded is spec.excludedFromEnforcement with the deprecated
// prometheusRulesExcludedFromEnforce appended, as prometheus-operator
// does (pkg/prometheus/server/rules.go).
func operatorExcluded(in monitoringv1.PrometheusSpec) []monitoringv1.ObjectReference {
	excluded := in.ExcludedFromEnforcement
	for _, r := range in.PrometheusRulesExcludedFromEnforce {
		excluded = append(excluded, monitoringv1.ObjectReference{
			Group: monitoring.GroupName, Resource: monitoringv1.PrometheusRuleName,
			Namespace: r.RuleNamespace, Name: r.RuleName,
		})
	}
	return excluded
}

// operatorImage is the Prometheus image prometheus-operator runs for spec
// (its BuildImagePath): spec.image; else baseImage as is when it carries
// a tag or digest; else baseImage with sha, tag, or the version (default
// operatorDefaultVersion), in that order of preference. ok is false for a
// version that is not one, which prometheus-operator fails on.
func operatorImage(spec *monitoringv1.PrometheusSpec) (image string, ok bool) {
	image, _, ok = takeover.Image(takeover.ImageSpec{
		Image: spec.Image, BaseImage: spec.BaseImage, DefaultBaseImage: operatorBaseImage,
		Version: spec.Version, DefaultVersion: promserver.OperatorDefaultVersion, Tag: spec.Tag, SHA: spec.SHA,
	})
	return image, ok
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
		})
	}
	return out
}

// operatorAlerting carries the mapped fields of spec.alerting.
func operatorAlerting(a *monitoringv1.AlertingSpec) *v1alpha1.AlertingSpec {
	if a == nil {
		return nil
	}
	out := &v1alpha1.AlertingSpec{Alertmanagers: []v1alpha1.AlertmanagerEndpoint{}}
	for _, am := range a.Alertmanagers {
		out.Alertmanagers = append(out.Alertmanagers, v1alpha1.AlertmanagerEndpoint{
			Namespace:  ptr.Deref(am.Namespace, ""),
			Name:       am.Name,
			Port:       am.Port,
			Scheme:     strings.ToLower(string(ptr.Deref(am.Scheme, ""))),
			PathPrefix: ptr.Deref(am.PathPrefix, ""),
			APIVersion: string(ptr.Deref(am.APIVersion, "")),
			Timeout:    am.Timeout, EnableHttp2: am.EnableHttp2,
			TLSConfig: am.TLSConfig, BasicAuth: am.BasicAuth, Authorization: am.Authorization,
			ProxyConfig:    am.ProxyConfig,
			RelabelConfigs: am.RelabelConfigs, AlertRelabelConfigs: am.AlertRelabelConfigs,
		})
	}
	return out
}

// FromPrometheus converts a Prometheus object into the PrometheusServer it
// is rendered as, in prometheus-operator's layout, with prometheus-operator's
// defaults where they differ from ours (convertSpec). unsupported lists
// the set fields the conversion cannot carry (by JSON path under spec,
// sorted): a Prometheus with any is not taken over.
func FromPrometheus(p *monitoringv1.Prometheus) (_ promserver.Target, unsupported []string) {
	server := &v1alpha1.PrometheusServer{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: p.Namespace, UID: p.UID, Generation: p.Generation,
			Labels: p.Labels, Annotations: map[string]string{},
		},
	}
	for k, v := range p.Annotations {
		server.Annotations[k] = v
	}
	server.Spec, unsupported = convertSpec(p.Spec)
	return promserver.Target{PrometheusServer: server, Layout: promserver.OperatorsLayout}, unsupported
}
