package promcfg

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/alecthomas/units"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	yaml "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/promcfg/relabeling"
	"github.com/podreload/podreload/controller/promcfg/remote"
	"github.com/podreload/podreload/controller/promyaml"
)

const (
	// DefaultInterval is the scrape and evaluation interval of a
	// PrometheusServer that sets none (the CRD default).
	DefaultInterval = "30s"
	// replicaLabel is the external label that tells replicas apart; its
	// value is left for the config-reloader sidecar to expand.
	replicaLabel = "prometheus_replica"
	// serverLabel is the external label naming the PrometheusServer.
	serverLabel = "prometheus"
	// podNameRef is expanded by the config-reloader sidecar.
	podNameRef = "$(POD_NAME)"
)

// serverConfig holds the sections that come from the PrometheusServer:
// global goes first, then head (runtime), rest after scrape_configs.
type serverConfig struct {
	global yaml.MapItem
	head   yaml.MapSlice
	rest   yaml.MapSlice
}

func (r *renderer) renderServer() (serverConfig, error) {
	spec := &r.srv.Spec
	scrape := string(spec.ScrapeInterval)
	if scrape == "" {
		scrape = DefaultInterval
	}
	d, err := remote.PositiveDuration(scrape)
	if err != nil {
		return serverConfig{}, fmt.Errorf("spec.scrapeInterval: %w", err)
	}
	r.interval, r.intervalText = d, scrape
	if sdr := spec.ServiceDiscoveryRole; sdr != nil && *sdr != monitoringv1.EndpointsRole && *sdr != monitoringv1.EndpointSliceRole {
		return serverConfig{}, fmt.Errorf("spec.serviceDiscoveryRole: %q is not Endpoints or EndpointSlice", *sdr)
	}
	if slices.Contains(spec.PodTargetLabels, "") {
		return serverConfig{}, fmt.Errorf("spec.podTargetLabels: empty label name")
	}
	eval := string(spec.EvaluationInterval)
	if eval == "" {
		eval = DefaultInterval
	}
	if _, err := remote.PositiveDuration(eval); err != nil {
		return serverConfig{}, fmt.Errorf("spec.evaluationInterval: %w", err)
	}

	replica := ptr.Deref(spec.ReplicaExternalLabelName, replicaLabel)
	globals := yaml.MapSlice{
		{Key: "evaluation_interval", Value: eval},
		{Key: "scrape_interval", Value: scrape},
	}
	if r.agent {
		globals = globals[1:] // An agent evaluates no rules.
	}
	if timeout := string(spec.ScrapeTimeout); timeout != "" {
		t, err := remote.PositiveDuration(timeout)
		if err != nil {
			return serverConfig{}, fmt.Errorf("spec.scrapeTimeout: %w", err)
		}
		if t > d {
			return serverConfig{}, fmt.Errorf("spec.scrapeTimeout: %q is greater than the scrape interval %q", timeout, scrape)
		}
		globals = append(globals, yaml.MapItem{Key: "scrape_timeout", Value: timeout})
	}
	globals = append(globals, yaml.MapItem{Key: "external_labels", Value: r.externalLabels(replica)})
	if o := spec.RuleQueryOffset; o != nil && !r.agent {
		if _, err := model.ParseDuration(string(*o)); err != nil {
			return serverConfig{}, fmt.Errorf("spec.ruleQueryOffset: %w", err)
		}
		globals = append(globals, yaml.MapItem{Key: "rule_query_offset", Value: string(*o)})
	}
	settings, err := r.globalScrapeSettings()
	if err != nil {
		return serverConfig{}, err
	}
	global := yaml.MapItem{Key: "global", Value: slices.Concat(globals, settings, r.logFiles())}
	if r.apiServer, err = r.apiServerSD(); err != nil {
		return serverConfig{}, err
	}

	rest, err := r.storageSettings()
	if err != nil {
		return serverConfig{}, err
	}
	if !r.agent {
		alerting, err := r.alerting(replica)
		if err != nil {
			return serverConfig{}, err
		}
		if len(alerting) > 0 {
			rest = append(rest, yaml.MapItem{Key: "alerting", Value: alerting})
		}
	}
	more, err := r.laterSections()
	if err != nil {
		return serverConfig{}, err
	}
	return serverConfig{global: global, head: r.runtimeSection(), rest: append(rest, more...)}, nil
}

// externalLabels are the server's external labels: the server's and the
// replica's (named replica, "" for none), which win over the user's, as
// in prometheus-operator; a name set to "" drops the label.
func (r *renderer) externalLabels(replica string) yaml.MapSlice {
	spec := &r.srv.Spec
	labels := map[string]string{}
	if name := ptr.Deref(spec.PrometheusExternalLabelName, serverLabel); name != "" {
		labels[name] = r.srv.Namespace + "/" + r.srv.Name
	}
	if replica != "" {
		labels[replica] = podNameRef
	}
	for k, v := range spec.ExternalLabels {
		if _, ok := labels[k]; !ok {
			labels[k] = v
		}
	}
	return promyaml.SortedMap(labels)
}

// globalScrapeSettings renders the global settings of spec's
// ScrapeSettings that the server's Prometheus version has, as
// prometheus-operator's generator (buildGlobalConfig): the protocols, the
// limits (those above 0), the name validation and escaping schemes, the
// histogram settings.
func (r *renderer) globalScrapeSettings() (yaml.MapSlice, error) {
	spec := &r.srv.Spec
	var out yaml.MapSlice
	if len(spec.ScrapeProtocols) > 0 && r.version.AtLeast(2, 49) {
		ps := make([]string, 0, len(spec.ScrapeProtocols))
		for i, p := range spec.ScrapeProtocols {
			if !knownScrapeProtocol(p) {
				return nil, fmt.Errorf("spec.scrapeProtocols[%d]: unknown protocol %q", i, p)
			}
			// Prometheus 2 has no PrometheusText1.0.0.
			if p != monitoringv1.PrometheusText1_0_0 || r.version.AtLeast(3, 0) {
				ps = append(ps, string(p))
			}
		}
		out = append(out, yaml.MapItem{Key: "scrape_protocols", Value: ps})
	}
	for field, b := range map[string]string{"bodySizeLimit": string(ptr.Deref(spec.BodySizeLimit, "")), "enforcedBodySizeLimit": string(spec.EnforcedBodySizeLimit)} {
		if _, err := units.ParseBase2Bytes(b); b != "" && err != nil {
			return nil, fmt.Errorf("spec.%s: %q is not a size such as 512MB", field, b)
		}
	}
	if b := cmp.Or(string(ptr.Deref(spec.BodySizeLimit, "")), string(spec.EnforcedBodySizeLimit)); b != "" && r.version.AtLeast(2, 45) {
		out = append(out, yaml.MapItem{Key: "body_size_limit", Value: b})
	}
	for _, l := range []struct {
		key         string
		v, enforced *int64
		major       int
		minor       int
	}{
		{"sample_limit", spec.SampleLimit, spec.EnforcedSampleLimit, 2, 45},
		{"target_limit", spec.TargetLimit, spec.EnforcedTargetLimit, 2, 45},
		{"label_limit", spec.LabelLimit, spec.EnforcedLabelLimit, 2, 45},
		{"label_name_length_limit", spec.LabelNameLengthLimit, spec.EnforcedLabelNameLengthLimit, 2, 45},
		{"label_value_length_limit", spec.LabelValueLengthLimit, spec.EnforcedLabelValueLengthLimit, 2, 45},
		{"keep_dropped_targets", spec.KeepDroppedTargets, spec.EnforcedKeepDroppedTargets, 2, 47},
	} {
		// The global limit, capped by the enforced one, which stands for
		// it when it is unset.
		v, enforced := ptr.Deref(l.v, 0), ptr.Deref(l.enforced, 0)
		if enforced > 0 && (v <= 0 || v > enforced) {
			v = enforced
		}
		if v > 0 && r.version.AtLeast(l.major, l.minor) {
			out = append(out, yaml.MapItem{Key: l.key, Value: v})
		}
	}
	if s := spec.NameValidationScheme; s != nil && r.version.AtLeast(3, 0) {
		switch *s {
		case monitoringv1.UTF8NameValidationScheme, monitoringv1.LegacyNameValidationScheme:
		default:
			return nil, fmt.Errorf("spec.nameValidationScheme: %q is not UTF8 or Legacy", *s)
		}
		out = append(out, yaml.MapItem{Key: "metric_name_validation_scheme", Value: strings.ToLower(string(*s))})
	}
	if s := spec.NameEscapingScheme; s != nil && r.version.AtLeast(3, 4) {
		v, ok := map[monitoringv1.NameEscapingSchemeOptions]string{
			monitoringv1.AllowUTF8NameEscapingScheme:   "allow-utf-8",
			monitoringv1.UnderscoresNameEscapingScheme: "underscores",
			monitoringv1.DotsNameEscapingScheme:        "dots",
			monitoringv1.ValuesNameEscapingScheme:      "values",
		}[*s]
		if !ok {
			return nil, fmt.Errorf("spec.nameEscapingScheme: %q is not AllowUTF8, Underscores, Dots or Values", *s)
		}
		out = append(out, yaml.MapItem{Key: "metric_name_escaping_scheme", Value: v})
	}
	for _, h := range []struct {
		key   string
		v     *bool
		minor int
	}{
		{"convert_classic_histograms_to_nhcb", spec.ConvertClassicHistogramsToNHCB, 4},
		{"always_scrape_classic_histograms", spec.ScrapeClassicHistograms, 5},
		{"scrape_native_histograms", spec.ScrapeNativeHistograms, 8},
	} {
		if h.v != nil && r.version.AtLeast(3, h.minor) {
			out = append(out, yaml.MapItem{Key: h.key, Value: *h.v})
		}
	}
	return out, nil
}

// alerting renders the alerting section: the Alertmanagers of
// spec.alerting, then those of spec.additionalAlertManagerConfigs; the
// relabeling that drops the replica label (when there is one), then those
// of spec.additionalAlertRelabelConfigs. None when there is no
// Alertmanager.
func (r *renderer) alerting(replica string) (yaml.MapSlice, error) {
	spec := &r.srv.Spec
	var ams []yaml.MapSlice
	if spec.Alerting != nil {
		var err error
		if ams, err = r.alertmanagers(spec.Alerting.Alertmanagers); err != nil {
			return nil, err
		}
	}
	moreAMs, err := r.additionalList("spec.additionalAlertManagerConfigs", spec.AdditionalAlertManagerConfigs, checkAlertmanagerConfig)
	if err != nil {
		return nil, err
	}
	ams = append(ams, moreAMs...)
	if len(ams) == 0 {
		return nil, nil
	}
	var relabelings []yaml.MapSlice
	if replica != "" {
		// Replicas send the same alerts: drop the label that tells
		// them apart so that Alertmanager deduplicates them.
		relabelings = append(relabelings, yaml.MapSlice{
			{Key: "action", Value: "labeldrop"},
			{Key: "regex", Value: regexp.QuoteMeta(replica)},
		})
	}
	moreRelabelings, err := r.additionalList("spec.additionalAlertRelabelConfigs", spec.AdditionalAlertRelabelConfigs, checkRelabelConfig)
	if err != nil {
		return nil, err
	}
	relabelings = append(relabelings, moreRelabelings...)
	var alerting yaml.MapSlice
	if len(relabelings) > 0 {
		alerting = append(alerting, yaml.MapItem{Key: "alert_relabel_configs", Value: relabelings})
	}
	return append(alerting, yaml.MapItem{Key: "alertmanagers", Value: ams}), nil
}

func (r *renderer) alertmanagers(ams []v1alpha1.AlertmanagerEndpoint) ([]yaml.MapSlice, error) {
	out := make([]yaml.MapSlice, 0, len(ams))
	role, meta := r.endpointRole(r.srv.Spec.ServiceDiscoveryRole)
	for i, am := range ams {
		path := fmt.Sprintf("spec.alerting.alertmanagers[%d]", i)
		if am.Name == "" {
			return nil, fmt.Errorf("%s.name: must not be empty", path)
		}
		ns := am.Namespace
		if ns == "" {
			ns = r.srv.Namespace
		}
		scheme := strings.ToLower(am.Scheme)
		switch scheme {
		case "":
			scheme = "http"
		case "http", "https":
		default:
			return nil, fmt.Errorf("%s.scheme: %q is not http or https", path, am.Scheme)
		}
		prefix := am.PathPrefix
		if prefix == "" {
			prefix = "/"
		}
		switch am.APIVersion {
		case "", "v2", "V2":
		default:
			return nil, fmt.Errorf("%s.apiVersion: %q is not supported, only v2 is", path, am.APIVersion)
		}
		if _, err := r.relabel.Regexp(am.Name); err != nil {
			return nil, fmt.Errorf("%s.name: %w", path, err)
		}
		relabelings := []yaml.MapSlice{relabeling.Keep([]string{"__meta_kubernetes_service_name"}, am.Name)}
		switch {
		case am.Port.Type == intstr.String && am.Port.StrVal != "":
			if _, err := r.relabel.Regexp(am.Port.StrVal); err != nil {
				return nil, fmt.Errorf("%s.port: %w", path, err)
			}
			relabelings = append(relabelings, relabeling.Keep([]string{meta + "_port_name"}, am.Port.StrVal))
		case am.Port.Type == intstr.Int && am.Port.IntVal != 0:
			relabelings = append(relabelings, relabeling.Keep([]string{"__meta_kubernetes_pod_container_port_number"}, am.Port.String()))
		}
		client, auth, err := r.remote().AlertmanagerClient(path, &am)
		if err != nil {
			return nil, err
		}
		for i := range am.RelabelConfigs {
			rc, err := r.relabel.Rule(fmt.Sprintf("%s.relabelings[%d]", path, i), &am.RelabelConfigs[i])
			if err != nil {
				return nil, err
			}
			relabelings = append(relabelings, rc)
		}
		cfg := append(yaml.MapSlice{
			{Key: "path_prefix", Value: prefix},
			{Key: "scheme", Value: scheme},
		}, client...)
		cfg = append(cfg, yaml.MapItem{Key: "kubernetes_sd_configs", Value: []yaml.MapSlice{append(yaml.MapSlice{
			{Key: "role", Value: role},
			{Key: "namespaces", Value: yaml.MapSlice{{Key: "names", Value: []string{ns}}}},
		}, r.apiServer...)}})
		cfg = append(cfg, auth...)
		if r.version.AtLeast(2, 11) { // Written when unset too: Prometheus reads it as its default.
			cfg = append(cfg, yaml.MapItem{Key: "api_version", Value: "v2"})
		}
		cfg = append(cfg, yaml.MapItem{Key: "relabel_configs", Value: relabelings})
		var alertRelabelings []yaml.MapSlice
		for i := range am.AlertRelabelConfigs {
			rc, err := r.relabel.Rule(fmt.Sprintf("%s.alertRelabelings[%d]", path, i), &am.AlertRelabelConfigs[i])
			if err != nil {
				return nil, err
			}
			alertRelabelings = append(alertRelabelings, rc)
		}
		if len(alertRelabelings) > 0 && r.version.AtLeast(2, 51) {
			cfg = append(cfg, yaml.MapItem{Key: "alert_relabel_configs", Value: alertRelabelings})
		}
		out = append(out, cfg)
	}
	return out, nil
}

// Version is a Prometheus version as major, minor and patch: the
// configuration has the keys of its version (AtLeast), as
// prometheus-operator's generator gates them.
type Version [3]int

// newestMajor is the major of a version that is not known: it has the
// keys of the newest Prometheus.
const newestMajor = 1 << 30

// ParseVersion parses a Prometheus version, v3.13.1 or 3.13.1. A
// pre-release of x.y.0 (y > 0) comes before x.y.0, as in semver: it counts
// as the last x.(y-1). "" or a version that does not parse is the newest.
func ParseVersion(s string) Version {
	s = strings.TrimPrefix(s, "v")
	s, _, _ = strings.Cut(s, "+")
	s, pre, _ := strings.Cut(s, "-")
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return Version{newestMajor}
	}
	var v Version
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return Version{newestMajor}
		}
		v[i] = n
	}
	if pre != "" && v[2] == 0 && v[1] > 0 {
		// The major stays: prometheus-operator tests it alone (3.0.0-rc.0
		// gets no Prometheus 2 flag).
		v[1], v[2] = v[1]-1, 1<<30
	}
	return v
}

// AtLeast reports whether v is major.minor or later.
func (v Version) AtLeast(major, minor int) bool {
	return v[0] > major || v[0] == major && v[1] >= minor
}
