package controller

import (
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/units"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/relabel"
	yaml "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podreload/podreload/api/v1alpha1"
)

const (
	// defaultInterval is the scrape and evaluation interval of a
	// PrometheusServer that sets none (the CRD default).
	defaultInterval = "30s"
	// defaultRemoteTimeout is prometheus-operator's remote_timeout.
	defaultRemoteTimeout = "30s"
	// replicaLabel is the external label that tells replicas apart; its
	// value is left for the config-reloader sidecar to expand.
	replicaLabel = "prometheus_replica"
	// serverLabel is the external label naming the PrometheusServer.
	serverLabel = "prometheus"
	// podNameRef is expanded by the config-reloader sidecar.
	podNameRef = "$(POD_NAME)"
)

// ruleFilePattern is Prometheus' rule for rule_files: one wildcard at
// most, in the last path element.
var ruleFilePattern = regexp.MustCompile(`^[^*]*(\*[^/]*)?$`)

// ConfigInput is what the Prometheus configuration is rendered from.
type ConfigInput struct {
	// Server is the PrometheusServer the configuration is for.
	Server *v1alpha1.PrometheusServer
	// ServiceMonitors are the ServiceMonitors the server selected.
	ServiceMonitors []*monitoringv1.ServiceMonitor
	// PodMonitors are the PodMonitors the server selected.
	PodMonitors []*monitoringv1.PodMonitor
	// RuleFiles are the rule_files globs, e.g.
	// /etc/prometheus/rules/<name>-rulefiles-0/*.yaml. Prometheus allows a
	// wildcard in the last path element only, so a directory of rule files
	// is listed by name.
	RuleFiles []string
	// Secrets holds the Secrets the server and the monitors reference, by
	// "namespace/name".
	Secrets map[string]*corev1.Secret
}

// Rejection is an object left out of the configuration, and why (for an
// Event and the status).
type Rejection struct {
	// Kind of the object: ServiceMonitor, PodMonitor or PrometheusRule.
	Kind string
	// Namespace of the object.
	Namespace string
	// Name of the object.
	Name string
	// Reason names the field at fault and the cause.
	Reason string
}

// RenderConfig returns prometheus.yaml and the monitors it left out. The
// output is deterministic: monitors are ordered by namespace and name
// whatever the order of the input.
//
// The configuration follows prometheus-operator's conventions: one job per
// ServiceMonitor endpoint (serviceMonitor/<namespace>/<name>/<i>) and per
// PodMonitor endpoint (podMonitor/<namespace>/<name>/<i>), the same built-in
// relabelings and target labels, and credentials read from Secrets and
// written inline. A monitor that cannot be rendered (an invalid selector or
// relabeling, a missing Secret, a scrape timeout longer than its interval,
// a feature this renderer does not support...) is left out whole and
// reported as a Rejection. An error means the PrometheusServer itself
// cannot be rendered.
func RenderConfig(in ConfigInput) ([]byte, []Rejection, error) {
	cfg, rejected, err := renderConfig(in)
	if err != nil {
		return nil, nil, fmt.Errorf("render config: %w", err)
	}
	b, err := encodeYAML(cfg, configSize(cfg))
	if err != nil {
		return nil, nil, fmt.Errorf("render config: %w", err)
	}
	return b, rejected, nil
}

// configSize is a little more than the size of cfg encoded: a job takes
// about 2.5 KiB.
func configSize(cfg yaml.MapSlice) int {
	size := 4 << 10
	for _, it := range cfg {
		if jobs, ok := it.Value.([]yaml.MapSlice); ok && it.Key == "scrape_configs" {
			size += len(jobs) * 3 << 10
		}
	}
	return size
}

// configParts is a configuration rendered before its rule files are
// known: the configuration is the global section, the rule_files section,
// then tail, already encoded. Render builds and encodes the scrape
// configurations, the bulk of the work, while it renders the rules.
type configParts struct {
	global yaml.MapSlice
	tail   []byte
	// secrets are the Secrets the configuration references, found or not.
	secrets []string
	// monitors are the scrape jobs of each monitor, to tell which take
	// the most room.
	monitors []monitorJobs
}

// renderConfigParts is RenderConfig but for the rule files, which it
// ignores in in. On error, the parts hold only the Secrets looked up.
func renderConfigParts(in ConfigInput) (configParts, []Rejection, error) {
	in.RuleFiles = nil
	r := newRenderer(in)
	cfg, rejected, err := r.config(in)
	secrets := slices.Sorted(maps.Keys(r.secretRefs))
	if err != nil {
		// The Secrets looked up before the error go with it: one of them
		// may be what the server is waiting for.
		return configParts{secrets: secrets}, nil, fmt.Errorf("render config: %w", err)
	}
	// Without rule files, the global section is alone before the rest.
	tail, err := encodeYAML(cfg[1:], configSize(cfg))
	if err != nil {
		return configParts{}, nil, fmt.Errorf("render config: %w", err)
	}
	return configParts{global: cfg[:1], tail: tail, secrets: secrets, monitors: r.monitors}, rejected, nil
}

// head returns what comes before p.tail in the configuration with the
// rule files ruleFiles: the global and rule_files sections.
func (p configParts) head(ruleFiles []string) ([]byte, error) {
	files, err := ruleFilesSection(ruleFiles)
	if err != nil {
		return nil, fmt.Errorf("render config: %w", err)
	}
	b, err := encodeYAML(slices.Concat(p.global, files), 1<<10)
	if err != nil {
		return nil, fmt.Errorf("render config: %w", err)
	}
	return b, nil
}

// renderConfig returns the configuration as ordered YAML structures.
func renderConfig(in ConfigInput) (yaml.MapSlice, []Rejection, error) {
	return newRenderer(in).config(in)
}

func newRenderer(in ConfigInput) *renderer {
	return &renderer{secrets: in.Secrets, srv: in.Server, secretRefs: map[string]struct{}{}}
}

// config renders the configuration of in, with r made from in.
func (r *renderer) config(in ConfigInput) (yaml.MapSlice, []Rejection, error) {
	if in.Server == nil {
		return nil, nil, errors.New("no PrometheusServer")
	}
	server, err := r.renderServer()
	if err != nil {
		return nil, nil, err
	}
	files, err := ruleFilesSection(in.RuleFiles)
	if err != nil {
		return nil, nil, err
	}
	sms, err := sortedObjects(in.ServiceMonitors, monitoringv1.ServiceMonitorsKind)
	if err != nil {
		return nil, nil, err
	}
	pms, err := sortedObjects(in.PodMonitors, monitoringv1.PodMonitorsKind)
	if err != nil {
		return nil, nil, err
	}

	var rejected []Rejection
	jobs := []yaml.MapSlice{}
	for _, sm := range sms {
		js, err := r.serviceMonitorJobs(sm)
		if err != nil {
			rejected = append(rejected, Rejection{Kind: monitoringv1.ServiceMonitorsKind, Namespace: sm.Namespace, Name: sm.Name, Reason: err.Error()})
			continue
		}
		jobs = append(jobs, js...)
		r.monitors = append(r.monitors, monitorJobs{kind: monitoringv1.ServiceMonitorsKind, namespace: sm.Namespace, name: sm.Name, jobs: js})
	}
	for _, pm := range pms {
		js, err := r.podMonitorJobs(pm)
		if err != nil {
			rejected = append(rejected, Rejection{Kind: monitoringv1.PodMonitorsKind, Namespace: pm.Namespace, Name: pm.Name, Reason: err.Error()})
			continue
		}
		jobs = append(jobs, js...)
		r.monitors = append(r.monitors, monitorJobs{kind: monitoringv1.PodMonitorsKind, namespace: pm.Namespace, name: pm.Name, jobs: js})
	}

	// The order of prometheus-operator: global, rule_files, scrape_configs,
	// alerting, remote_write.
	cfg := yaml.MapSlice{server.global}
	cfg = append(cfg, files...)
	cfg = append(cfg, yaml.MapItem{Key: "scrape_configs", Value: jobs})
	cfg = append(cfg, server.rest...)
	return cfg, rejected, nil
}

// ruleFilesSection is the rule_files section of the configuration with
// the rule files files, sorted and without duplicates: none when there are
// no files.
func ruleFilesSection(files []string) (yaml.MapSlice, error) {
	files = sortedUnique(files)
	for _, f := range files {
		if f == "" || !ruleFilePattern.MatchString(f) {
			return nil, fmt.Errorf("rule file %q: Prometheus allows one wildcard, in the last path element", f)
		}
	}
	if len(files) == 0 {
		return nil, nil
	}
	return yaml.MapSlice{{Key: "rule_files", Value: files}}, nil
}

// namespaced is a ServiceMonitor, a PodMonitor or a PrometheusRule.
type namespaced interface {
	*monitoringv1.ServiceMonitor | *monitoringv1.PodMonitor | *monitoringv1.PrometheusRule
	GetNamespace() string
	GetName() string
}

// sortedObjects returns a copy of objs ordered by namespace and name, or an
// error for a nil or duplicate object, which the caller should never pass.
func sortedObjects[T namespaced](objs []T, kind string) ([]T, error) {
	s := slices.Clone(objs)
	for _, o := range s {
		if o == nil {
			return nil, fmt.Errorf("nil %s", kind)
		}
	}
	slices.SortFunc(s, func(a, b T) int {
		if c := strings.Compare(a.GetNamespace(), b.GetNamespace()); c != 0 {
			return c
		}
		return strings.Compare(a.GetName(), b.GetName())
	})
	for i := 1; i < len(s); i++ {
		if s[i].GetNamespace() == s[i-1].GetNamespace() && s[i].GetName() == s[i-1].GetName() {
			return nil, fmt.Errorf("duplicate %s %s/%s", kind, s[i].GetNamespace(), s[i].GetName())
		}
	}
	return s, nil
}

func sortedUnique(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return slices.Compact(s)
}

// monitorJobs are the scrape jobs of one monitor.
type monitorJobs struct {
	kind, namespace, name string
	jobs                  []yaml.MapSlice
}

type renderer struct {
	secrets map[string]*corev1.Secret
	// secretRefs are the Secrets looked up so far, "namespace/name", found
	// or not: a change to any of them can change the configuration.
	secretRefs map[string]struct{}
	srv        *v1alpha1.PrometheusServer
	// interval is the global scrape interval, the default of every job, as
	// a duration and as written.
	interval     model.Duration
	intervalText string
	// regexps caches the regular expressions compiled so far.
	regexps map[string]compiledRegexp
	// monitors are the jobs of each monitor rendered, in their order.
	monitors []monitorJobs
}

// serverConfig holds the sections that come from the PrometheusServer:
// global goes first, rest after scrape_configs.
type serverConfig struct {
	global yaml.MapItem
	rest   yaml.MapSlice
}

func (r *renderer) renderServer() (serverConfig, error) {
	spec := &r.srv.Spec
	scrape := string(spec.ScrapeInterval)
	if scrape == "" {
		scrape = defaultInterval
	}
	d, err := positiveDuration(scrape)
	if err != nil {
		return serverConfig{}, fmt.Errorf("spec.scrapeInterval: %w", err)
	}
	r.interval, r.intervalText = d, scrape
	eval := string(spec.EvaluationInterval)
	if eval == "" {
		eval = defaultInterval
	}
	if _, err := positiveDuration(eval); err != nil {
		return serverConfig{}, fmt.Errorf("spec.evaluationInterval: %w", err)
	}

	// The labels the controller sets win over the user's, as in
	// prometheus-operator.
	labels := map[string]string{
		serverLabel:  r.srv.Namespace + "/" + r.srv.Name,
		replicaLabel: podNameRef,
	}
	for k, v := range spec.ExternalLabels {
		if _, ok := labels[k]; !ok {
			labels[k] = v
		}
	}
	global := yaml.MapItem{Key: "global", Value: yaml.MapSlice{
		{Key: "evaluation_interval", Value: eval},
		{Key: "scrape_interval", Value: scrape},
		{Key: "external_labels", Value: sortedMap(labels)},
	}}

	var rest yaml.MapSlice
	if spec.Alerting != nil && len(spec.Alerting.Alertmanagers) > 0 {
		ams, err := r.alertmanagers(spec.Alerting.Alertmanagers)
		if err != nil {
			return serverConfig{}, err
		}
		rest = append(rest, yaml.MapItem{Key: "alerting", Value: yaml.MapSlice{
			// Replicas send the same alerts: drop the label that tells
			// them apart so that Alertmanager deduplicates them.
			{Key: "alert_relabel_configs", Value: []yaml.MapSlice{{
				{Key: "action", Value: "labeldrop"},
				{Key: "regex", Value: replicaLabel},
			}}},
			{Key: "alertmanagers", Value: ams},
		}})
	}
	if len(spec.RemoteWrite) > 0 {
		rws, err := r.remoteWrites(spec.RemoteWrite)
		if err != nil {
			return serverConfig{}, err
		}
		rest = append(rest, yaml.MapItem{Key: "remote_write", Value: rws})
	}
	return serverConfig{global: global, rest: rest}, nil
}

func (r *renderer) alertmanagers(ams []v1alpha1.AlertmanagerEndpoint) ([]yaml.MapSlice, error) {
	out := make([]yaml.MapSlice, 0, len(ams))
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
		if _, err := r.regexp(am.Name); err != nil {
			return nil, fmt.Errorf("%s.name: %w", path, err)
		}
		relabelings := []yaml.MapSlice{keep([]string{"__meta_kubernetes_service_name"}, am.Name)}
		switch {
		case am.Port.Type == intstr.String && am.Port.StrVal != "":
			if _, err := r.regexp(am.Port.StrVal); err != nil {
				return nil, fmt.Errorf("%s.port: %w", path, err)
			}
			relabelings = append(relabelings, keep([]string{"__meta_kubernetes_endpoint_port_name"}, am.Port.StrVal))
		case am.Port.Type == intstr.Int && am.Port.IntVal != 0:
			relabelings = append(relabelings, keep([]string{"__meta_kubernetes_pod_container_port_number"}, am.Port.String()))
		}
		out = append(out, yaml.MapSlice{
			{Key: "path_prefix", Value: prefix},
			{Key: "scheme", Value: scheme},
			{Key: "kubernetes_sd_configs", Value: []yaml.MapSlice{{
				{Key: "role", Value: "endpoints"},
				{Key: "namespaces", Value: yaml.MapSlice{{Key: "names", Value: []string{ns}}}},
			}}},
			{Key: "api_version", Value: "v2"},
			{Key: "relabel_configs", Value: relabelings},
		})
	}
	return out, nil
}

func (r *renderer) remoteWrites(rws []v1alpha1.RemoteWriteSpec) ([]yaml.MapSlice, error) {
	out := make([]yaml.MapSlice, 0, len(rws))
	names := map[string]bool{}
	ns := r.srv.Namespace
	for i, rw := range rws {
		path := fmt.Sprintf("spec.remoteWrite[%d]", i)
		u, err := parseURL(rw.URL)
		if err != nil {
			return nil, fmt.Errorf("%s.url: %w", path, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return nil, fmt.Errorf("%s.url: %q is not an http or https URL", path, shownURL(u))
		}
		cfg := yaml.MapSlice{
			{Key: "url", Value: rw.URL},
			{Key: "remote_timeout", Value: defaultRemoteTimeout},
		}
		if rw.Name != "" {
			if names[rw.Name] {
				return nil, fmt.Errorf("%s.name: %q is used twice", path, rw.Name)
			}
			names[rw.Name] = true
			cfg = append(cfg, yaml.MapItem{Key: "name", Value: rw.Name})
		}
		if rw.BasicAuth != nil && rw.Authorization != nil {
			return nil, fmt.Errorf("%s: basicAuth and authorization are mutually exclusive", path)
		}
		if rw.BasicAuth != nil {
			ba, err := r.basicAuth(ns, path+".basicAuth", rw.BasicAuth)
			if err != nil {
				return nil, err
			}
			cfg = append(cfg, ba)
		}
		if a := rw.Authorization; a != nil {
			if a.Credentials != nil && a.CredentialsFile != "" {
				return nil, fmt.Errorf("%s.authorization: credentials and credentialsFile are mutually exclusive", path)
			}
			auth, err := r.authorization(ns, path+".authorization", &a.SafeAuthorization, a.CredentialsFile != "")
			if err != nil {
				return nil, err
			}
			if a.CredentialsFile != "" {
				auth.Value = append(auth.Value.(yaml.MapSlice), yaml.MapItem{Key: "credentials_file", Value: a.CredentialsFile})
			}
			cfg = append(cfg, auth)
		}
		out = append(out, cfg)
	}
	return out, nil
}

// monitorSpec holds what ServiceMonitors and PodMonitors have in common:
// the namespace, and the fields of their specs that have the same name and
// meaning.
type monitorSpec struct {
	namespace string
	// selectorKind is service or pod: the object whose labels the
	// selector matches.
	selectorKind           string
	podTargetLabels        []string
	selector               metav1.LabelSelector
	selectorMechanism      *monitoringv1.SelectorMechanism
	namespaceSelector      monitoringv1.NamespaceSelector
	sampleLimit            *int64
	targetLimit            *int64
	labelLimit             *int64
	labelNameLengthLimit   *int64
	labelValueLengthLimit  *int64
	keepDroppedTargets     *int64
	scrapeProtocols        []monitoringv1.ScrapeProtocol
	fallbackScrapeProtocol *monitoringv1.ScrapeProtocol
	nativeHistograms       monitoringv1.NativeHistogramConfig
	attachMetadata         *monitoringv1.AttachMetadata
	scrapeClass            *string
	bodySizeLimit          *monitoringv1.ByteSize
}

// endpoint holds the fields of Endpoint and PodMetricsEndpoint that have
// the same name and meaning. The fields deprecated upstream (bearerTokenFile,
// bearerTokenSecret, targetPort) are honoured, as prometheus-operator does.
type endpoint struct {
	path                     string
	scheme                   *monitoringv1.Scheme
	params                   map[string][]string
	interval                 monitoringv1.Duration
	scrapeTimeout            monitoringv1.Duration
	honorLabels              bool
	honorTimestamps          *bool
	trackTimestampsStaleness *bool
	filterRunning            *bool
	http                     monitoringv1.HTTPConfigWithoutTLS
	tls                      *monitoringv1.TLSConfig
	proxy                    monitoringv1.ProxyConfig
	bearerTokenFile          string
	relabelings              []monitoringv1.RelabelConfig
	metricRelabelings        []monitoringv1.RelabelConfig
}

// monitorParts are rendered once per monitor and shared by its jobs.
type monitorParts struct {
	// sd is the kubernetes_sd_configs item.
	sd yaml.MapItem
	// selector holds the relabelings that keep the selected objects.
	selector []yaml.MapSlice
	// tail holds the limits and the other per-monitor settings that follow
	// relabel_configs.
	tail yaml.MapSlice
}

func (r *renderer) serviceMonitorJobs(sm *monitoringv1.ServiceMonitor) ([]yaml.MapSlice, error) {
	s := &sm.Spec
	m := monitorSpec{
		namespace:              sm.Namespace,
		selectorKind:           "service",
		podTargetLabels:        s.PodTargetLabels,
		selector:               s.Selector,
		selectorMechanism:      s.SelectorMechanism,
		namespaceSelector:      s.NamespaceSelector,
		sampleLimit:            s.SampleLimit,
		targetLimit:            s.TargetLimit,
		labelLimit:             s.LabelLimit,
		labelNameLengthLimit:   s.LabelNameLengthLimit,
		labelValueLengthLimit:  s.LabelValueLengthLimit,
		keepDroppedTargets:     s.KeepDroppedTargets,
		scrapeProtocols:        s.ScrapeProtocols,
		fallbackScrapeProtocol: s.FallbackScrapeProtocol,
		nativeHistograms:       s.NativeHistogramConfig,
		attachMetadata:         s.AttachMetadata,
		scrapeClass:            s.ScrapeClassName,
		bodySizeLimit:          s.BodySizeLimit,
	}
	role, meta := "endpoints", "__meta_kubernetes_endpoint"
	if s.ServiceDiscoveryRole != nil {
		switch *s.ServiceDiscoveryRole {
		case monitoringv1.EndpointsRole:
		case monitoringv1.EndpointSliceRole:
			role, meta = "endpointslice", "__meta_kubernetes_endpointslice"
		default:
			return nil, fmt.Errorf("serviceDiscoveryRole: %q is not Endpoints or EndpointSlice", *s.ServiceDiscoveryRole)
		}
	}
	parts, err := r.monitorParts(&m, role)
	if err != nil {
		return nil, err
	}
	for _, l := range s.TargetLabels {
		if l == "" {
			return nil, errors.New("targetLabels: empty label name")
		}
	}

	jobs := make([]yaml.MapSlice, 0, len(s.Endpoints))
	for i := range s.Endpoints {
		ep := &s.Endpoints[i]
		path := fmt.Sprintf("endpoints[%d]", i)
		e := endpoint{
			path:                     ep.Path,
			scheme:                   ep.Scheme,
			params:                   ep.Params,
			interval:                 ep.Interval,
			scrapeTimeout:            ep.ScrapeTimeout,
			honorLabels:              ep.HonorLabels,
			honorTimestamps:          ep.HonorTimestamps,
			trackTimestampsStaleness: ep.TrackTimestampsStaleness,
			filterRunning:            ep.FilterRunning,
			http:                     ep.HTTPConfigWithoutTLS,
			tls:                      ep.TLSConfig,
			proxy:                    ep.ProxyConfig,
			bearerTokenFile:          ep.BearerTokenFile,
			relabelings:              ep.RelabelConfigs,
			metricRelabelings:        ep.MetricRelabelConfigs,
		}

		// The relabelings of prometheus-operator, in its order.
		rl := make([]yaml.MapSlice, 0, 16+len(parts.selector)+len(s.TargetLabels)+len(s.PodTargetLabels)+len(ep.RelabelConfigs))
		rl = append(rl, jobNameRelabeling())
		rl = append(rl, parts.selector...)
		switch {
		case ep.Port != "":
			if _, err := r.regexp(ep.Port); err != nil {
				return nil, fmt.Errorf("%s.port: %w", path, err)
			}
			rl = append(rl, keep([]string{meta + "_port_name"}, ep.Port))
		case ep.TargetPort != nil:
			f, err := r.targetPortFilter(ep.TargetPort)
			if err != nil {
				return nil, fmt.Errorf("%s.targetPort: %w", path, err)
			}
			if f != nil {
				rl = append(rl, f)
			}
		}
		endpointLabel := endpointLabel(ep.Port, ep.TargetPort)
		kindName := []string{meta + "_address_target_kind", meta + "_address_target_name"}
		rl = append(rl,
			yaml.MapSlice{
				{Key: "source_labels", Value: kindName},
				{Key: "separator", Value: ";"},
				{Key: "regex", Value: "Node;(.*)"},
				{Key: "replacement", Value: "${1}"},
				{Key: "target_label", Value: "node"},
			},
			yaml.MapSlice{
				{Key: "source_labels", Value: kindName},
				{Key: "separator", Value: ";"},
				{Key: "regex", Value: "Pod;(.*)"},
				{Key: "replacement", Value: "${1}"},
				{Key: "target_label", Value: "pod"},
			},
			copyLabel("__meta_kubernetes_namespace", "namespace"),
			copyLabel("__meta_kubernetes_service_name", "service"),
			copyLabel("__meta_kubernetes_pod_name", "pod"),
			copyLabel("__meta_kubernetes_pod_container_name", "container"),
		)
		if e.filterRunning == nil || *e.filterRunning {
			rl = append(rl, runningFilter())
		}
		for _, l := range s.TargetLabels {
			rl = append(rl, labelFrom("__meta_kubernetes_service_label_"+sanitizeLabelName(l), sanitizeLabelName(l)))
		}
		for _, l := range s.PodTargetLabels {
			rl = append(rl, labelFrom("__meta_kubernetes_pod_label_"+sanitizeLabelName(l), sanitizeLabelName(l)))
		}
		rl = append(rl, yaml.MapSlice{
			{Key: "source_labels", Value: []string{"__meta_kubernetes_service_name"}},
			{Key: "target_label", Value: "job"},
			{Key: "replacement", Value: "${1}"},
		})
		if s.JobLabel != "" {
			rl = append(rl, labelFrom("__meta_kubernetes_service_label_"+sanitizeLabelName(s.JobLabel), "job"))
		}
		if endpointLabel != "" {
			rl = append(rl, setLabel("endpoint", endpointLabel))
		}

		job, err := r.job(m.namespace, &parts, &e, fmt.Sprintf("serviceMonitor/%s/%s/%d", sm.Namespace, sm.Name, i), path, rl)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, job)
	}
	return jobs, nil
}

func (r *renderer) podMonitorJobs(pm *monitoringv1.PodMonitor) ([]yaml.MapSlice, error) {
	s := &pm.Spec
	m := monitorSpec{
		namespace:              pm.Namespace,
		selectorKind:           "pod",
		podTargetLabels:        s.PodTargetLabels,
		selector:               s.Selector,
		selectorMechanism:      s.SelectorMechanism,
		namespaceSelector:      s.NamespaceSelector,
		sampleLimit:            s.SampleLimit,
		targetLimit:            s.TargetLimit,
		labelLimit:             s.LabelLimit,
		labelNameLengthLimit:   s.LabelNameLengthLimit,
		labelValueLengthLimit:  s.LabelValueLengthLimit,
		keepDroppedTargets:     s.KeepDroppedTargets,
		scrapeProtocols:        s.ScrapeProtocols,
		fallbackScrapeProtocol: s.FallbackScrapeProtocol,
		nativeHistograms:       s.NativeHistogramConfig,
		attachMetadata:         s.AttachMetadata,
		scrapeClass:            s.ScrapeClassName,
		bodySizeLimit:          s.BodySizeLimit,
	}
	parts, err := r.monitorParts(&m, "pod")
	if err != nil {
		return nil, err
	}

	jobs := make([]yaml.MapSlice, 0, len(s.PodMetricsEndpoints))
	for i := range s.PodMetricsEndpoints {
		ep := &s.PodMetricsEndpoints[i]
		path := fmt.Sprintf("podMetricsEndpoints[%d]", i)
		var tls *monitoringv1.TLSConfig
		if ep.TLSConfig != nil {
			tls = &monitoringv1.TLSConfig{SafeTLSConfig: *ep.TLSConfig}
		}
		e := endpoint{
			path:                     ep.Path,
			scheme:                   ep.Scheme,
			params:                   ep.Params,
			interval:                 ep.Interval,
			scrapeTimeout:            ep.ScrapeTimeout,
			honorLabels:              ep.HonorLabels,
			honorTimestamps:          ep.HonorTimestamps,
			trackTimestampsStaleness: ep.TrackTimestampsStaleness,
			filterRunning:            ep.FilterRunning,
			http:                     ep.HTTPConfigWithoutTLS,
			tls:                      tls,
			proxy:                    ep.ProxyConfig,
			relabelings:              ep.RelabelConfigs,
			metricRelabelings:        ep.MetricRelabelConfigs,
		}

		// The relabelings of prometheus-operator, in its order.
		rl := make([]yaml.MapSlice, 0, 12+len(parts.selector)+len(s.PodTargetLabels)+len(ep.RelabelConfigs))
		rl = append(rl, jobNameRelabeling())
		if e.filterRunning == nil || *e.filterRunning {
			rl = append(rl, runningFilter())
		}
		rl = append(rl, parts.selector...)
		switch {
		case ep.Port != nil && *ep.Port != "":
			if _, err := r.regexp(*ep.Port); err != nil {
				return nil, fmt.Errorf("%s.port: %w", path, err)
			}
			rl = append(rl, keep([]string{"__meta_kubernetes_pod_container_port_name"}, *ep.Port))
		case ep.PortNumber != nil && *ep.PortNumber != 0:
			if *ep.PortNumber < 1 || *ep.PortNumber > 65535 {
				return nil, fmt.Errorf("%s.portNumber: %d is not a port number", path, *ep.PortNumber)
			}
			rl = append(rl, keep([]string{"__meta_kubernetes_pod_container_port_number"}, strconv.Itoa(int(*ep.PortNumber))))
		case ep.TargetPort != nil:
			f, err := r.targetPortFilter(ep.TargetPort)
			if err != nil {
				return nil, fmt.Errorf("%s.targetPort: %w", path, err)
			}
			if f != nil {
				rl = append(rl, f)
			}
		}
		var port string
		if ep.Port != nil {
			port = *ep.Port
		}
		endpointLabel := endpointLabel(port, ep.TargetPort)
		rl = append(rl,
			copyLabel("__meta_kubernetes_namespace", "namespace"),
			copyLabel("__meta_kubernetes_pod_container_name", "container"),
			copyLabel("__meta_kubernetes_pod_name", "pod"),
		)
		for _, l := range s.PodTargetLabels {
			rl = append(rl, labelFrom("__meta_kubernetes_pod_label_"+sanitizeLabelName(l), sanitizeLabelName(l)))
		}
		rl = append(rl, setLabel("job", pm.Namespace+"/"+pm.Name))
		if s.JobLabel != "" {
			rl = append(rl, labelFrom("__meta_kubernetes_pod_label_"+sanitizeLabelName(s.JobLabel), "job"))
		}
		if endpointLabel != "" {
			rl = append(rl, setLabel("endpoint", endpointLabel))
		}

		job, err := r.job(m.namespace, &parts, &e, fmt.Sprintf("podMonitor/%s/%s/%d", pm.Namespace, pm.Name, i), path, rl)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, job)
	}
	return jobs, nil
}

// monitorParts checks the monitor-wide fields of s and renders what its
// jobs share.
func (r *renderer) monitorParts(s *monitorSpec, role string) (monitorParts, error) {
	if s.scrapeClass != nil && *s.scrapeClass != "" {
		return monitorParts{}, fmt.Errorf("scrapeClass: %q: PrometheusServer has no scrape classes", *s.scrapeClass)
	}
	if s.selectorMechanism != nil && *s.selectorMechanism != monitoringv1.SelectorMechanismRelabel {
		return monitorParts{}, fmt.Errorf("selectorMechanism: %q is not supported, only %s is", *s.selectorMechanism, monitoringv1.SelectorMechanismRelabel)
	}
	if _, err := metav1.LabelSelectorAsSelector(&s.selector); err != nil {
		return monitorParts{}, fmt.Errorf("selector: %w", err)
	}
	for _, l := range s.podTargetLabels {
		if l == "" {
			return monitorParts{}, errors.New("podTargetLabels: empty label name")
		}
	}

	sd := yaml.MapSlice{{Key: "role", Value: role}}
	switch ns := s.namespaceSelector; {
	case ns.Any:
	case len(ns.MatchNames) > 0:
		sd = append(sd, yaml.MapItem{Key: "namespaces", Value: yaml.MapSlice{{Key: "names", Value: ns.MatchNames}}})
	default:
		sd = append(sd, yaml.MapItem{Key: "namespaces", Value: yaml.MapSlice{{Key: "names", Value: []string{s.namespace}}}})
	}
	if s.attachMetadata != nil {
		node := s.attachMetadata.Node != nil && *s.attachMetadata.Node
		sd = append(sd, yaml.MapItem{Key: "attach_metadata", Value: yaml.MapSlice{{Key: "node", Value: node}}})
	}

	var tail yaml.MapSlice
	for _, l := range []struct {
		field, key string
		v          *int64
	}{
		{"sampleLimit", "sample_limit", s.sampleLimit},
		{"targetLimit", "target_limit", s.targetLimit},
		{"labelLimit", "label_limit", s.labelLimit},
		{"labelNameLengthLimit", "label_name_length_limit", s.labelNameLengthLimit},
		{"labelValueLengthLimit", "label_value_length_limit", s.labelValueLengthLimit},
		{"keepDroppedTargets", "keep_dropped_targets", s.keepDroppedTargets},
	} {
		if l.v == nil {
			continue
		}
		if *l.v < 0 {
			return monitorParts{}, fmt.Errorf("%s: %d is negative", l.field, *l.v)
		}
		tail = append(tail, yaml.MapItem{Key: l.key, Value: *l.v})
	}
	if len(s.scrapeProtocols) > 0 {
		ps := make([]string, len(s.scrapeProtocols))
		for i, p := range s.scrapeProtocols {
			if !knownScrapeProtocol(p) {
				return monitorParts{}, fmt.Errorf("scrapeProtocols[%d]: unknown protocol %q", i, p)
			}
			ps[i] = string(p)
		}
		tail = append(tail, yaml.MapItem{Key: "scrape_protocols", Value: ps})
	}
	if p := s.fallbackScrapeProtocol; p != nil {
		if !knownScrapeProtocol(*p) {
			return monitorParts{}, fmt.Errorf("fallbackScrapeProtocol: unknown protocol %q", *p)
		}
		tail = append(tail, yaml.MapItem{Key: "fallback_scrape_protocol", Value: string(*p)})
	}
	nh := &s.nativeHistograms
	if nh.ScrapeNativeHistograms != nil {
		tail = append(tail, yaml.MapItem{Key: "scrape_native_histograms", Value: *nh.ScrapeNativeHistograms})
	}
	if nh.ScrapeClassicHistograms != nil {
		tail = append(tail, yaml.MapItem{Key: "always_scrape_classic_histograms", Value: *nh.ScrapeClassicHistograms})
	}
	if nh.NativeHistogramBucketLimit != nil {
		if *nh.NativeHistogramBucketLimit < 0 {
			return monitorParts{}, fmt.Errorf("nativeHistogramBucketLimit: %d is negative", *nh.NativeHistogramBucketLimit)
		}
		tail = append(tail, yaml.MapItem{Key: "native_histogram_bucket_limit", Value: *nh.NativeHistogramBucketLimit})
	}
	if nh.NativeHistogramMinBucketFactor != nil {
		tail = append(tail, yaml.MapItem{Key: "native_histogram_min_bucket_factor", Value: nh.NativeHistogramMinBucketFactor.AsApproximateFloat64()})
	}
	if nh.ConvertClassicHistogramsToNHCB != nil {
		tail = append(tail, yaml.MapItem{Key: "convert_classic_histograms_to_nhcb", Value: *nh.ConvertClassicHistogramsToNHCB})
	}
	if b := s.bodySizeLimit; b != nil && *b != "" {
		if _, err := units.ParseBase2Bytes(string(*b)); err != nil {
			return monitorParts{}, fmt.Errorf("bodySizeLimit: %q is not a size such as 512MB", *b)
		}
		tail = append(tail, yaml.MapItem{Key: "body_size_limit", Value: string(*b)})
	}

	return monitorParts{
		sd:       yaml.MapItem{Key: "kubernetes_sd_configs", Value: []yaml.MapSlice{sd}},
		selector: selectorRelabelings(&s.selector, "__meta_kubernetes_"+s.selectorKind),
		tail:     tail,
	}, nil
}

// job renders the scrape job of endpoint e of a monitor in namespace ns;
// path names the endpoint in errors, relabelings are the built-in ones.
func (r *renderer) job(ns string, parts *monitorParts, e *endpoint, name, path string, relabelings []yaml.MapSlice) (yaml.MapSlice, error) {
	job := make(yaml.MapSlice, 0, 24)
	job = append(job,
		yaml.MapItem{Key: "job_name", Value: name},
		yaml.MapItem{Key: "honor_labels", Value: e.honorLabels},
	)
	if e.honorTimestamps != nil {
		job = append(job, yaml.MapItem{Key: "honor_timestamps", Value: *e.honorTimestamps})
	}
	if e.trackTimestampsStaleness != nil {
		job = append(job, yaml.MapItem{Key: "track_timestamps_staleness", Value: *e.trackTimestampsStaleness})
	}
	job = append(job, parts.sd)

	interval, intervalText, intervalName := r.interval, r.intervalText, "the global scrape interval"
	if e.interval != "" {
		d, err := model.ParseDuration(string(e.interval))
		if err != nil {
			return nil, fmt.Errorf("%s.interval: %w", path, err)
		}
		// Prometheus reads a zero interval as the global one.
		if d != 0 {
			interval, intervalText, intervalName = d, string(e.interval), "the scrape interval"
		}
		job = append(job, yaml.MapItem{Key: "scrape_interval", Value: string(e.interval)})
	}
	if e.scrapeTimeout != "" {
		d, err := model.ParseDuration(string(e.scrapeTimeout))
		if err != nil {
			return nil, fmt.Errorf("%s.scrapeTimeout: %w", path, err)
		}
		if d > interval {
			return nil, fmt.Errorf("%s.scrapeTimeout: %q is greater than %s %q", path, e.scrapeTimeout, intervalName, intervalText)
		}
		job = append(job, yaml.MapItem{Key: "scrape_timeout", Value: string(e.scrapeTimeout)})
	}
	if e.path != "" {
		job = append(job, yaml.MapItem{Key: "metrics_path", Value: e.path})
	}
	proxy, err := r.proxy(ns, path, &e.proxy)
	if err != nil {
		return nil, err
	}
	job = append(job, proxy...)
	if len(e.params) > 0 {
		job = append(job, yaml.MapItem{Key: "params", Value: sortedMap(e.params)})
	}
	if e.scheme != nil && *e.scheme != "" {
		scheme := strings.ToLower(string(*e.scheme))
		if scheme != "http" && scheme != "https" {
			return nil, fmt.Errorf("%s.scheme: %q is not http or https", path, *e.scheme)
		}
		job = append(job, yaml.MapItem{Key: "scheme", Value: scheme})
	}
	if e.http.FollowRedirects != nil {
		job = append(job, yaml.MapItem{Key: "follow_redirects", Value: *e.http.FollowRedirects})
	}
	if e.http.EnableHTTP2 != nil {
		job = append(job, yaml.MapItem{Key: "enable_http2", Value: *e.http.EnableHTTP2})
	}

	if err := checkAuthMethods(&e.http, e.bearerTokenFile); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if o := e.http.OAuth2; o != nil {
		item, err := r.oauth2(ns, path+".oauth2", o)
		if err != nil {
			return nil, err
		}
		job = append(job, item)
	}
	if e.tls != nil {
		item, err := r.tlsConfig(ns, path+".tlsConfig", e.tls)
		if err != nil {
			return nil, err
		}
		job = append(job, item)
	}
	if e.bearerTokenFile != "" {
		job = append(job, yaml.MapItem{Key: "bearer_token_file", Value: e.bearerTokenFile})
	}
	if sel := e.http.BearerTokenSecret; sel != nil {
		v, err := r.secret(ns, *sel)
		if err != nil {
			return nil, fmt.Errorf("%s.bearerTokenSecret: %w", path, err)
		}
		job = append(job, yaml.MapItem{Key: "bearer_token", Value: v})
	}
	if ba := e.http.BasicAuth; ba != nil {
		item, err := r.basicAuth(ns, path+".basicAuth", ba)
		if err != nil {
			return nil, err
		}
		job = append(job, item)
	}
	if a := e.http.Authorization; a != nil {
		item, err := r.authorization(ns, path+".authorization", a, false)
		if err != nil {
			return nil, err
		}
		job = append(job, item)
	}

	for i := range e.relabelings {
		rc, err := r.relabelConfig(fmt.Sprintf("%s.relabelings[%d]", path, i), &e.relabelings[i])
		if err != nil {
			return nil, err
		}
		relabelings = append(relabelings, rc)
	}
	job = append(job, yaml.MapItem{Key: "relabel_configs", Value: relabelings})
	job = append(job, parts.tail...)
	if len(e.metricRelabelings) > 0 {
		mrl := make([]yaml.MapSlice, len(e.metricRelabelings))
		for i := range e.metricRelabelings {
			rc, err := r.relabelConfig(fmt.Sprintf("%s.metricRelabelings[%d]", path, i), &e.metricRelabelings[i])
			if err != nil {
				return nil, err
			}
			mrl[i] = rc
		}
		job = append(job, yaml.MapItem{Key: "metric_relabel_configs", Value: mrl})
	}
	return job, nil
}

// checkAuthMethods rejects endpoints that set more than one way to
// authenticate, which Prometheus refuses.
func checkAuthMethods(h *monitoringv1.HTTPConfigWithoutTLS, bearerTokenFile string) error {
	var set []string
	if h.Authorization != nil {
		set = append(set, "authorization")
	}
	if h.BasicAuth != nil {
		set = append(set, "basicAuth")
	}
	if h.OAuth2 != nil {
		set = append(set, "oauth2")
	}
	if h.BearerTokenSecret != nil {
		set = append(set, "bearerTokenSecret")
	}
	if bearerTokenFile != "" {
		set = append(set, "bearerTokenFile")
	}
	if len(set) > 1 {
		return fmt.Errorf("%s and %s are mutually exclusive", strings.Join(set[:len(set)-1], ", "), set[len(set)-1])
	}
	return nil
}

// secret returns the value of a key of a Secret in namespace ns.
func (r *renderer) secret(ns string, sel corev1.SecretKeySelector) (string, error) {
	if sel.Name == "" {
		return "", errors.New("secret name is empty")
	}
	id := ns + "/" + sel.Name
	r.secretRefs[id] = struct{}{}
	s := r.secrets[id]
	if s == nil {
		return "", fmt.Errorf("secret %q not found (looking for key %q)", id, sel.Key)
	}
	v, ok := s.Data[sel.Key]
	if !ok {
		return "", fmt.Errorf("secret %q has no key %q", id, sel.Key)
	}
	if !utf8.Valid(v) {
		return "", fmt.Errorf("secret %q: the value of key %q is not UTF-8 text", id, sel.Key)
	}
	return string(v), nil
}

// The renderers of credentials below take the path of their field, and
// return errors that start with it.

func (r *renderer) basicAuth(ns, path string, ba *monitoringv1.BasicAuth) (yaml.MapItem, error) {
	user, err := r.secret(ns, ba.Username)
	if err != nil {
		return yaml.MapItem{}, fmt.Errorf("%s: %w", path, err)
	}
	auth := yaml.MapSlice{{Key: "username", Value: user}}
	// Prometheus allows a username without a password.
	if ba.Password != (corev1.SecretKeySelector{}) {
		pass, err := r.secret(ns, ba.Password)
		if err != nil {
			return yaml.MapItem{}, fmt.Errorf("%s: %w", path, err)
		}
		auth = append(auth, yaml.MapItem{Key: "password", Value: pass})
	}
	return yaml.MapItem{Key: "basic_auth", Value: auth}, nil
}

// authorization renders an Authorization header; fromFile says that the
// credentials come from a file (remote write only).
func (r *renderer) authorization(ns, path string, a *monitoringv1.SafeAuthorization, fromFile bool) (yaml.MapItem, error) {
	typ := strings.TrimSpace(a.Type)
	if typ == "" {
		typ = "Bearer"
	}
	if strings.EqualFold(typ, "basic") {
		return yaml.MapItem{}, fmt.Errorf("%s.type: %q is not allowed, use basicAuth", path, a.Type)
	}
	auth := yaml.MapSlice{{Key: "type", Value: typ}}
	switch {
	case a.Credentials != nil:
		v, err := r.secret(ns, *a.Credentials)
		if err != nil {
			return yaml.MapItem{}, fmt.Errorf("%s: %w", path, err)
		}
		auth = append(auth, yaml.MapItem{Key: "credentials", Value: v})
	case !fromFile:
		return yaml.MapItem{}, fmt.Errorf("%s.credentials: must be set", path)
	}
	return yaml.MapItem{Key: "authorization", Value: auth}, nil
}

func (r *renderer) oauth2(ns, path string, o *monitoringv1.OAuth2) (yaml.MapItem, error) {
	var id string
	switch {
	case o.ClientID.ConfigMap != nil:
		return yaml.MapItem{}, fmt.Errorf("%s.clientId: ConfigMap references are not supported, use a Secret", path)
	case o.ClientID.Secret == nil:
		return yaml.MapItem{}, fmt.Errorf("%s.clientId: must be set", path)
	default:
		v, err := r.secret(ns, *o.ClientID.Secret)
		if err != nil {
			return yaml.MapItem{}, fmt.Errorf("%s.clientId: %w", path, err)
		}
		id = v
	}
	secret, err := r.secret(ns, o.ClientSecret)
	if err != nil {
		return yaml.MapItem{}, fmt.Errorf("%s.clientSecret: %w", path, err)
	}
	if o.TokenURL == "" {
		return yaml.MapItem{}, fmt.Errorf("%s.tokenUrl: must be set", path)
	}
	cfg := yaml.MapSlice{
		{Key: "client_id", Value: id},
		{Key: "client_secret", Value: secret},
		{Key: "token_url", Value: string(o.TokenURL)},
	}
	if len(o.Scopes) > 0 {
		cfg = append(cfg, yaml.MapItem{Key: "scopes", Value: o.Scopes})
	}
	if len(o.EndpointParams) > 0 {
		cfg = append(cfg, yaml.MapItem{Key: "endpoint_params", Value: sortedMap(o.EndpointParams)})
	}
	proxy, err := r.proxy(ns, path, &o.ProxyConfig)
	if err != nil {
		return yaml.MapItem{}, err
	}
	cfg = append(cfg, proxy...)
	if o.TLSConfig != nil {
		item, err := r.tlsConfig(ns, path+".tlsConfig", &monitoringv1.TLSConfig{SafeTLSConfig: *o.TLSConfig})
		if err != nil {
			return yaml.MapItem{}, err
		}
		cfg = append(cfg, item)
	}
	return yaml.MapItem{Key: "oauth2", Value: cfg}, nil
}

// tlsConfig renders a tls_config; CAs, certificates and keys from Secrets
// are written inline.
func (r *renderer) tlsConfig(ns, path string, t *monitoringv1.TLSConfig) (yaml.MapItem, error) {
	cfg := yaml.MapSlice{}
	if t.InsecureSkipVerify != nil {
		cfg = append(cfg, yaml.MapItem{Key: "insecure_skip_verify", Value: *t.InsecureSkipVerify})
	}
	for _, f := range []struct {
		field, key, fileField, fileKey, file string
		ref                                  monitoringv1.SecretOrConfigMap
	}{
		{"ca", "ca", "caFile", "ca_file", t.CAFile, t.CA},
		{"cert", "cert", "certFile", "cert_file", t.CertFile, t.Cert},
		{"keySecret", "key", "keyFile", "key_file", t.KeyFile, monitoringv1.SecretOrConfigMap{Secret: t.KeySecret}},
	} {
		switch {
		case f.ref.ConfigMap != nil:
			return yaml.MapItem{}, fmt.Errorf("%s.%s: ConfigMap references are not supported, use a Secret", path, f.field)
		case f.ref.Secret != nil && f.file != "":
			return yaml.MapItem{}, fmt.Errorf("%s: %s and %s are mutually exclusive", path, f.field, f.fileField)
		case f.ref.Secret != nil:
			v, err := r.secret(ns, *f.ref.Secret)
			if err != nil {
				return yaml.MapItem{}, fmt.Errorf("%s.%s: %w", path, f.field, err)
			}
			// Prometheus refuses the whole configuration when a CA holds
			// no certificate it can use: only this monitor is left out.
			if f.key == "ca" && !x509.NewCertPool().AppendCertsFromPEM([]byte(v)) {
				return yaml.MapItem{}, fmt.Errorf("%s.%s: key %q of secret %q holds no PEM certificate", path, f.field, f.ref.Secret.Key, ns+"/"+f.ref.Secret.Name)
			}
			cfg = append(cfg, yaml.MapItem{Key: f.key, Value: v})
		case f.file != "":
			cfg = append(cfg, yaml.MapItem{Key: f.fileKey, Value: f.file})
		}
	}
	hasCert := t.Cert.Secret != nil || t.CertFile != ""
	hasKey := t.KeySecret != nil || t.KeyFile != ""
	if hasCert != hasKey {
		return yaml.MapItem{}, fmt.Errorf("%s: a client certificate and its key must be set together", path)
	}
	if t.ServerName != nil && *t.ServerName != "" {
		cfg = append(cfg, yaml.MapItem{Key: "server_name", Value: *t.ServerName})
	}
	for _, v := range []struct {
		field, key string
		v          *monitoringv1.TLSVersion
	}{
		{"minVersion", "min_version", t.MinVersion},
		{"maxVersion", "max_version", t.MaxVersion},
	} {
		if v.v == nil {
			continue
		}
		switch *v.v {
		case monitoringv1.TLSVersion10, monitoringv1.TLSVersion11, monitoringv1.TLSVersion12, monitoringv1.TLSVersion13:
		default:
			return yaml.MapItem{}, fmt.Errorf("%s.%s: unknown TLS version %q", path, v.field, *v.v)
		}
		cfg = append(cfg, yaml.MapItem{Key: v.key, Value: string(*v.v)})
	}
	// The names of the versions sort in their order.
	if t.MinVersion != nil && t.MaxVersion != nil && *t.MaxVersion < *t.MinVersion {
		return yaml.MapItem{}, fmt.Errorf("%s: maxVersion %q is lower than minVersion %q", path, *t.MaxVersion, *t.MinVersion)
	}
	return yaml.MapItem{Key: "tls_config", Value: cfg}, nil
}

// proxy renders the proxy settings of the object at path, with the
// headers of CONNECT requests read from Secrets.
func (r *renderer) proxy(ns, path string, p *monitoringv1.ProxyConfig) (yaml.MapSlice, error) {
	hasURL := p.ProxyURL != nil && *p.ProxyURL != ""
	noProxy := p.NoProxy != nil && *p.NoProxy != ""
	fromEnv := p.ProxyFromEnvironment != nil && *p.ProxyFromEnvironment
	switch {
	case hasURL && fromEnv:
		return nil, fmt.Errorf("%s: proxyUrl and proxyFromEnvironment are mutually exclusive", path)
	case noProxy && !hasURL:
		return nil, fmt.Errorf("%s.noProxy: requires proxyUrl", path)
	case len(p.ProxyConnectHeader) > 0 && !hasURL && !fromEnv:
		return nil, fmt.Errorf("%s.proxyConnectHeader: requires proxyUrl or proxyFromEnvironment", path)
	}
	var cfg yaml.MapSlice
	if hasURL {
		if err := checkProxyURL(*p.ProxyURL); err != nil {
			return nil, fmt.Errorf("%s.proxyUrl: %w", path, err)
		}
		cfg = append(cfg, yaml.MapItem{Key: "proxy_url", Value: *p.ProxyURL})
	}
	if noProxy {
		cfg = append(cfg, yaml.MapItem{Key: "no_proxy", Value: *p.NoProxy})
	}
	if p.ProxyFromEnvironment != nil {
		cfg = append(cfg, yaml.MapItem{Key: "proxy_from_environment", Value: *p.ProxyFromEnvironment})
	}
	if len(p.ProxyConnectHeader) > 0 {
		names := make([]string, 0, len(p.ProxyConnectHeader))
		for k := range p.ProxyConnectHeader {
			names = append(names, k)
		}
		sort.Strings(names)
		headers := make(yaml.MapSlice, 0, len(names))
		for _, k := range names {
			sels := p.ProxyConnectHeader[k]
			if len(sels) == 0 {
				return nil, fmt.Errorf("%s.proxyConnectHeader[%s]: no value", path, k)
			}
			vals := make([]string, len(sels))
			for i, sel := range sels {
				v, err := r.secret(ns, sel)
				if err != nil {
					return nil, fmt.Errorf("%s.proxyConnectHeader[%s][%d]: %w", path, k, i, err)
				}
				vals[i] = v
			}
			headers = append(headers, yaml.MapItem{Key: k, Value: vals})
		}
		cfg = append(cfg, yaml.MapItem{Key: "proxy_connect_header", Value: headers})
	}
	return cfg, nil
}

func checkProxyURL(s string) error {
	u, err := parseURL(s)
	if err != nil {
		return err
	}
	switch u.Scheme {
	case "http", "https", "socks5":
		return nil
	}
	return fmt.Errorf("%q is not an http, https or socks5 URL", shownURL(u))
}

// parseURL parses s; its error says why without quoting s, which may hold
// a password or a token: errors end up in logs, Events and the status.
func parseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		return nil, fmt.Errorf("not a URL: %w", ue.Err)
	}
	return u, err
}

// shownURL is u fit for logs, Events and the status: its password hidden
// and its query and fragment, where tokens go, left out.
func shownURL(u *url.URL) string {
	c := *u
	c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = "", false, "", ""
	return c.Redacted()
}

// relabelConfig validates the user relabeling at path as Prometheus does
// and renders it as prometheus-operator does.
func (r *renderer) relabelConfig(path string, rc *monitoringv1.RelabelConfig) (yaml.MapSlice, error) {
	c := relabel.DefaultRelabelConfig
	action := strings.ToLower(rc.Action)
	switch a := relabel.Action(action); a {
	case "":
	case relabel.Replace, relabel.Keep, relabel.Drop, relabel.KeepEqual, relabel.DropEqual, relabel.HashMod,
		relabel.LabelMap, relabel.LabelDrop, relabel.LabelKeep, relabel.Lowercase, relabel.Uppercase:
		c.Action = a
	default:
		return nil, fmt.Errorf("%s.action: unknown action %q", path, rc.Action)
	}
	out := make(yaml.MapSlice, 0, 7)
	if len(rc.SourceLabels) > 0 {
		ls := make([]string, len(rc.SourceLabels))
		c.SourceLabels = make(model.LabelNames, len(rc.SourceLabels))
		for i, l := range rc.SourceLabels {
			if !model.UTF8Validation.IsValidLabelName(string(l)) {
				return nil, fmt.Errorf("%s.sourceLabels[%d]: %q is not a valid label name", path, i, l)
			}
			ls[i] = string(l)
			c.SourceLabels[i] = model.LabelName(l)
		}
		out = append(out, yaml.MapItem{Key: "source_labels", Value: ls})
	}
	if rc.Separator != nil {
		c.Separator = *rc.Separator
		out = append(out, yaml.MapItem{Key: "separator", Value: *rc.Separator})
	}
	if rc.TargetLabel != "" {
		c.TargetLabel = rc.TargetLabel
		out = append(out, yaml.MapItem{Key: "target_label", Value: rc.TargetLabel})
	}
	if rc.Regex != "" {
		re, err := r.regexp(rc.Regex)
		if err != nil {
			return nil, fmt.Errorf("%s.regex: %w", path, err)
		}
		c.Regex = re
		out = append(out, yaml.MapItem{Key: "regex", Value: rc.Regex})
	}
	if rc.Modulus != 0 {
		if rc.Modulus < 0 {
			return nil, fmt.Errorf("%s.modulus: %d is negative", path, rc.Modulus)
		}
		c.Modulus = uint64(rc.Modulus)
		out = append(out, yaml.MapItem{Key: "modulus", Value: rc.Modulus})
	}
	if rc.Replacement != nil {
		c.Replacement = *rc.Replacement
		out = append(out, yaml.MapItem{Key: "replacement", Value: *rc.Replacement})
	}
	if action != "" {
		out = append(out, yaml.MapItem{Key: "action", Value: action})
	}
	if err := c.Validate(model.UTF8Validation); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// regexp compiles a regular expression as Prometheus does, once per
// rendering: monitors tend to share them.
func (r *renderer) regexp(s string) (relabel.Regexp, error) {
	if c, ok := r.regexps[s]; ok {
		return c.re, c.err
	}
	re, err := relabel.NewRegexp(s)
	if r.regexps == nil {
		r.regexps = map[string]compiledRegexp{}
	}
	r.regexps[s] = compiledRegexp{re, err}
	return re, err
}

type compiledRegexp struct {
	re  relabel.Regexp
	err error
}

// selectorRelabelings keeps the targets whose object (service or pod,
// prefix __meta_kubernetes_<object>) the label selector matches.
func selectorRelabelings(sel *metav1.LabelSelector, prefix string) []yaml.MapSlice {
	out := make([]yaml.MapSlice, 0, len(sel.MatchLabels)+len(sel.MatchExpressions))
	keys := make([]string, 0, len(sel.MatchLabels))
	for k := range sel.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		n := sanitizeLabelName(k)
		out = append(out, keep([]string{prefix + "_label_" + n, prefix + "_labelpresent_" + n}, "("+sel.MatchLabels[k]+");true"))
	}
	for _, e := range sel.MatchExpressions {
		n := sanitizeLabelName(e.Key)
		switch e.Operator {
		case metav1.LabelSelectorOpIn:
			out = append(out, keep([]string{prefix + "_label_" + n, prefix + "_labelpresent_" + n}, "("+strings.Join(e.Values, "|")+");true"))
		case metav1.LabelSelectorOpNotIn:
			out = append(out, drop([]string{prefix + "_label_" + n, prefix + "_labelpresent_" + n}, "("+strings.Join(e.Values, "|")+");true"))
		case metav1.LabelSelectorOpExists:
			out = append(out, keep([]string{prefix + "_labelpresent_" + n}, "true"))
		case metav1.LabelSelectorOpDoesNotExist:
			out = append(out, drop([]string{prefix + "_labelpresent_" + n}, "true"))
		}
	}
	return out
}

// endpointLabel returns the value of the endpoint target label, as
// prometheus-operator sets it: the port name, else the deprecated
// targetPort (even when portNumber chose the port, and "0" for a zero
// number), else none. portNumber alone sets no endpoint label.
func endpointLabel(port string, targetPort *intstr.IntOrString) string {
	switch {
	case port != "":
		return port
	case targetPort != nil:
		return targetPort.String()
	}
	return ""
}

// targetPortFilter keeps the targets on a container port, by name or
// number; nil for a zero port.
func (r *renderer) targetPortFilter(p *intstr.IntOrString) (yaml.MapSlice, error) {
	switch {
	case p.Type == intstr.String && p.StrVal != "":
		if _, err := r.regexp(p.StrVal); err != nil {
			return nil, err
		}
		return keep([]string{"__meta_kubernetes_pod_container_port_name"}, p.StrVal), nil
	case p.Type == intstr.Int && p.IntVal != 0:
		return keep([]string{"__meta_kubernetes_pod_container_port_number"}, p.String()), nil
	}
	return nil, nil
}

func jobNameRelabeling() yaml.MapSlice {
	return copyLabel("job", "__tmp_prometheus_job_name")
}

func runningFilter() yaml.MapSlice {
	return drop([]string{"__meta_kubernetes_pod_phase"}, "(Failed|Succeeded)")
}

func keep(source []string, regex string) yaml.MapSlice {
	return yaml.MapSlice{
		{Key: "action", Value: "keep"},
		{Key: "source_labels", Value: source},
		{Key: "regex", Value: regex},
	}
}

func drop(source []string, regex string) yaml.MapSlice {
	return yaml.MapSlice{
		{Key: "action", Value: "drop"},
		{Key: "source_labels", Value: source},
		{Key: "regex", Value: regex},
	}
}

func copyLabel(from, to string) yaml.MapSlice {
	return yaml.MapSlice{
		{Key: "source_labels", Value: []string{from}},
		{Key: "target_label", Value: to},
	}
}

// labelFrom sets label to the value of source when it is not empty.
func labelFrom(source, label string) yaml.MapSlice {
	return yaml.MapSlice{
		{Key: "source_labels", Value: []string{source}},
		{Key: "target_label", Value: label},
		{Key: "regex", Value: "(.+)"},
		{Key: "replacement", Value: "${1}"},
	}
}

func setLabel(label, value string) yaml.MapSlice {
	return yaml.MapSlice{
		{Key: "target_label", Value: label},
		{Key: "replacement", Value: value},
	}
}

// sanitizeLabelName replaces the characters Kubernetes allows in label
// names and Prometheus' meta labels do not with underscores.
func sanitizeLabelName(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, name)
}

func knownScrapeProtocol(p monitoringv1.ScrapeProtocol) bool {
	switch p {
	case monitoringv1.PrometheusProto, monitoringv1.PrometheusText0_0_4, monitoringv1.PrometheusText1_0_0,
		monitoringv1.OpenMetricsText0_0_1, monitoringv1.OpenMetricsText1_0_0:
		return true
	}
	return false
}

func positiveDuration(s string) (model.Duration, error) {
	d, err := model.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q is not positive", s)
	}
	return d, nil
}

// sortedMap returns m ordered by key.
func sortedMap[V any](m map[string]V) yaml.MapSlice {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(yaml.MapSlice, len(keys))
	for i, k := range keys {
		out[i] = yaml.MapItem{Key: k, Value: m[k]}
	}
	return out
}

// encodeYAML writes cfg in block style, laid out as yaml.v2 lays it out,
// into a buffer of size bytes to start with. It is several times faster
// than yaml.Marshal and makes a fraction of its garbage, for the values
// the configuration holds: yaml.MapSlice, []yaml.MapSlice, []string,
// string, bool, int64 and float64.
func encodeYAML(cfg yaml.MapSlice, size int) ([]byte, error) {
	// The buffer is passed by value, not kept in a struct: an append then
	// needs no write barrier, which costs while the collector runs.
	return appendMapping(make([]byte, 0, size), cfg, 0, false)
}

// spaces indent by slicing.
const spaces = "                                                                "

func appendIndent(buf []byte, n int) []byte {
	for ; n > len(spaces); n -= len(spaces) {
		buf = append(buf, spaces...)
	}
	return append(buf, spaces[:n]...)
}

// appendMapping appends m with its keys at column indent; inline says that
// the first key follows a "- " already written.
func appendMapping(buf []byte, m yaml.MapSlice, indent int, inline bool) ([]byte, error) {
	for i, it := range m {
		if i > 0 || !inline {
			buf = appendIndent(buf, indent)
		}
		k, ok := it.Key.(string)
		if !ok {
			return nil, fmt.Errorf("encode yaml: key %v is not a string", it.Key)
		}
		buf = appendYAMLString(buf, k)
		buf = append(buf, ':')
		var err error
		if buf, err = appendValue(buf, it.Value, indent); err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// appendValue appends the value of a key at column indent, from the colon
// on.
func appendValue(buf []byte, v any, indent int) ([]byte, error) {
	switch v := v.(type) {
	case string:
		buf = append(buf, ' ')
		buf = appendYAMLString(buf, v)
	case bool:
		buf = append(buf, ' ')
		buf = strconv.AppendBool(buf, v)
	case int64:
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, v, 10)
	case float64:
		buf = append(buf, ' ')
		buf = strconv.AppendFloat(buf, v, 'g', -1, 64)
	case yaml.MapSlice:
		if len(v) == 0 {
			return append(buf, " {}\n"...), nil
		}
		buf = append(buf, '\n')
		return appendMapping(buf, v, indent+2, false)
	case []yaml.MapSlice:
		if len(v) == 0 {
			return append(buf, " []\n"...), nil
		}
		buf = append(buf, '\n')
		for _, m := range v {
			buf = appendIndent(buf, indent)
			if len(m) == 0 {
				buf = append(buf, "- {}\n"...)
				continue
			}
			buf = append(buf, "- "...)
			var err error
			if buf, err = appendMapping(buf, m, indent+2, true); err != nil {
				return nil, err
			}
		}
		return buf, nil
	case []string:
		if len(v) == 0 {
			return append(buf, " []\n"...), nil
		}
		buf = append(buf, '\n')
		for _, s := range v {
			buf = appendIndent(buf, indent)
			buf = append(buf, "- "...)
			buf = appendYAMLString(buf, s)
			buf = append(buf, '\n')
		}
		return buf, nil
	default:
		return nil, fmt.Errorf("encode yaml: unsupported value of type %T", v)
	}
	return append(buf, '\n'), nil
}

// appendYAMLString appends s as a plain scalar when that is certain to
// read back as the same string, else double-quoted: Go's escapes are a
// subset of YAML's.
func appendYAMLString(buf []byte, s string) []byte {
	if plainYAML(s) {
		return append(buf, s...)
	}
	return strconv.AppendQuote(buf, s)
}

// plainYAML reports whether s can be written as a plain scalar in block
// context and read back as the same string by yaml.v2, which Prometheus
// parses its configuration with. It errs on the side of quoting.
func plainYAML(s string) bool {
	return plainScalar(s, "")
}

// plainScalar is plainYAML with the characters of inner also allowed
// after the first one; the caller ensures they are safe where they are.
func plainScalar(s, inner string) bool {
	if s == "" {
		return false
	}
	first := s[0]
	switch {
	case isAlnum(first), first == '_', first == '/', first == '$', first == '(', first == '^', first == '.', first == ';':
	default:
		// Indicators, signs and anything else.
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case plainByte(c):
		case c == ':':
			// "a:" would start a mapping; "a:b" is a scalar.
			if i == len(s)-1 {
				return false
			}
		case strings.IndexByte(inner, c) < 0:
			// Spaces, '#', quotes, control and non-ASCII characters.
			return false
		}
	}
	switch {
	case first >= '0' && first <= '9' || first == '.':
		// Numbers, timestamps and base 60 numbers are not strings, and
		// "..." ends a document.
		if strings.HasPrefix(s, "...") {
			return false
		}
		if strings.ContainsAny(s, "-:") || strings.HasPrefix(s, "0b") || strings.HasPrefix(s, "0o") || strings.HasPrefix(s, "0x") {
			return false
		}
		n := strings.ReplaceAll(s, "_", "")
		if _, err := strconv.ParseFloat(n, 64); err == nil {
			return false
		}
		if len(s) == 4 && (strings.EqualFold(s, ".inf") || strings.EqualFold(s, ".nan")) {
			return false
		}
	case len(s) <= len("false"):
		// Booleans and null, in YAML 1.1.
		for _, w := range [...]string{"y", "yes", "n", "no", "on", "off", "true", "false", "null"} {
			if strings.EqualFold(s, w) {
				return false
			}
		}
	}
	return true
}

// plainLow and plainHigh are the sets of the bytes below 64 and from 64 to
// 127 that are safe anywhere in a plain scalar: letters, digits and
// _./$(){}[]|;+*?^-=@%~,<>\ (the bit of a byte is 1 << (byte % 64)).
const (
	plainLow uint64 = 1<<'$' | 1<<'%' | 1<<'(' | 1<<')' | 1<<'*' | 1<<'+' | 1<<',' | 1<<'-' | 1<<'.' | 1<<'/' |
		0x3ff<<'0' | 1<<';' | 1<<'<' | 1<<'=' | 1<<'>' | 1<<'?'
	plainHigh uint64 = 1<<('@'-64) | 0x3ffffff<<('A'-64) | 1<<('['-64) | 1<<('\\'-64) | 1<<(']'-64) | 1<<('^'-64) |
		1<<('_'-64) | 0x3ffffff<<('a'-64) | 1<<('{'-64) | 1<<('|'-64) | 1<<('}'-64) | 1<<('~'-64)
)

// plainByte reports whether c is safe anywhere in a plain scalar.
func plainByte(c byte) bool {
	if c < 64 {
		return plainLow>>c&1 != 0
	}
	return c < 128 && plainHigh>>(c-64)&1 != 0
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
