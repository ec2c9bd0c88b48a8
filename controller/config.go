package controller

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/common/model"
	yaml "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/podreload/podreload/api/v1alpha1"
)

// ruleFilePattern is Prometheus' rule for rule_files: one wildcard at
// most, in the last path element.
var ruleFilePattern = regexp.MustCompile(`^[^*]*(\*[^/]*)?$`)

// configInput is what the Prometheus configuration is rendered from.
type configInput struct {
	// Server is the PrometheusServer the configuration is for.
	Server *v1alpha1.PrometheusServer
	// ServiceMonitors are the ServiceMonitors the server selected.
	ServiceMonitors []*monitoringv1.ServiceMonitor
	// PodMonitors are the PodMonitors the server selected.
	PodMonitors []*monitoringv1.PodMonitor
	// Probes are the Probes the server selected.
	Probes []*monitoringv1.Probe
	// ScrapeConfigs are the ScrapeConfigs the server selected.
	ScrapeConfigs []*monitoringv1alpha1.ScrapeConfig
	// Secrets holds the Secrets the server and the monitors reference, by
	// "namespace/name".
	Secrets map[string]*corev1.Secret
}

// rejection is an object left out of the configuration, and why (for an
// Event and the status).
type rejection struct {
	// Kind of the object: ServiceMonitor, PodMonitor, Probe, ScrapeConfig
	// or PrometheusRule.
	Kind string
	// Namespace of the object.
	Namespace string
	// Name of the object.
	Name string
	// Reason names the field at fault and the cause.
	Reason string
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
// then tail, already encoded. render builds and encodes the scrape
// configurations, the bulk of the work, while it renders the rules.
type configParts struct {
	global yaml.MapSlice
	tail   []byte
	// rest are the sections after scrape_configs, encoded in tail: split
	// encodes them on their own.
	rest yaml.MapSlice
	// secrets are the Secrets the configuration references, found or not.
	secrets []string
	// monitors are the scrape jobs of each monitor, to tell which take
	// the most room.
	monitors []monitorJobs
}

// renderConfigParts renders prometheus.yaml but for its rule files, and
// returns the monitors it left out; configParts.head writes what comes
// before the rest with the rule files. The output is deterministic:
// monitors are ordered by namespace and name whatever the order of the
// input.
//
// The configuration follows prometheus-operator's conventions: one job per
// ServiceMonitor endpoint (serviceMonitor/<namespace>/<name>/<i>), per
// PodMonitor endpoint (podMonitor/<namespace>/<name>/<i>), per Probe
// (probe/<namespace>/<name>) and per ScrapeConfig
// (scrapeConfig/<namespace>/<name>), in this order, the same built-in
// relabelings and target labels, and credentials read from Secrets and
// written inline. A monitor that cannot be rendered (an invalid selector or
// relabeling, a missing Secret, a scrape timeout longer than its interval,
// a feature this renderer does not support...) is left out whole and
// reported as a rejection. An error means the PrometheusServer itself
// cannot be rendered; the parts then hold only the Secrets looked up.
func renderConfigParts(in configInput) (configParts, []rejection, error) {
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
	return configParts{global: cfg[:1], tail: tail, rest: cfg[2:], secrets: secrets, monitors: r.monitors}, rejected, nil
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

func newRenderer(in configInput) *renderer {
	return &renderer{secrets: in.Secrets, srv: in.Server, secretRefs: map[string]struct{}{}}
}

// renderer renders one configuration: it holds the inputs and what it
// has looked up and compiled so far.
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
	// classes are the scrape classes of the server by name, and
	// defaultClass the name of the default one, or "" (scrapeClasses).
	classes      map[string]*scrapeClass
	defaultClass string
}

// config renders the configuration of in, with r made from in.
func (r *renderer) config(in configInput) (yaml.MapSlice, []rejection, error) {
	if in.Server == nil {
		return nil, nil, errors.New("no PrometheusServer")
	}
	server, err := r.renderServer()
	if err != nil {
		return nil, nil, err
	}
	if err := r.scrapeClasses(); err != nil {
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
	probes, err := sortedObjects(in.Probes, monitoringv1.ProbesKind)
	if err != nil {
		return nil, nil, err
	}
	scs, err := sortedObjects(in.ScrapeConfigs, monitoringv1alpha1.ScrapeConfigsKind)
	if err != nil {
		return nil, nil, err
	}

	var rejected []rejection
	jobs := []yaml.MapSlice{}
	// add keeps the jobs of a monitor, or the reason it has none.
	add := func(kind, namespace, name string, js []yaml.MapSlice, err error) {
		if err != nil {
			rejected = append(rejected, rejection{Kind: kind, Namespace: namespace, Name: name, Reason: err.Error()})
			return
		}
		jobs = append(jobs, js...)
		r.monitors = append(r.monitors, monitorJobs{kind: kind, namespace: namespace, name: name, jobs: js})
	}
	for _, sm := range sms {
		js, err := r.serviceMonitorJobs(sm)
		add(monitoringv1.ServiceMonitorsKind, sm.Namespace, sm.Name, js, err)
	}
	for _, pm := range pms {
		js, err := r.podMonitorJobs(pm)
		add(monitoringv1.PodMonitorsKind, pm.Namespace, pm.Name, js, err)
	}
	for _, p := range probes {
		j, err := r.probeJob(p)
		add(monitoringv1.ProbesKind, p.Namespace, p.Name, []yaml.MapSlice{j}, err)
	}
	for _, sc := range scs {
		j, err := r.scrapeConfigJob(sc)
		add(monitoringv1alpha1.ScrapeConfigsKind, sc.Namespace, sc.Name, []yaml.MapSlice{j}, err)
	}

	extra, err := r.additionalJobs(jobs)
	if err != nil {
		return nil, nil, err
	}
	jobs = append(jobs, extra...)

	// The order of prometheus-operator: global, rule_files (which
	// configParts.head adds), scrape_configs, alerting, remote_write.
	cfg := yaml.MapSlice{server.global}
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

// monitorJobs are the scrape jobs of one monitor.
type monitorJobs struct {
	kind, namespace, name string
	jobs                  []yaml.MapSlice
}

// namespaced is a ServiceMonitor, a PodMonitor, a Probe, a ScrapeConfig or
// a PrometheusRule.
type namespaced interface {
	*monitoringv1.ServiceMonitor | *monitoringv1.PodMonitor | *monitoringv1.Probe |
		*monitoringv1alpha1.ScrapeConfig | *monitoringv1.PrometheusRule
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
