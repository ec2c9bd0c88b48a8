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
	"github.com/podreload/podreload/controller/promoperator"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/takeover"
)

// convertSpec is the PrometheusServer spec of a Prometheus spec in (for
// fromPrometheus): every field operatorFields maps, with
// prometheus-operator's defaults where they differ from ours; and the
// refused fields in sets to a value they do not accept (by JSON path under
// spec, "[]" standing for any item of a list), the version when
// prometheus-operator cannot parse or render it (promoperator.RefusedVersion),
// sorted. With its four monitor selectors unset, the configuration Secret
// is the user's (promserver.UserConfigured): read, never written.
func convertSpec(in monitoringv1.PrometheusSpec) (spec v1alpha1.PrometheusServerSpec, unsupported []string) {
	in = *in.DeepCopy()
	unsupported = takeover.RefusedFields(in, operatorFields())
	image, version, ok := operatorImage(&in)
	if r := promoperator.RefusedVersion(version, ok); r != "" {
		unsupported = append(unsupported, r)
	}
	slices.Sort(unsupported)
	return operatorSpec(in, image), unsupported
}

// operatorSpec is the PrometheusServer spec of a Prometheus spec in, whose
// image is image: its mapped fields, with prometheus-operator's defaults:
// the common ones (promoperator.CommonSpec), then a Prometheus's own.
func operatorSpec(in monitoringv1.PrometheusSpec, image string) v1alpha1.PrometheusServerSpec {
	spec := promoperator.CommonSpec(in.CommonPrometheusFields, image)
	spec.DefaultBase = promoperator.DefaultBase(in.Image, in.BaseImage, in.Version, in.Tag, in.SHA)
	spec.Retention, spec.RetentionSize, spec.RetentionPercentage = in.Retention, in.RetentionSize, in.RetentionPercentage
	if spec.Retention == "" && spec.RetentionSize == "" && !promserver.RetentionPercentageSet(spec) {
		spec.Retention = promserver.OperatorDefaultRetention
	}
	spec.EvaluationInterval = cmp.Or(in.EvaluationInterval, promcfg.DefaultInterval)
	spec.RuleSelector, spec.RuleNamespaceSelector, spec.RuleQueryOffset = in.RuleSelector, in.RuleNamespaceSelector, in.RuleQueryOffset
	spec.Exemplars, spec.Rules, spec.Query, spec.EnableAdminAPI = in.Exemplars, in.Rules, in.Query, in.EnableAdminAPI
	spec.Alerting = operatorAlerting(in.Alerting)
	spec.AdditionalAlertManagerConfigs, spec.AdditionalAlertRelabelConfigs = in.AdditionalAlertManagerConfigs, in.AdditionalAlertRelabelConfigs
	spec.DisableCompaction = in.DisableCompaction
	spec.AllowOverlappingBlocks = in.AllowOverlappingBlocks
	spec.RemoteRead, spec.QueryLogFile = in.RemoteRead, in.QueryLogFile
	spec.Thanos = in.Thanos
	spec.ExcludedFromEnforcement = operatorExcluded(in)
	return spec
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
// operatorDefaultVersion), in that order of preference, and the version
// (without its v). ok is false for a version that is not one, which
// prometheus-operator fails on.
func operatorImage(spec *monitoringv1.PrometheusSpec) (image, version string, ok bool) {
	return takeover.Image(takeover.ImageSpec{
		Image: spec.Image, BaseImage: spec.BaseImage, DefaultBaseImage: promoperator.BaseImage,
		Version: spec.Version, DefaultVersion: promserver.OperatorDefaultVersion, Tag: spec.Tag, SHA: spec.SHA,
	})
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
			BearerTokenFile: am.BearerTokenFile,
			Sigv4:           am.Sigv4,
			ProxyConfig:     am.ProxyConfig,
			RelabelConfigs:  am.RelabelConfigs, AlertRelabelConfigs: am.AlertRelabelConfigs,
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
	s := p.Spec
	user := s.ServiceMonitorSelector == nil && s.PodMonitorSelector == nil && s.ProbeSelector == nil && s.ScrapeConfigSelector == nil
	return promserver.Target{PrometheusServer: server, Layout: promserver.OperatorsLayout, UserConfig: user, ShardRetention: s.ShardRetentionPolicy}, unsupported
}
