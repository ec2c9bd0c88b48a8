package prometheus

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
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
	"github.com/podreload/podreload/controller/configsecret"
	"github.com/podreload/podreload/controller/promyaml"
	"github.com/podreload/podreload/controller/store"
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
	// ConfigMaps holds the ConfigMaps the monitors reference (TLS CAs and
	// certificates, OAuth2 client ids), by "namespace/name".
	ConfigMaps map[string]*corev1.ConfigMap
	// Parts keeps the gzipped parts of a split configuration from one
	// render to the next; nil compresses every part.
	Parts *configsecret.Cache
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

// configParts is a configuration rendered before its rule files are
// known: the configuration is the global section, the rule_files section,
// then the body: scrape_configs made of jobs, and rest, already encoded.
// render builds and encodes the scrape configurations, the bulk of the
// work, while it renders the rules. Each job is encoded as soon as its
// monitor is rendered and its tree dropped, and the body is never joined
// into one buffer: at 20,000 endpoints the trees took 70 MB and the
// joined body 58 MB more, while the encoded jobs take 47 MB, of which
// configsecret.Stream holds 16 MiB at most.
type configParts struct {
	global yaml.MapSlice
	// jobs are the scrape jobs, in order.
	jobs *configsecret.Stream
	// rest are the sections after scrape_configs, encoded.
	rest []byte
	// secrets are the Secrets the configuration references, found or not.
	secrets []store.Ref
}

// body returns the body of the configuration, in pieces (configsecret.Gzip and
// a hash take them as they are), or nil when its jobs are split.
func (p configParts) body() [][]byte {
	switch {
	case p.jobs.Splitting():
		return nil
	case len(p.jobs.Held()) == 0:
		return [][]byte{[]byte("scrape_configs: []\n"), p.rest}
	}
	b := make([][]byte, 0, len(p.jobs.Held())+2)
	b = append(b, []byte(configsecret.ScrapeConfigsKey))
	for _, j := range p.jobs.Held() {
		b = append(b, j.Item)
	}
	return append(b, p.rest)
}

// renderConfigParts renders prometheus.yaml but for its rule files, and
// returns the monitors it left out; configParts.head writes what comes
// before the body with the rule files. The output is deterministic:
// monitors are ordered by namespace and name whatever the order of the
// input.
//
// The configuration follows prometheus-operator's conventions: one job per
// ServiceMonitor endpoint (serviceMonitor/<namespace>/<name>/<i>), per
// PodMonitor endpoint (podMonitor/<namespace>/<name>/<i>), per Probe
// (probe/<namespace>/<name>) and per ScrapeConfig
// (scrapeConfig/<namespace>/<name>), in this order, then the additional
// scrape configurations, the same built-in relabelings and target labels,
// and credentials read from Secrets and written inline. A monitor that
// cannot be rendered (an invalid selector or relabeling, a missing Secret,
// a scrape timeout longer than its interval, a feature this renderer does
// not support...) is left out whole and reported as a rejection. An error
// means the PrometheusServer itself cannot be rendered; the parts then
// hold only the Secrets looked up.
func renderConfigParts(in configInput) (configParts, []rejection, error) {
	r := newRenderer(in)
	parts, rejected, err := r.config(in)
	parts.secrets = r.lookup.Refs()
	if err != nil {
		// The Secrets looked up before the error go with it: one of them
		// may be what the server is waiting for.
		return configParts{secrets: parts.secrets}, nil, fmt.Errorf("render config: %w", err)
	}
	return parts, rejected, nil
}

// head returns what comes before p.body in the configuration with the
// rule files ruleFiles: the global and rule_files sections.
func (p configParts) head(ruleFiles []string) ([]byte, error) {
	files, err := ruleFilesSection(ruleFiles)
	if err != nil {
		return nil, fmt.Errorf("render config: %w", err)
	}
	b, err := promyaml.Encode(slices.Concat(p.global, files), 1<<10)
	if err != nil {
		return nil, fmt.Errorf("render config: %w", err)
	}
	return b, nil
}

func newRenderer(in configInput) *renderer {
	return &renderer{lookup: store.NewLookup(store.Objects{Secrets: in.Secrets, ConfigMaps: in.ConfigMaps}), srv: in.Server}
}

// renderer renders one configuration: it holds the inputs and what it
// has looked up and compiled so far.
type renderer struct {
	// lookup reads the Secrets of in and records those looked up so far,
	// found or not: a change to any of them can change the configuration.
	lookup *store.Lookup
	srv    *v1alpha1.PrometheusServer
	// scratch is the buffer jobs are encoded into (addJobs).
	scratch []byte
	// interval is the global scrape interval, the default of every job, as
	// a duration and as written.
	interval     model.Duration
	intervalText string
	// regexps caches the regular expressions compiled so far.
	regexps map[string]compiledRegexp
	// classes are the scrape classes of the server by name, and
	// defaultClass the name of the default one, or "" (scrapeClasses).
	classes      map[string]*scrapeClass
	defaultClass string
}

// config renders the configuration of in, with r made from in, but for
// the Secrets it references.
func (r *renderer) config(in configInput) (configParts, []rejection, error) {
	if in.Server == nil {
		return configParts{}, nil, errors.New("no PrometheusServer")
	}
	server, err := r.renderServer()
	if err != nil {
		return configParts{}, nil, err
	}
	if err := r.scrapeClasses(); err != nil {
		return configParts{}, nil, err
	}
	var (
		rejected []rejection
		addErr   error
		jobs     = &configsecret.Stream{Cache: in.Parts}
		p        = configParts{global: yaml.MapSlice{server.global}, jobs: jobs}
	)
	err = r.eachMonitor(in, func(kind, namespace, name string, js []yaml.MapSlice, err error) {
		if err != nil {
			rejected = append(rejected, rejection{Kind: kind, Namespace: namespace, Name: name, Reason: err.Error()})
			return
		}
		jobs.Monitors = append(jobs.Monitors, configsecret.Monitor{Kind: kind, Namespace: namespace, Name: name})
		if addErr == nil {
			addErr = r.addJobs(jobs, len(jobs.Monitors)-1, js)
		}
	})
	if err = cmp.Or(err, addErr); err != nil {
		return configParts{}, nil, err
	}

	extra, err := r.additionalJobs(jobs.Names)
	if err != nil {
		return configParts{}, nil, err
	}
	if err := r.addJobs(jobs, configsecret.Additional, extra); err != nil {
		return configParts{}, nil, err
	}

	// The order of prometheus-operator: global, rule_files (which
	// configParts.head adds), scrape_configs, alerting, remote_write.
	if p.rest, err = promyaml.Encode(server.rest, 4<<10); err != nil {
		return configParts{}, nil, err
	}
	return p, rejected, nil
}

// eachMonitor renders the jobs of each monitor of in, ServiceMonitors,
// PodMonitors, Probes then ScrapeConfigs, each kind by namespace and name,
// and calls add with them, or with the reason the monitor has none.
func (r *renderer) eachMonitor(in configInput, add func(kind, namespace, name string, js []yaml.MapSlice, err error)) error {
	sms, err := sortedObjects(in.ServiceMonitors, monitoringv1.ServiceMonitorsKind)
	if err != nil {
		return err
	}
	pms, err := sortedObjects(in.PodMonitors, monitoringv1.PodMonitorsKind)
	if err != nil {
		return err
	}
	probes, err := sortedObjects(in.Probes, monitoringv1.ProbesKind)
	if err != nil {
		return err
	}
	scs, err := sortedObjects(in.ScrapeConfigs, monitoringv1alpha1.ScrapeConfigsKind)
	if err != nil {
		return err
	}
	for _, sm := range sms {
		js, err := r.serviceMonitorJobs(sm)
		add(monitoringv1.ServiceMonitorsKind, sm.Namespace, sm.Name, js, err)
	}
	for _, pm := range pms {
		js, err := r.podMonitorJobs(pm)
		add(monitoringv1.PodMonitorsKind, pm.Namespace, pm.Name, js, err)
	}
	for _, pr := range probes {
		j, err := r.probeJob(pr)
		add(monitoringv1.ProbesKind, pr.Namespace, pr.Name, []yaml.MapSlice{j}, err)
	}
	for _, sc := range scs {
		j, err := r.scrapeConfigJob(sc)
		add(monitoringv1alpha1.ScrapeConfigsKind, sc.Namespace, sc.Name, []yaml.MapSlice{j}, err)
	}
	return nil
}

// addJobs adds js, the jobs of the monitor m, to jobs, encoded. Each is
// encoded into r's scratch buffer and copied out at its size: a 3 KiB
// buffer per job, grown as it is written, took 14% more room (58 MB
// instead of 51 MB at 20,000 endpoints).
func (r *renderer) addJobs(jobs *configsecret.Stream, m int, js []yaml.MapSlice) error {
	encoded := make([]configsecret.Job, 0, len(js))
	for _, j := range js {
		b, err := promyaml.AppendMapping(r.scratch[:0], yaml.MapSlice{{Key: "scrape_configs", Value: []yaml.MapSlice{j}}}, 0, false)
		if err != nil {
			return err
		}
		r.scratch = b
		encoded = append(encoded, configsecret.Job{Monitor: m, Name: jobName(j), Item: bytes.Clone(b[len(configsecret.ScrapeConfigsKey):])})
	}
	return jobs.Add(encoded)
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
