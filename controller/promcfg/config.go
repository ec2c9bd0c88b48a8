// Package promcfg renders a Prometheus configuration (prometheus.yaml)
// from a PrometheusServer and the monitors it selected, as
// prometheus-operator's generator does for a Prometheus: Server is the
// entry point of a server (prometheus-operator's
// GenerateServerConfiguration); an agent's (GenerateAgentConfiguration: no
// rules, no alerting) goes beside it. What the kind decides of its layout
// (the shards, where the retention goes) comes in with the Input; the
// scrape jobs stream into a configsecret.Stream, which splits a
// configuration too large for one Secret. It is pure: it reads Secrets and
// ConfigMaps through the Lookup it is given and imports no client.
//
// Two pure sub-packages hold what the sections share: package credential
// (basic auth, authorization, OAuth2, TLS, proxy, from Secrets) and
// package relabeling (built-in and user relabelings, regexps checked once).
//
// Where things are:
//
//	config.go        Input, Server, Parts: the sections, their order, rejections
//	agent.go         Agent: an agent's configuration, its jobs in the agent's order
//	server.go        the sections from the server: global, alerting, remote_write, storage
//	alertmanagers.go the HTTP client settings of an Alertmanager endpoint
//	remotewrite.go   remote_write: its endpoints, their settings
//	remoteauth.go    sigv4 and Azure AD of remote write and Alertmanager endpoints
//	sections.go      remote_read, otlp, tracing, runtime, log files, apiserverConfig
//	additional.go    the additional scrape configurations
//	scrape.go        the scrape jobs of ServiceMonitor and PodMonitor endpoints
//	scrapefields.go  the fields of a scrape job: intervals, scheme, limits, auth
//	scrapeclass.go   scrape classes
//	enforce.go       spec.enforcedNamespaceLabel: which objects, and on scrape jobs
//	probe.go         the scrape job of a Probe
//	scrapeconfig.go  the scrape job of a ScrapeConfig and its service discoveries
package promcfg

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

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/configsecret"
	"github.com/podreload/podreload/controller/promcfg/credential"
	"github.com/podreload/podreload/controller/promcfg/relabeling"
	"github.com/podreload/podreload/controller/promcfg/remote"
	"github.com/podreload/podreload/controller/promyaml"
)

// ruleFilePattern is Prometheus' rule for rule_files: one wildcard at
// most, in the last path element.
var ruleFilePattern = regexp.MustCompile(`^[^*]*(\*[^/]*)?$`)

// Input is what a Prometheus configuration is rendered from: the server,
// the objects it selected, and what the kind decides of its layout
// (Shards, Retention).
type Input struct {
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
	// Lookup reads the keys of the Secrets the server and the monitors
	// reference, and of the ConfigMaps the monitors reference (TLS CAs
	// and certificates, OAuth2 client ids): a *store.Lookup, which records
	// what was looked up, found or not.
	Lookup Lookup
	// Parts keeps the gzipped parts of a split configuration from one
	// render to the next; nil compresses every part.
	Parts *configsecret.Cache
	// Shards is the number of shards of the server, at least 1: each
	// keeps the targets of its own hash (appendSharding).
	Shards int
	// Retention, when not nil, is the retention of storage.tsdb
	// (prometheus-operator's layout writes it there from Prometheus 3.11).
	Retention yaml.MapSlice
	// Version is the Prometheus version the configuration is for
	// (ParseVersion: "" is the newest): what an older Prometheus lacks is
	// left out, as prometheus-operator's generator does.
	Version string
	// DaemonSet renders the configuration of an agent of a DaemonSet, one
	// per node (Agent): prometheus-operator's DaemonSet mode.
	DaemonSet bool
}

// Lookup reads the value of a key of a Secret or a ConfigMap; its errors
// name the object and the key.
type Lookup = credential.Lookup

// Rejection is an object left out of the configuration, and why (for an
// Event and the status).
type Rejection struct {
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

// Parts is a configuration rendered before its rule files are
// known: the configuration is the global section, the rule_files section,
// then the body: scrape_configs made of jobs, and rest, already encoded.
// The kind's render builds and encodes the scrape configurations, the
// bulk of the work, while it renders the rules. Each job is encoded as soon as its
// monitor is rendered and its tree dropped, and the body is never joined
// into one buffer: at 20,000 endpoints the trees took 70 MB and the
// joined body 58 MB more, while the encoded jobs take 47 MB, of which
// configsecret.Stream holds 16 MiB at most.
type Parts struct {
	global yaml.MapSlice
	// Jobs are the scrape jobs, in order.
	Jobs *configsecret.Stream
	// Rest are the sections after scrape_configs, encoded.
	Rest []byte
}

// Body returns the body of the configuration, in pieces (configsecret.Gzip
// and a hash take them as they are), or nil when its jobs are split.
func (p Parts) Body() [][]byte {
	switch {
	case p.Jobs.Splitting():
		return nil
	case len(p.Jobs.Held()) == 0:
		return [][]byte{[]byte("scrape_configs: []\n"), p.Rest}
	}
	b := make([][]byte, 0, len(p.Jobs.Held())+2)
	b = append(b, []byte(configsecret.ScrapeConfigsKey))
	for _, j := range p.Jobs.Held() {
		b = append(b, j.Item)
	}
	return append(b, p.Rest)
}

// Server renders the prometheus.yaml of a Prometheus server but for its
// rule files, and returns the monitors it left out; Parts.Head writes
// what comes before the body with the rule files. (An agent's, without
// rules and alerting, is the entry point to add beside it, as
// prometheus-operator's GenerateAgentConfiguration is beside
// GenerateServerConfiguration.) The output is deterministic:
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
// not support...) is left out whole and reported as a Rejection. An error
// means the PrometheusServer itself cannot be rendered; in.Lookup then
// holds the Secrets looked up before it, one of which may be what the
// server is waiting for.
func Server(in Input) (Parts, []Rejection, error) {
	r := newRenderer(in)
	parts, rejected, err := r.config(in)
	if err != nil {
		return Parts{}, nil, fmt.Errorf("render config: %w", err)
	}
	return parts, rejected, nil
}

// Head returns what comes before p.Body in the configuration with the
// rule files ruleFiles: the global, runtime and rule_files sections.
func (p Parts) Head(ruleFiles []string) ([]byte, error) {
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

func newRenderer(in Input) *renderer {
	shards := max(in.Shards, 1)
	if in.DaemonSet {
		shards = 1 // No sharding in DaemonSet mode, as prometheus-operator's generator.
	}
	return &renderer{cred: credential.Reader{Lookup: in.Lookup}, srv: in.Server, shards: shards, retention: in.Retention, version: ParseVersion(in.Version), daemonSet: in.DaemonSet}
}

// renderer renders one configuration: it holds the inputs and what it
// has looked up and compiled so far.
type renderer struct {
	// cred renders credentials with the Secrets and ConfigMaps of in.
	cred credential.Reader
	srv  *v1alpha1.PrometheusServer
	// shards and retention are in's.
	shards    int
	retention yaml.MapSlice
	// version is in's, parsed.
	version Version
	// scratch is the buffer jobs are encoded into (addJobs).
	scratch []byte
	// interval is the global scrape interval, the default of every job, as
	// a duration and as written.
	interval     model.Duration
	intervalText string
	// relabel checks the users' relabelings.
	relabel relabeling.Checker
	// classes are the scrape classes of the server by name, and
	// defaultClass the name of the default one, or "" (scrapeClasses).
	classes      map[string]*scrapeClass
	defaultClass string
	// agent renders an agent's configuration (Agent): no rules, no
	// alerting, the jobs in the agent's order.
	agent bool
	// daemonSet renders the configuration of an agent per node
	// (Input.DaemonSet).
	daemonSet bool
	// apiServer is what spec.apiserverConfig adds to every Kubernetes
	// service discovery of the monitors, Probes and Alertmanagers
	// (apiServerSD), or nil.
	apiServer yaml.MapSlice
}

// config renders the configuration of in, with r made from in, but for
// the Secrets it references.
func (r *renderer) config(in Input) (Parts, []Rejection, error) {
	if in.Server == nil {
		return Parts{}, nil, errors.New("no PrometheusServer")
	}
	server, err := r.renderServer()
	if err != nil {
		return Parts{}, nil, err
	}
	if err := r.scrapeClasses(); err != nil {
		return Parts{}, nil, err
	}
	var (
		rejected []Rejection
		addErr   error
		jobs     = &configsecret.Stream{Cache: in.Parts}
		p        = Parts{global: append(yaml.MapSlice{server.global}, server.head...), Jobs: jobs}
	)
	add := func(kind, namespace, name string, js []yaml.MapSlice, err error) {
		if err != nil {
			rejected = append(rejected, Rejection{Kind: kind, Namespace: namespace, Name: name, Reason: err.Error()})
			return
		}
		jobs.Monitors = append(jobs.Monitors, configsecret.Monitor{Kind: kind, Namespace: namespace, Name: name})
		if addErr == nil {
			addErr = r.addJobs(jobs, len(jobs.Monitors)-1, js)
		}
	}
	additional := func() error {
		extra, err := r.additionalJobs(jobs.Names)
		if err != nil {
			return err
		}
		return r.addJobs(jobs, configsecret.Additional, extra)
	}
	if r.agent {
		err = r.agentJobs(in, jobs, add, additional)
	} else {
		err = r.eachMonitor(in, serverOrder, add)
		if err = cmp.Or(err, addErr); err == nil {
			err = additional()
		}
	}
	if err = cmp.Or(err, addErr); err != nil {
		return Parts{}, nil, err
	}

	// The order of prometheus-operator: global, rule_files (which
	// Parts.Head adds), scrape_configs, alerting, remote_write.
	if p.Rest, err = promyaml.Encode(server.rest, 4<<10); err != nil {
		return Parts{}, nil, err
	}
	return p, rejected, nil
}

// The kinds of monitor a configuration has jobs of, in the order their
// jobs come in a server's (serverOrder) and in an agent's configuration
// (agentJobs: PodMonitors, the additional jobs, then the rest).
const (
	serviceMonitors = 1 << iota
	podMonitors
	probes
	scrapeConfigs
	serverOrder = serviceMonitors | podMonitors | probes | scrapeConfigs
)

// eachMonitor renders the jobs of each monitor of in of the kinds, a set
// of the constants above, ServiceMonitors, PodMonitors, Probes then
// ScrapeConfigs, each kind by namespace and name, and calls add with
// them, or with the reason the monitor has none.
func (r *renderer) eachMonitor(in Input, kinds int, add func(kind, namespace, name string, js []yaml.MapSlice, err error)) error {
	sms, err := SortedObjects(in.ServiceMonitors, monitoringv1.ServiceMonitorsKind)
	if err != nil {
		return err
	}
	pms, err := SortedObjects(in.PodMonitors, monitoringv1.PodMonitorsKind)
	if err != nil {
		return err
	}
	prs, err := SortedObjects(in.Probes, monitoringv1.ProbesKind)
	if err != nil {
		return err
	}
	scs, err := SortedObjects(in.ScrapeConfigs, monitoringv1alpha1.ScrapeConfigsKind)
	if err != nil {
		return err
	}
	for _, sm := range sms {
		if kinds&serviceMonitors != 0 {
			js, err := r.serviceMonitorJobs(sm)
			add(monitoringv1.ServiceMonitorsKind, sm.Namespace, sm.Name, js, err)
		}
	}
	for _, pm := range pms {
		if kinds&podMonitors != 0 {
			js, err := r.podMonitorJobs(pm)
			add(monitoringv1.PodMonitorsKind, pm.Namespace, pm.Name, js, err)
		}
	}
	for _, pr := range prs {
		if kinds&probes != 0 {
			j, err := r.probeJob(pr)
			add(monitoringv1.ProbesKind, pr.Namespace, pr.Name, []yaml.MapSlice{j}, err)
		}
	}
	for _, sc := range scs {
		if kinds&scrapeConfigs != 0 {
			j, err := r.scrapeConfigJob(sc)
			add(monitoringv1alpha1.ScrapeConfigsKind, sc.Namespace, sc.Name, []yaml.MapSlice{j}, err)
		}
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

// SortedObjects returns a copy of objs ordered by namespace and name, or an
// error for a nil or duplicate object, which the caller should never pass.
func SortedObjects[T namespaced](objs []T, kind string) ([]T, error) {
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

// remote renders with r's credentials, namespace, version and relabeling
// checker the sections package remote renders.
func (r *renderer) remote() *remote.Renderer {
	return &remote.Renderer{Cred: r.cred, Namespace: r.srv.Namespace, AtLeast: r.version.AtLeast, Relabel: r.relabel}
}
