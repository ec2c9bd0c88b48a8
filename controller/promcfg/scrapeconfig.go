package promcfg

import (
	"cmp"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/podreload/podreload/controller/promcfg/credential"
	"github.com/podreload/podreload/controller/promcfg/relabeling"
	"github.com/podreload/podreload/controller/promyaml"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/common/model"
	yaml "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// sdFilePattern is Prometheus' rule for the files of file_sd_configs: JSON
// or YAML, with one wildcard at most, in the file name.
var sdFilePattern = regexp.MustCompile(`^[^*]*(\*[^/]*)?\.(json|yml|yaml|JSON|YML|YAML)$`)

// supportedSD are the service discoveries of ScrapeConfigs rendered, by
// field: the others (consul, EC2, Azure...) are not compiled into the
// Prometheus the tests run, and a ScrapeConfig using one is left out.
func supportedSD() map[string]bool {
	return map[string]bool{
		"staticConfigs":       true,
		"fileSDConfigs":       true,
		"httpSDConfigs":       true,
		"kubernetesSDConfigs": true,
		"dnsSDConfigs":        true,
	}
}

// scrapeConfigJob renders the scrape job of the ScrapeConfig sc as
// prometheus-operator does: scrapeConfig/<namespace>/<name>, with its
// static targets and service discoveries; without any, a job without
// targets.
func (r *renderer) scrapeConfigJob(sc *monitoringv1alpha1.ScrapeConfig) (yaml.MapSlice, error) {
	s, ns := &sc.Spec, sc.Namespace
	class, err := r.scrapeClass(s.ScrapeClassName)
	if err != nil {
		return nil, err
	}
	if err := unsupportedSD(s); err != nil {
		return nil, err
	}
	if err := notRendered(s.ExtraScrapeMetrics); err != nil {
		return nil, err
	}
	job := yaml.MapSlice{{Key: "job_name", Value: "scrapeConfig/" + ns + "/" + sc.Name}}
	job = append(job, r.scrapeOptions(s)...)
	var interval, timeout monitoringv1.Duration
	if s.ScrapeInterval != nil {
		interval = *s.ScrapeInterval
	}
	if s.ScrapeTimeout != nil {
		timeout = *s.ScrapeTimeout
	}
	intervals, err := r.scrapeIntervals("scrapeInterval", "scrapeTimeout", interval, timeout)
	if err != nil {
		return nil, err
	}
	job = append(job, intervals...)
	scheme, err := schemeItem("scheme", s.Scheme)
	if err != nil {
		return nil, err
	}
	job = append(job, scheme...)
	client, err := r.httpClient(ns, "", &sdClient{basicAuth: s.BasicAuth, authorization: s.Authorization, oauth2: s.OAuth2, tls: s.TLSConfig, proxy: s.ProxyConfig, class: class})
	if err != nil {
		return nil, err
	}
	job = append(job, client...)
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
		bodySizeLimit:          s.BodySizeLimit,
	})
	if err != nil {
		return nil, err
	}
	job = append(job, tail...)
	names, err := nameSchemes(s)
	if err != nil {
		return nil, err
	}
	job = append(job, names...)
	sds, err := r.scrapeConfigSDs(sc)
	if err != nil {
		return nil, err
	}
	job = append(job, sds...)
	return r.scrapeConfigRelabelings(job, sc, class)
}

// scrapeOptions renders the options of s that need no check, in
// prometheus-operator's order; the server's overrideHonorTimestamps and
// overrideHonorLabels make those s sets false.
func (r *renderer) scrapeOptions(s *monitoringv1alpha1.ScrapeConfigSpec) yaml.MapSlice {
	var items yaml.MapSlice
	spec := &r.srv.Spec
	for _, b := range []struct {
		key      string
		v        *bool
		override bool
	}{
		{"honor_timestamps", s.HonorTimestamps, spec.OverrideHonorTimestamps},
		{"track_timestamps_staleness", s.TrackTimestampsStaleness, false},
		{"honor_labels", s.HonorLabels, spec.OverrideHonorLabels},
	} {
		if b.v != nil {
			items = append(items, yaml.MapItem{Key: b.key, Value: *b.v && !b.override})
		}
	}
	if s.MetricsPath != nil {
		items = append(items, yaml.MapItem{Key: "metrics_path", Value: *s.MetricsPath})
	}
	if len(s.Params) > 0 {
		items = append(items, yaml.MapItem{Key: "params", Value: promyaml.SortedMap(s.Params)})
	}
	if s.EnableCompression != nil {
		items = append(items, yaml.MapItem{Key: "enable_compression", Value: *s.EnableCompression})
	}
	if s.EnableHTTP2 != nil {
		items = append(items, yaml.MapItem{Key: "enable_http2", Value: *s.EnableHTTP2})
	}
	return items
}

// scrapeConfigRelabelings appends to job the relabel_configs and
// metric_relabel_configs of sc: prometheus-operator's (the scrape class's
// right after the first, as prometheus-operator orders them), the user's,
// the enforced namespace label's, and the shards' unless a relabeling of
// the class's or the user's already does a hashmod.
func (r *renderer) scrapeConfigRelabelings(job yaml.MapSlice, sc *monitoringv1alpha1.ScrapeConfig, class *scrapeClass) (yaml.MapSlice, error) {
	rl := append([]yaml.MapSlice{relabeling.JobName()}, class.relabelings...)
	if sc.Spec.JobName != nil {
		rl = append(rl, yaml.MapSlice{
			{Key: "target_label", Value: "job"},
			{Key: "action", Value: "replace"},
			{Key: "replacement", Value: *sc.Spec.JobName},
		})
	}
	rl, err := r.relabelConfigs(rl, "relabelings", sc.Spec.RelabelConfigs)
	if err != nil {
		return nil, err
	}
	enforced := EnforcedLabel(&r.srv.Spec, monitoringv1alpha1.ScrapeConfigsKind, sc.Namespace, sc.Name)
	rl = appendEnforced(rl, enforced, sc.Namespace)
	if !hasHashmod(rl) {
		rl = relabeling.AppendSharding(rl, r.shards, model.AddressLabel)
	}
	job = append(job, yaml.MapItem{Key: "relabel_configs", Value: rl})
	return r.appendMetricRelabelings(job, class, "metricRelabelings", sc.Spec.MetricRelabelConfigs, enforced, sc.Namespace)
}

// unsupportedSD refuses a ScrapeConfig that uses a service discovery
// outside supportedSD: every field of its spec named *SDConfigs is one.
func unsupportedSD(s *monitoringv1alpha1.ScrapeConfigSpec) error {
	supported := supportedSD()
	v := reflect.ValueOf(s).Elem()
	for _, f := range reflect.VisibleFields(v.Type()) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !strings.HasSuffix(f.Name, "SDConfigs") || supported[name] || f.Type.Kind() != reflect.Slice {
			continue
		}
		if v.FieldByIndex(f.Index).Len() > 0 {
			return fmt.Errorf("unsupported service discovery %s: only staticConfigs, fileSDConfigs, httpSDConfigs, kubernetesSDConfigs and dnsSDConfigs are rendered", name)
		}
	}
	return nil
}

// nameSchemes renders the metric name validation and escaping schemes of
// s, as prometheus-operator does.
func nameSchemes(s *monitoringv1alpha1.ScrapeConfigSpec) (yaml.MapSlice, error) {
	var items yaml.MapSlice
	if v := s.NameValidationScheme; v != nil {
		switch *v {
		case monitoringv1.UTF8NameValidationScheme, monitoringv1.LegacyNameValidationScheme:
		default:
			return nil, fmt.Errorf("nameValidationScheme: unknown scheme %q", *v)
		}
		items = append(items, yaml.MapItem{Key: "metric_name_validation_scheme", Value: strings.ToLower(string(*v))})
	}
	if v := s.NameEscapingScheme; v != nil {
		escaping := map[monitoringv1.NameEscapingSchemeOptions]string{
			monitoringv1.AllowUTF8NameEscapingScheme:   "allow-utf-8",
			monitoringv1.UnderscoresNameEscapingScheme: "underscores",
			monitoringv1.DotsNameEscapingScheme:        "dots",
			monitoringv1.ValuesNameEscapingScheme:      "values",
		}[*v]
		if escaping == "" {
			return nil, fmt.Errorf("nameEscapingScheme: unknown scheme %q", *v)
		}
		items = append(items, yaml.MapItem{Key: "metric_name_escaping_scheme", Value: escaping})
	}
	return items, nil
}

// scrapeConfigSDs renders the static targets and service discoveries of
// sc.
func (r *renderer) scrapeConfigSDs(sc *monitoringv1alpha1.ScrapeConfig) (yaml.MapSlice, error) {
	s := &sc.Spec
	var items yaml.MapSlice
	add := func(key string, configs []yaml.MapSlice) {
		if len(configs) > 0 {
			items = append(items, yaml.MapItem{Key: key, Value: configs})
		}
	}
	static, err := staticConfigs(s.StaticConfigs)
	if err != nil {
		return nil, err
	}
	add("static_configs", static)
	files, err := fileSDConfigs(s.FileSDConfigs)
	if err != nil {
		return nil, err
	}
	add("file_sd_configs", files)
	https, err := r.httpSDConfigs(sc.Namespace, s.HTTPSDConfigs)
	if err != nil {
		return nil, err
	}
	add("http_sd_configs", https)
	k8s, err := r.kubernetesSDConfigs(sc.Namespace, s.KubernetesSDConfigs)
	if err != nil {
		return nil, err
	}
	add("kubernetes_sd_configs", k8s)
	dns, err := dnsSDConfigs(s.DNSSDConfigs)
	if err != nil {
		return nil, err
	}
	add("dns_sd_configs", dns)
	return items, nil
}

func staticConfigs(scs []monitoringv1alpha1.StaticConfig) ([]yaml.MapSlice, error) {
	var out []yaml.MapSlice
	for i, c := range scs {
		targets := make([]string, len(c.Targets))
		for j, t := range c.Targets {
			targets[j] = string(t)
		}
		sc := yaml.MapSlice{{Key: "targets", Value: targets}}
		for k := range c.Labels {
			if !model.UTF8Validation.IsValidLabelName(k) {
				return nil, fmt.Errorf("staticConfigs[%d].labels: %q is not a valid label name", i, k)
			}
		}
		if len(c.Labels) > 0 {
			sc = append(sc, yaml.MapItem{Key: "labels", Value: promyaml.SortedMap(c.Labels)})
		}
		out = append(out, sc)
	}
	return out, nil
}

func fileSDConfigs(fcs []monitoringv1alpha1.FileSDConfig) ([]yaml.MapSlice, error) {
	var out []yaml.MapSlice
	for i, c := range fcs {
		path := "fileSDConfigs[" + strconv.Itoa(i) + "]"
		if len(c.Files) == 0 {
			return nil, fmt.Errorf("%s.files: must be set", path)
		}
		files := make([]string, len(c.Files))
		for j, f := range c.Files {
			if !sdFilePattern.MatchString(string(f)) {
				return nil, fmt.Errorf("%s.files[%d]: %q is not a .json, .yml or .yaml file name with one wildcard at most, in its last element", path, j, f)
			}
			files[j] = string(f)
		}
		fc := yaml.MapSlice{{Key: "files", Value: files}}
		ri, err := refreshInterval(path, c.RefreshInterval)
		if err != nil {
			return nil, err
		}
		out = append(out, append(fc, ri...))
	}
	return out, nil
}

func (r *renderer) httpSDConfigs(ns string, hcs []monitoringv1alpha1.HTTPSDConfig) ([]yaml.MapSlice, error) {
	var out []yaml.MapSlice
	for i := range hcs {
		c := &hcs[i]
		path := "httpSDConfigs[" + strconv.Itoa(i) + "]"
		u, err := credential.ParseURL(string(c.URL))
		if err == nil && (u.Scheme != "http" && u.Scheme != "https" || u.Host == "") {
			err = fmt.Errorf("%q is not an http or https URL", credential.ShownURL(u))
		}
		if err != nil {
			return nil, fmt.Errorf("%s.url: %w", path, err)
		}
		hc := yaml.MapSlice{{Key: "url", Value: string(c.URL)}}
		ri, err := refreshInterval(path, c.RefreshInterval)
		if err != nil {
			return nil, err
		}
		hc = append(hc, ri...)
		client, err := r.httpClient(ns, path, &sdClient{basicAuth: c.BasicAuth, authorization: c.Authorization, oauth2: c.OAuth2,
			tls: c.TLSConfig, proxy: c.ProxyConfig, followRedirects: c.FollowRedirects, enableHTTP2: c.EnableHTTP2})
		if err != nil {
			return nil, err
		}
		out = append(out, append(hc, client...))
	}
	return out, nil
}

func (r *renderer) kubernetesSDConfigs(ns string, kcs []monitoringv1alpha1.KubernetesSDConfig) ([]yaml.MapSlice, error) {
	var out []yaml.MapSlice
	for i := range kcs {
		c := &kcs[i]
		path := "kubernetesSDConfigs[" + strconv.Itoa(i) + "]"
		role := strings.ToLower(string(c.Role))
		selectorRoles, ok := kubernetesSelectorRoles()[role]
		if !ok {
			return nil, fmt.Errorf("%s.role: %q is not Pod, Endpoints, EndpointSlice, Service, Node or Ingress", path, c.Role)
		}
		var kc yaml.MapSlice
		if c.APIServer != nil {
			if c.Namespaces != nil && c.Namespaces.IncludeOwnNamespace != nil && *c.Namespaces.IncludeOwnNamespace {
				return nil, fmt.Errorf("%s: apiServer and namespaces.ownNamespace are mutually exclusive", path)
			}
			kc = append(kc, yaml.MapItem{Key: "api_server", Value: *c.APIServer})
		}
		kc = append(kc, yaml.MapItem{Key: "role", Value: role})
		client, err := r.httpClient(ns, path, &sdClient{basicAuth: c.BasicAuth, authorization: c.Authorization, oauth2: c.OAuth2,
			tls: c.TLSConfig, proxy: c.ProxyConfig, followRedirects: c.FollowRedirects, enableHTTP2: c.EnableHTTP2})
		if err != nil {
			return nil, err
		}
		kc = append(kc, client...)
		if n := c.Namespaces; n != nil {
			names := yaml.MapSlice{{Key: "names", Value: n.Names}}
			if n.IncludeOwnNamespace != nil {
				names = append(names, yaml.MapItem{Key: "own_namespace", Value: *n.IncludeOwnNamespace})
			}
			kc = append(kc, yaml.MapItem{Key: "namespaces", Value: names})
		}
		selectors, err := kubernetesSelectors(path, c, selectorRoles)
		if err != nil {
			return nil, err
		}
		kc = append(kc, selectors...)
		// Prometheus attaches node metadata to these roles only;
		// prometheus-operator leaves it out for the others.
		if c.AttachMetadata != nil && (role == "pod" || role == "endpoints" || role == "endpointslice") {
			node := c.AttachMetadata.Node != nil && *c.AttachMetadata.Node
			kc = append(kc, yaml.MapItem{Key: "attach_metadata", Value: yaml.MapSlice{{Key: "node", Value: node}}})
		}
		out = append(out, kc)
	}
	return out, nil
}

// kubernetesSelectorRoles are, for each role of a kubernetes_sd_config,
// the roles its selectors may have.
func kubernetesSelectorRoles() map[string][]string {
	return map[string][]string{
		"pod":           {"pod"},
		"service":       {"service"},
		"endpointslice": {"pod", "service", "endpointslice"},
		"endpoints":     {"pod", "service", "endpoints"},
		"node":          {"node"},
		"ingress":       {"ingress"},
	}
}

// kubernetesSelectors renders the selectors of c, whose roles may be
// roles.
func kubernetesSelectors(path string, c *monitoringv1alpha1.KubernetesSDConfig, roles []string) (yaml.MapSlice, error) {
	if len(c.Selectors) == 0 {
		return nil, nil
	}
	sels := make([]yaml.MapSlice, len(c.Selectors))
	for j, s := range c.Selectors {
		at := path + ".selectors[" + strconv.Itoa(j) + "]"
		role := strings.ToLower(string(s.Role))
		if !slices.Contains(roles, role) {
			return nil, fmt.Errorf("%s.role: %q: a %s role supports only %s selectors", at, s.Role, c.Role, strings.Join(roles, ", "))
		}
		sels[j] = yaml.MapSlice{{Key: "role", Value: role}}
		if s.Label != nil {
			if _, err := labels.Parse(*s.Label); err != nil {
				return nil, fmt.Errorf("%s.label: %w", at, err)
			}
			sels[j] = append(sels[j], yaml.MapItem{Key: "label", Value: *s.Label})
		}
		if s.Field != nil {
			if _, err := fields.ParseSelector(*s.Field); err != nil {
				return nil, fmt.Errorf("%s.field: %w", at, err)
			}
			sels[j] = append(sels[j], yaml.MapItem{Key: "field", Value: *s.Field})
		}
	}
	return yaml.MapSlice{{Key: "selectors", Value: sels}}, nil
}

func dnsSDConfigs(dcs []monitoringv1alpha1.DNSSDConfig) ([]yaml.MapSlice, error) {
	var out []yaml.MapSlice
	for i, c := range dcs {
		path := "dnsSDConfigs[" + strconv.Itoa(i) + "]"
		if len(c.Names) == 0 {
			return nil, fmt.Errorf("%s.names: must be set", path)
		}
		dc := yaml.MapSlice{{Key: "names", Value: c.Names}}
		ri, err := refreshInterval(path, c.RefreshInterval)
		if err != nil {
			return nil, err
		}
		dc = append(dc, ri...)
		typ := monitoringv1alpha1.DNSRecordTypeSRV
		if c.Type != nil {
			typ = *c.Type
			switch typ {
			case monitoringv1alpha1.DNSRecordTypeSRV, monitoringv1alpha1.DNSRecordTypeA, monitoringv1alpha1.DNSRecordTypeAAAA,
				monitoringv1alpha1.DNSRecordTypeMX, monitoringv1alpha1.DNSRecordTypeNS:
			default:
				return nil, fmt.Errorf("%s.type: unknown record type %q", path, typ)
			}
			dc = append(dc, yaml.MapItem{Key: "type", Value: string(typ)})
		}
		if c.Port != nil {
			if *c.Port < 0 || *c.Port > 65535 {
				return nil, fmt.Errorf("%s.port: %d is not a port number", path, *c.Port)
			}
			dc = append(dc, yaml.MapItem{Key: "port", Value: int64(*c.Port)})
		} else if typ != monitoringv1alpha1.DNSRecordTypeSRV {
			return nil, fmt.Errorf("%s.port: required for record type %q", path, typ)
		}
		out = append(out, dc)
	}
	return out, nil
}

// refreshInterval renders the refresh interval d of the service discovery
// at path.
func refreshInterval(path string, d *monitoringv1.Duration) (yaml.MapSlice, error) {
	if d == nil {
		return nil, nil
	}
	if _, err := model.ParseDuration(string(*d)); err != nil {
		return nil, fmt.Errorf("%s.refreshInterval: %w", path, err)
	}
	return yaml.MapSlice{{Key: "refresh_interval", Value: string(*d)}}, nil
}

// sdClient is the HTTP client of a ScrapeConfig or of one of its service
// discoveries: they spell the same settings in types of their own.
type sdClient struct {
	basicAuth                    *monitoringv1.BasicAuth
	authorization                *monitoringv1.SafeAuthorization
	oauth2                       *monitoringv1.OAuth2
	tls                          *monitoringv1.SafeTLSConfig
	proxy                        monitoringv1.ProxyConfig
	followRedirects, enableHTTP2 *bool
	// class is the scrape class of a ScrapeConfig's own client; nil for
	// its service discoveries'.
	class *scrapeClass
}

// httpClient renders the HTTP client settings c of the object at path
// ("" for the spec's own).
func (r *renderer) httpClient(ns, path string, c *sdClient) (yaml.MapSlice, error) {
	proxy, err := r.cred.Proxy(ns, path, &c.proxy)
	if err != nil {
		return nil, err
	}
	e := &endpoint{http: monitoringv1.HTTPConfigWithoutTLS{
		BasicAuth:       c.basicAuth,
		Authorization:   c.authorization,
		OAuth2:          c.oauth2,
		FollowRedirects: c.followRedirects,
		EnableHTTP2:     c.enableHTTP2,
	}, class: c.class}
	if c.tls != nil {
		e.tls = &monitoringv1.TLSConfig{SafeTLSConfig: *c.tls}
	}
	auth, err := r.endpointAuth(ns, path, e)
	if err != nil {
		return nil, err
	}
	return append(append(proxy, httpOptions(&e.http)...), auth...), nil
}
