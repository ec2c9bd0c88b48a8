package promcfg

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/podreload/podreload/controller/promcfg/relabeling"
	"github.com/podreload/podreload/controller/promyaml"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	yaml "go.yaml.in/yaml/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// monitorSpec is a ServiceMonitor or a PodMonitor as scrapeJobs renders
// it: what tells the two kinds apart, and the fields of their specs that
// have the same name and meaning.
type monitorSpec struct {
	namespace, name string
	// selectorKind is service or pod: the object whose labels the
	// selector matches, and the kind of monitor.
	selectorKind string
	// jobPrefix and endpointsField name the jobs (<jobPrefix>/<namespace>/
	// <name>/<i>) and the endpoints in errors (<endpointsField>[<i>]).
	jobPrefix, endpointsField string
	// role is the kubernetes_sd_configs role; addressMeta, of a
	// ServiceMonitor, the prefix of the meta labels of its endpoints.
	role, addressMeta string
	// portNameLabel is the meta label that names an endpoint's port.
	portNameLabel string
	// targetLabels are a ServiceMonitor's service labels to copy.
	targetLabels           []string
	jobLabel               string
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
	port string
	// portNumber is set by PodMonitors only.
	portNumber               *int32
	targetPort               *intstr.IntOrString
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
	// class is the scrape class of the object, nil for none: its TLS
	// settings and authorization are merged into the endpoint's.
	class *scrapeClass
}

// serviceMonitorJobs renders the scrape jobs of sm, one per endpoint.
//
// serviceMonitorJobs and podMonitorJobs, with serviceEndpoint and
// podEndpoint, copy the fields the two kinds share one by one: upstream
// declares them in two struct types, which Go cannot convert into one
// another. Everything else is scrapeJobs, for both.
func (r *renderer) serviceMonitorJobs(sm *monitoringv1.ServiceMonitor) ([]yaml.MapSlice, error) {
	s := &sm.Spec
	role, meta := r.endpointRole(r.srv.Spec.ServiceDiscoveryRole)
	if s.ServiceDiscoveryRole != nil {
		switch *s.ServiceDiscoveryRole {
		case monitoringv1.EndpointsRole, monitoringv1.EndpointSliceRole:
			role, meta = r.endpointRole(s.ServiceDiscoveryRole)
		default:
			return nil, fmt.Errorf("serviceDiscoveryRole: %q is not Endpoints or EndpointSlice", *s.ServiceDiscoveryRole)
		}
	}
	if r.srv.Spec.ArbitraryFSAccessThroughSMs.Deny {
		if err := fileAccess(s.Endpoints); err != nil {
			return nil, err
		}
	}
	if err := notRendered(s.ExtraScrapeMetrics); err != nil {
		return nil, err
	}
	m := monitorSpec{
		namespace:              sm.Namespace,
		name:                   sm.Name,
		selectorKind:           "service",
		jobPrefix:              "serviceMonitor",
		endpointsField:         "endpoints",
		role:                   role,
		addressMeta:            meta,
		portNameLabel:          meta + "_port_name",
		targetLabels:           s.TargetLabels,
		jobLabel:               s.JobLabel,
		podTargetLabels:        slices.Concat(s.PodTargetLabels, r.srv.Spec.PodTargetLabels),
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
	return scrapeJobs(r, &m, s.Endpoints, serviceEndpoint)
}

// fileAccess is why an endpoint of eps reads the pod's files, which
// spec.arbitraryFSAccessThroughSMs.deny forbids ServiceMonitors, as
// prometheus-operator (testForArbitraryFSAccess); nil when none does.
func fileAccess(eps []monitoringv1.Endpoint) error {
	for i, ep := range eps {
		var field string
		switch t := ep.TLSConfig; {
		case ep.BearerTokenFile != "":
			field = "bearerTokenFile"
		case t != nil && t.CAFile != "":
			field = "tlsConfig.caFile"
		case t != nil && t.CertFile != "":
			field = "tlsConfig.certFile"
		case t != nil && t.KeyFile != "":
			field = "tlsConfig.keyFile"
		default:
			continue
		}
		return fmt.Errorf("endpoints[%d].%s: reads a file of the pod, which spec.arbitraryFSAccessThroughSMs.deny forbids", i, field)
	}
	return nil
}

// endpointRole is the kubernetes_sd role of the service discovery role d
// (nil is Endpoints) and the prefix of its endpoints' meta labels:
// endpointslice for EndpointSlice from Prometheus 2.21 (which added the
// role), endpoints otherwise, as prometheus-operator's generator. The
// server's role (spec.serviceDiscoveryRole) was checked by renderServer.
func (r *renderer) endpointRole(d *monitoringv1.ServiceDiscoveryRole) (role, meta string) {
	if d != nil && *d == monitoringv1.EndpointSliceRole && r.version.AtLeast(2, 21) {
		return "endpointslice", "__meta_kubernetes_endpointslice"
	}
	return "endpoints", "__meta_kubernetes_endpoint"
}

// podMonitorJobs renders the scrape jobs of pm, one per endpoint.
func (r *renderer) podMonitorJobs(pm *monitoringv1.PodMonitor) ([]yaml.MapSlice, error) {
	s := &pm.Spec
	if err := notRendered(s.ExtraScrapeMetrics); err != nil {
		return nil, err
	}
	m := monitorSpec{
		namespace:              pm.Namespace,
		name:                   pm.Name,
		selectorKind:           "pod",
		jobPrefix:              "podMonitor",
		endpointsField:         "podMetricsEndpoints",
		role:                   "pod",
		portNameLabel:          "__meta_kubernetes_pod_container_port_name",
		jobLabel:               s.JobLabel,
		podTargetLabels:        slices.Concat(s.PodTargetLabels, r.srv.Spec.PodTargetLabels),
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
	return scrapeJobs(r, &m, s.PodMetricsEndpoints, podEndpoint)
}

func serviceEndpoint(ep *monitoringv1.Endpoint) endpoint {
	return endpoint{
		port:                     ep.Port,
		targetPort:               ep.TargetPort,
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
}

func podEndpoint(ep *monitoringv1.PodMetricsEndpoint) endpoint {
	e := endpoint{
		portNumber:               ep.PortNumber,
		targetPort:               ep.TargetPort,
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
		proxy:                    ep.ProxyConfig,
		relabelings:              ep.RelabelConfigs,
		metricRelabelings:        ep.MetricRelabelConfigs,
	}
	if ep.Port != nil {
		e.port = *ep.Port
	}
	if ep.TLSConfig != nil {
		e.tls = &monitoringv1.TLSConfig{SafeTLSConfig: *ep.TLSConfig}
	}
	return e
}

// scrapeJobs renders the scrape jobs of the monitor m, one per endpoint of
// eps, which endpointOf converts: the one path of ServiceMonitors and
// PodMonitors.
func scrapeJobs[E any](r *renderer, m *monitorSpec, eps []E, endpointOf func(*E) endpoint) ([]yaml.MapSlice, error) {
	parts, err := r.monitorParts(m)
	if err != nil {
		return nil, err
	}
	jobs := make([]yaml.MapSlice, 0, len(eps))
	for i := range eps {
		e := endpointOf(&eps[i])
		e.class = parts.class
		// Concatenated rather than formatted: fmt would allocate for each
		// string argument, thousands of times per configuration.
		index := strconv.Itoa(i)
		path := m.endpointsField + "[" + index + "]"
		rl, err := r.builtinRelabelings(m, &parts, &e, path)
		if err != nil {
			return nil, err
		}
		job, err := r.job(m.namespace, &parts, &e, m.jobPrefix+"/"+m.namespace+"/"+m.name+"/"+index, path, rl)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, job)
	}
	return jobs, nil
}

// builtinRelabelings returns the relabelings of prometheus-operator for
// the endpoint e of m, at path, in its order; room is left for the
// endpoint's own.
func (r *renderer) builtinRelabelings(m *monitorSpec, parts *monitorParts, e *endpoint, path string) ([]yaml.MapSlice, error) {
	service := m.selectorKind == "service"
	filterRunning := e.filterRunning == nil || *e.filterRunning
	rl := make([]yaml.MapSlice, 0, 16+len(parts.selector)+len(m.targetLabels)+len(m.podTargetLabels)+len(parts.class.relabelings)+len(e.relabelings))
	rl = append(rl, relabeling.JobName())
	if !service && filterRunning {
		rl = append(rl, relabeling.RunningFilter())
	}
	rl = append(rl, parts.selector...)
	f, err := r.portFilter(m, e, path)
	if err != nil {
		return nil, err
	}
	if f != nil {
		rl = append(rl, f)
	}
	if service {
		kindName := []string{m.addressMeta + "_address_target_kind", m.addressMeta + "_address_target_name"}
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
			relabeling.CopyLabel("__meta_kubernetes_namespace", "namespace"),
			relabeling.CopyLabel("__meta_kubernetes_service_name", "service"),
			relabeling.CopyLabel("__meta_kubernetes_pod_name", "pod"),
			relabeling.CopyLabel("__meta_kubernetes_pod_container_name", "container"),
		)
		if filterRunning {
			rl = append(rl, relabeling.RunningFilter())
		}
		for _, l := range m.targetLabels {
			rl = append(rl, relabeling.LabelFrom("__meta_kubernetes_service_label_"+relabeling.SanitizeLabelName(l), relabeling.SanitizeLabelName(l)))
		}
	} else {
		rl = append(rl,
			relabeling.CopyLabel("__meta_kubernetes_namespace", "namespace"),
			relabeling.CopyLabel("__meta_kubernetes_pod_container_name", "container"),
			relabeling.CopyLabel("__meta_kubernetes_pod_name", "pod"),
		)
	}
	for _, l := range m.podTargetLabels {
		rl = append(rl, relabeling.LabelFrom("__meta_kubernetes_pod_label_"+relabeling.SanitizeLabelName(l), relabeling.SanitizeLabelName(l)))
	}
	if service {
		rl = append(rl, yaml.MapSlice{
			{Key: "source_labels", Value: []string{"__meta_kubernetes_service_name"}},
			{Key: "target_label", Value: "job"},
			{Key: "replacement", Value: "${1}"},
		})
	} else {
		rl = append(rl, relabeling.SetLabel("job", m.namespace+"/"+m.name))
	}
	if m.jobLabel != "" {
		rl = append(rl, relabeling.LabelFrom("__meta_kubernetes_"+m.selectorKind+"_label_"+relabeling.SanitizeLabelName(m.jobLabel), "job"))
	}
	if l := relabeling.EndpointLabel(e.port, e.targetPort); l != "" {
		rl = append(rl, relabeling.SetLabel("endpoint", l))
	}
	return rl, nil
}

// portFilter keeps the targets on the port of e: by name, by number
// (PodMonitors only) or by the deprecated targetPort; nil for none.
func (r *renderer) portFilter(m *monitorSpec, e *endpoint, path string) (yaml.MapSlice, error) {
	switch {
	case e.port != "":
		if _, err := r.relabel.Regexp(e.port); err != nil {
			return nil, fmt.Errorf("%s.port: %w", path, err)
		}
		return relabeling.Keep([]string{m.portNameLabel}, e.port), nil
	case e.portNumber != nil && *e.portNumber != 0:
		if *e.portNumber < 1 || *e.portNumber > 65535 {
			return nil, fmt.Errorf("%s.portNumber: %d is not a port number", path, *e.portNumber)
		}
		return relabeling.Keep([]string{"__meta_kubernetes_pod_container_port_number"}, strconv.Itoa(int(*e.portNumber))), nil
	case e.targetPort != nil:
		f, err := r.relabel.TargetPortFilter(e.targetPort)
		if err != nil {
			return nil, fmt.Errorf("%s.targetPort: %w", path, err)
		}
		return f, nil
	}
	return nil, nil
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
	// enforced is the label spec.enforcedNamespaceLabel sets on every
	// target and series of the monitor (EnforcedLabel), or "".
	enforced string
	// class is the scrape class of the monitor.
	class *scrapeClass
}

// monitorParts checks the monitor-wide fields of s and renders what its
// jobs share. The attachMetadata and fallbackScrapeProtocol of its scrape
// class fill in those s leaves unset.
func (r *renderer) monitorParts(s *monitorSpec) (monitorParts, error) {
	class, err := r.scrapeClass(s.scrapeClass)
	if err != nil {
		return monitorParts{}, err
	}
	if s.attachMetadata == nil {
		s.attachMetadata = class.attachMetadata
	}
	if s.fallbackScrapeProtocol == nil {
		s.fallbackScrapeProtocol = class.fallbackScrapeProtocol
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

	sd := r.kubernetesSD(s.role, s.namespaceSelector, s.namespace)
	if s.attachMetadata != nil {
		node := s.attachMetadata.Node != nil && *s.attachMetadata.Node
		sd = append(sd, yaml.MapItem{Key: "attach_metadata", Value: yaml.MapSlice{{Key: "node", Value: node}}})
	}
	if r.daemonSet {
		sd = append(sd, nodeSelector())
	}

	tail, err := r.monitorTail(s)
	if err != nil {
		return monitorParts{}, err
	}
	for _, l := range s.targetLabels {
		if l == "" {
			return monitorParts{}, errors.New("targetLabels: empty label name")
		}
	}

	kind := monitoringv1.ServiceMonitorsKind
	if s.selectorKind == "pod" {
		kind = monitoringv1.PodMonitorsKind
	}
	return monitorParts{
		sd:       yaml.MapItem{Key: "kubernetes_sd_configs", Value: []yaml.MapSlice{sd}},
		selector: relabeling.Selector(&s.selector, "__meta_kubernetes_"+s.selectorKind),
		tail:     tail,
		enforced: EnforcedLabel(&r.srv.Spec, kind, s.namespace, s.name),
		class:    class,
	}, nil
}

// job renders the scrape job of endpoint e of a monitor in namespace ns;
// path names the endpoint in errors, relabelings are the built-in ones.
func (r *renderer) job(ns string, parts *monitorParts, e *endpoint, name, path string, relabelings []yaml.MapSlice) (yaml.MapSlice, error) {
	job := make(yaml.MapSlice, 0, 24)
	job = append(job,
		yaml.MapItem{Key: "job_name", Value: name},
		yaml.MapItem{Key: "honor_labels", Value: e.honorLabels && !r.srv.Spec.OverrideHonorLabels},
	)
	job = append(job, r.honorTimestamps(e.honorTimestamps)...)
	if e.trackTimestampsStaleness != nil {
		job = append(job, yaml.MapItem{Key: "track_timestamps_staleness", Value: *e.trackTimestampsStaleness})
	}
	job = append(job, parts.sd)

	intervals, err := r.scrapeIntervals(path+".interval", path+".scrapeTimeout", e.interval, e.scrapeTimeout)
	if err != nil {
		return nil, err
	}
	job = append(job, intervals...)
	if e.path != "" {
		job = append(job, yaml.MapItem{Key: "metrics_path", Value: e.path})
	}
	proxy, err := r.cred.Proxy(ns, path, &e.proxy)
	if err != nil {
		return nil, err
	}
	job = append(job, proxy...)
	if len(e.params) > 0 {
		job = append(job, yaml.MapItem{Key: "params", Value: promyaml.SortedMap(e.params)})
	}
	scheme, err := schemeItem(path+".scheme", e.scheme)
	if err != nil {
		return nil, err
	}
	job = append(job, scheme...)
	if e.http.FollowRedirects != nil {
		job = append(job, yaml.MapItem{Key: "follow_redirects", Value: *e.http.FollowRedirects})
	}
	if e.http.EnableHTTP2 != nil {
		job = append(job, yaml.MapItem{Key: "enable_http2", Value: *e.http.EnableHTTP2})
	}

	auth, err := r.endpointAuth(ns, path, e)
	if err != nil {
		return nil, err
	}
	job = append(job, auth...)

	return r.jobRelabelings(job, ns, parts, e, path, relabelings)
}

// honorTimestamps is the honor_timestamps of a job whose object says
// honor (nil: nothing): false with the server's overrideHonorTimestamps,
// none before Prometheus 2.9, as prometheus-operator.
func (r *renderer) honorTimestamps(honor *bool) yaml.MapSlice {
	override := r.srv.Spec.OverrideHonorTimestamps
	if honor == nil && !override || !r.version.AtLeast(2, 9) {
		return nil
	}
	return yaml.MapSlice{{Key: "honor_timestamps", Value: ptr.Deref(honor, false) && !override}}
}

// jobRelabelings appends to job its relabel_configs (relabelings, then
// the scrape class's, the endpoint's, the enforced namespace label's and
// the shards'), the monitor's tail, and its metric_relabel_configs.
func (r *renderer) jobRelabelings(job yaml.MapSlice, ns string, parts *monitorParts, e *endpoint, path string, relabelings []yaml.MapSlice) (yaml.MapSlice, error) {
	relabelings = append(relabelings, parts.class.relabelings...)
	relabelings, err := r.relabelConfigs(relabelings, path+".relabelings", e.relabelings)
	if err != nil {
		return nil, err
	}
	relabelings = appendEnforced(relabelings, parts.enforced, ns)
	relabelings = relabeling.AppendSharding(relabelings, r.shards, model.AddressLabel)
	job = append(job, yaml.MapItem{Key: "relabel_configs", Value: relabelings})
	job = append(job, parts.tail...)
	return r.appendMetricRelabelings(job, parts.class, path+".metricRelabelings", e.metricRelabelings, parts.enforced, ns)
}

// notRendered refuses a monitor, a Probe or a ScrapeConfig that sets
// extraScrapeMetrics, a field of prometheus-operator v0.95: what its
// generator renders for it cannot be checked, for the module proxy serves
// no prometheus-operator v0.95 (the one TestOperatorConfigDiff runs is
// v0.93.1).
func notRendered(extraScrapeMetrics *bool) error {
	if extraScrapeMetrics != nil {
		return errors.New("extraScrapeMetrics: not rendered: what prometheus-operator v0.95 renders for it cannot be checked yet")
	}
	return nil
}
