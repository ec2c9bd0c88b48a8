package promcfg

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/podreload/podreload/controller/promcfg/relabeling"
	"github.com/podreload/podreload/controller/promyaml"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	yaml "go.yaml.in/yaml/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	// defaultProberPath is the default of a Probe's prober.path in its CRD.
	defaultProberPath = "/probe"
	// labelParamTarget is the target parameter of a probe: what a Probe's
	// targets are, and what its jobs are sharded on.
	labelParamTarget = "__param_target"
)

// probeJob renders the scrape job of the Probe p as prometheus-operator
// does: probe/<namespace>/<name>, scraping the prober at prober.url with
// each target as its target parameter; static targets win over ingress
// ones.
func (r *renderer) probeJob(p *monitoringv1.Probe) (yaml.MapSlice, error) {
	s, ns := &p.Spec, p.Namespace
	class, err := r.scrapeClass(s.ScrapeClassName)
	if err != nil {
		return nil, err
	}
	if err := notRendered(s.ExtraScrapeMetrics); err != nil {
		return nil, err
	}
	if err := checkProberURL(s.ProberSpec.URL); err != nil {
		return nil, fmt.Errorf("prober.url: %w", err)
	}
	metricsPath := s.ProberSpec.Path
	if metricsPath == "" {
		metricsPath = defaultProberPath
	}
	job := append(yaml.MapSlice{{Key: "job_name", Value: "probe/" + ns + "/" + p.Name}}, r.honorTimestamps(ptr.To(true))...)
	job = append(job, yaml.MapItem{Key: "metrics_path", Value: metricsPath})
	intervals, err := r.scrapeIntervals("interval", "scrapeTimeout", s.Interval, s.ScrapeTimeout)
	if err != nil {
		return nil, err
	}
	job = append(job, intervals...)
	scheme, err := schemeItem("prober.scheme", s.ProberSpec.Scheme)
	if err != nil {
		return nil, err
	}
	job = append(job, scheme...)
	params, err := probeParams(s)
	if err != nil {
		return nil, err
	}
	job = append(job, params...)
	proxy, err := r.cred.Proxy(ns, "prober", &s.ProberSpec.ProxyConfig)
	if err != nil {
		return nil, err
	}
	job = append(job, proxy...)
	e := &endpoint{http: s.HTTPConfigWithoutTLS, class: class}
	// The Probe's own authorization field hides the one of HTTPConfig.
	e.http.Authorization = s.Authorization
	if s.TLSConfig != nil {
		e.tls = &monitoringv1.TLSConfig{SafeTLSConfig: *s.TLSConfig}
	}
	job = append(job, httpOptions(&e.http)...)
	auth, err := r.endpointAuth(ns, "", e)
	if err != nil {
		return nil, err
	}
	job = append(job, auth...)

	enforced := EnforcedLabel(&r.srv.Spec, monitoringv1.ProbesKind, ns, p.Name)
	targets, relabelings, err := r.probeTargets(p, class, enforced)
	if err != nil {
		return nil, err
	}
	job = append(job, targets, yaml.MapItem{Key: "relabel_configs", Value: relabeling.AppendSharding(relabelings, r.shards, labelParamTarget)})
	tail, err := r.monitorTail(&monitorSpec{
		sampleLimit:            s.SampleLimit,
		targetLimit:            s.TargetLimit,
		labelLimit:             s.LabelLimit,
		labelNameLengthLimit:   s.LabelNameLengthLimit,
		labelValueLengthLimit:  s.LabelValueLengthLimit,
		keepDroppedTargets:     s.KeepDroppedTargets,
		scrapeProtocols:        s.ScrapeProtocols,
		fallbackScrapeProtocol: cmp.Or(s.FallbackScrapeProtocol, class.fallbackScrapeProtocol),
		nativeHistograms:       s.NativeHistogramConfig,
	})
	if err != nil {
		return nil, err
	}
	job = append(job, tail...)
	return r.appendMetricRelabelings(job, class, "metricRelabelings", s.MetricRelabelConfigs, enforced, ns)
}

// probeTargets renders the targets of p, static or from ingresses, and the
// relabelings of its job, prometheus-operator's, the scrape class's, the
// user's and the enforced namespace label's (enforced) but for the
// shards'.
func (r *renderer) probeTargets(p *monitoringv1.Probe, class *scrapeClass, enforced string) (yaml.MapItem, []yaml.MapSlice, error) {
	t := &p.Spec.Targets
	rl := []yaml.MapSlice{relabeling.JobName()}
	if p.Spec.JobName != "" {
		rl = append(rl, relabeling.SetLabel("job", p.Spec.JobName))
	}
	prober := []yaml.MapSlice{
		relabeling.CopyLabel(labelParamTarget, "instance"),
		relabeling.SetLabel(model.AddressLabel, p.Spec.ProberSpec.URL),
	}
	var (
		sd    yaml.MapItem
		user  []monitoringv1.RelabelConfig
		field string
	)
	switch {
	case t.StaticConfig != nil:
		labels := map[string]string{"namespace": p.Namespace}
		for k, v := range t.StaticConfig.Labels {
			if !model.UTF8Validation.IsValidLabelName(k) {
				return yaml.MapItem{}, nil, fmt.Errorf("targets.staticConfig.labels: %q is not a valid label name", k)
			}
			labels[k] = v
		}
		targets := t.StaticConfig.Targets
		if targets == nil {
			targets = []string{}
		}
		sd = yaml.MapItem{Key: "static_configs", Value: []yaml.MapSlice{{
			{Key: "targets", Value: targets},
			{Key: "labels", Value: promyaml.SortedMap(labels)},
		}}}
		rl = append(rl, relabeling.CopyLabel(model.AddressLabel, labelParamTarget))
		rl = append(rl, prober...)
		user, field = t.StaticConfig.RelabelConfigs, "targets.staticConfig.relabelingConfigs"
	case t.Ingress != nil:
		if _, err := metav1.LabelSelectorAsSelector(&t.Ingress.Selector); err != nil {
			return yaml.MapItem{}, nil, fmt.Errorf("targets.ingress.selector: %w", err)
		}
		sd = yaml.MapItem{Key: "kubernetes_sd_configs", Value: []yaml.MapSlice{r.kubernetesSD("ingress", t.Ingress.NamespaceSelector, p.Namespace)}}
		rl = append(rl, relabeling.Selector(&t.Ingress.Selector, "__meta_kubernetes_ingress")...)
		rl = append(rl,
			yaml.MapSlice{
				{Key: "source_labels", Value: []string{"__meta_kubernetes_ingress_scheme", model.AddressLabel, "__meta_kubernetes_ingress_path"}},
				{Key: "separator", Value: ";"},
				{Key: "regex", Value: "(.+);(.+);(.+)"},
				{Key: "target_label", Value: labelParamTarget},
				{Key: "replacement", Value: "${1}://${2}${3}"},
				{Key: "action", Value: "replace"},
			},
			relabeling.CopyLabel("__meta_kubernetes_namespace", "namespace"),
			relabeling.CopyLabel("__meta_kubernetes_ingress_name", "ingress"),
			yaml.MapSlice{
				{Key: "source_labels", Value: []string{model.AddressLabel}},
				{Key: "separator", Value: ";"},
				{Key: "regex", Value: "(.*)"},
				{Key: "target_label", Value: "__tmp_ingress_address"},
				{Key: "replacement", Value: "$1"},
				{Key: "action", Value: "replace"},
			},
		)
		rl = append(rl, prober...)
		user, field = t.Ingress.RelabelConfigs, "targets.ingress.relabelingConfigs"
	default:
		return yaml.MapItem{}, nil, errors.New("targets: at least one of staticConfig and ingress is required")
	}
	rl, err := r.relabelConfigs(append(rl, class.relabelings...), field, user)
	if err != nil {
		return yaml.MapItem{}, nil, err
	}
	return sd, appendEnforced(rl, enforced, p.Namespace), nil
}

// probeParams renders the parameters of a Probe's scrapes: module first,
// then params, whose module spec.module overrides, as prometheus-operator.
func probeParams(s *monitoringv1.ProbeSpec) (yaml.MapSlice, error) {
	var params yaml.MapSlice
	seen := map[string]bool{}
	if s.Module != "" {
		params = append(params, yaml.MapItem{Key: "module", Value: []string{s.Module}})
		seen["module"] = true
	}
	for i, p := range s.Params {
		switch {
		case p.Name == "":
			return nil, fmt.Errorf("params[%d].name: must be set", i)
		case p.Name == "module" && s.Module != "":
			continue
		case seen[p.Name]:
			return nil, fmt.Errorf("params[%d].name: %q is set twice", i, p.Name)
		}
		seen[p.Name] = true
		params = append(params, yaml.MapItem{Key: p.Name, Value: p.Values})
	}
	if len(params) == 0 {
		return nil, nil
	}
	return yaml.MapSlice{{Key: "params", Value: params}}, nil
}

// checkProberURL checks that u is what a prober URL must be, as
// prometheus-operator wants it: a host name or address, with a port or
// not, and nothing else.
func checkProberURL(u string) error {
	if u == "" {
		return errors.New("must be set")
	}
	host := u
	if h, port, err := net.SplitHostPort(u); err == nil {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: %q is not a port number", u, port)
		}
		host = h
	}
	if host == "" || strings.ContainsAny(host, "/?#@ \t") || strings.Count(host, ":") == 1 {
		return fmt.Errorf("%q is not hostname or hostname:port", u)
	}
	return nil
}

// httpOptions renders followRedirects and enableHttp2 of h.
func httpOptions(h *monitoringv1.HTTPConfigWithoutTLS) yaml.MapSlice {
	var items yaml.MapSlice
	if h.FollowRedirects != nil {
		items = append(items, yaml.MapItem{Key: "follow_redirects", Value: *h.FollowRedirects})
	}
	if h.EnableHTTP2 != nil {
		items = append(items, yaml.MapItem{Key: "enable_http2", Value: *h.EnableHTTP2})
	}
	return items
}

// kubernetesSD is a kubernetes_sd_configs item of role in the namespaces
// sel selects for an object of namespace ns: every one, the names it
// lists, or ns alone (always, with the server's ignoreNamespaceSelectors);
// then the API server of spec.apiserverConfig, if any.
func (r *renderer) kubernetesSD(role string, sel monitoringv1.NamespaceSelector, ns string) yaml.MapSlice {
	sd := yaml.MapSlice{{Key: "role", Value: role}}
	switch {
	case r.srv.Spec.IgnoreNamespaceSelectors:
		sd = append(sd, yaml.MapItem{Key: "namespaces", Value: yaml.MapSlice{{Key: "names", Value: []string{ns}}}})
	case sel.Any:
	case len(sel.MatchNames) > 0:
		sd = append(sd, yaml.MapItem{Key: "namespaces", Value: yaml.MapSlice{{Key: "names", Value: sel.MatchNames}}})
	default:
		sd = append(sd, yaml.MapItem{Key: "namespaces", Value: yaml.MapSlice{{Key: "names", Value: []string{ns}}}})
	}
	return append(sd, r.apiServer...)
}

// appendMetricRelabelings appends to job the metric_relabel_configs of
// the scrape class, of rcs, the field at path, and the enforced namespace
// label's, if any.
func (r *renderer) appendMetricRelabelings(job yaml.MapSlice, class *scrapeClass, path string, rcs []monitoringv1.RelabelConfig, enforced, ns string) (yaml.MapSlice, error) {
	if len(class.metricRelabelings) == 0 && len(rcs) == 0 && enforced == "" {
		return job, nil
	}
	mrl := make([]yaml.MapSlice, 0, len(class.metricRelabelings)+len(rcs)+1)
	mrl, err := r.relabelConfigs(append(mrl, class.metricRelabelings...), path, rcs)
	if err != nil {
		return nil, err
	}
	return append(job, yaml.MapItem{Key: "metric_relabel_configs", Value: appendEnforced(mrl, enforced, ns)}), nil
}
