package apisource

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/podreload/podreload/reloader"
)

// Options says what a Source reads.
type Options struct {
	// Config reaches the API server.
	Config Config
	// SecretNamespace, SecretName and SecretKey name the configuration:
	// the key of a Secret. Required.
	SecretNamespace, SecretName, SecretKey string
	// RulesNamespace and RulesSelector select the rule file ConfigMaps by
	// a label selector; an empty RulesSelector reads none. Each ConfigMap
	// key is the file <configmap>/<key> (which the reloader writes
	// gunzipped, without .gz, for a key ending with .gz).
	RulesNamespace, RulesSelector string
}

// Source is a reloader.Source reading a Secret and ConfigMaps from the
// Kubernetes API.
type Source struct {
	opts     Options
	logger   *slog.Logger
	watchers []*watcher
	health   health
	changed  chan struct{}

	mu           sync.Mutex
	secret       map[string][]byte // nil while the Secret does not exist
	secretRV     string
	secretSynced bool
	configMaps   map[string]object
	rulesSynced  bool
	parts        map[string]*partState // by Secret name: those Parts last asked for
	partsWanted  chan struct{}         // receives after parts changed
	// newWatcher returns a watcher of the objects of resource in
	// namespace that selector selects, what names them.
	newWatcher func(resource, namespace, what string, selector url.Values, st store) *watcher
}

type kindMetrics struct {
	connected prometheus.Gauge
	errors    prometheus.Counter
	relists   prometheus.Counter
	events    *prometheus.CounterVec
}

// New returns a Source; Run starts reading. A nil logger discards logs.
func New(logger *slog.Logger, reg prometheus.Registerer, opts Options) (*Source, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.SecretNamespace == "" || opts.SecretName == "" || opts.SecretKey == "" {
		return nil, errors.New("the configuration's Secret needs a namespace, a name and a key")
	}
	if opts.RulesSelector != "" && opts.RulesNamespace == "" {
		return nil, errors.New("the rule ConfigMaps need a namespace")
	}
	c, err := newClient(opts.Config)
	if err != nil {
		return nil, err
	}
	s := &Source{opts: opts, logger: logger, changed: make(chan struct{}, 1), health: health{since: map[string]time.Time{}, errs: map[string]error{}},
		parts: map[string]*partState{}, partsWanted: make(chan struct{}, 1)}
	f := promauto.With(reg)
	connected := f.NewGaugeVec(prometheus.GaugeOpts{
		Name: "reloader_api_watch_connected",
		Help: "Whether the list and watch of a resource currently reach the API server (1) or are retried (0).",
	}, []string{"resource"})
	errs := f.NewCounterVec(prometheus.CounterOpts{
		Name: "reloader_api_errors_total",
		Help: "Total number of lists and watches that failed, by resource.",
	}, []string{"resource"})
	relists := f.NewCounterVec(prometheus.CounterOpts{
		Name: "reloader_api_relists_total",
		Help: "Total number of lists after a watch expired (410 Gone), by resource.",
	}, []string{"resource"})
	events := f.NewCounterVec(prometheus.CounterOpts{
		Name: "reloader_api_watch_events_total",
		Help: "Total number of watch events received, by resource and type.",
	}, []string{"resource", "type"})
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "reloader_api_config_secrets_unavailable",
		Help: "Number of the Secrets the configuration needs (its own, and its parts') that are missing, lack the key, or cannot be read: the last configuration is kept meanwhile, and rule changes still apply.",
	}, func() float64 { return float64(s.unavailableSecrets()) })
	s.newWatcher = func(resource, namespace, what string, selector url.Values, st store) *watcher {
		return &watcher{
			c: c, logger: logger, resource: resource, healthKey: resource, selector: selector, what: what, store: st, health: &s.health,
			path: "/api/v1/namespaces/" + url.PathEscape(namespace) + "/" + resource,
			m: kindMetrics{
				connected: connected.WithLabelValues(resource), errors: errs.WithLabelValues(resource),
				relists: relists.WithLabelValues(resource), events: events.MustCurryWith(prometheus.Labels{"resource": resource}),
			},
		}
	}
	add := func(resource, namespace, what string, selector url.Values, st store) {
		s.watchers = append(s.watchers, s.newWatcher(resource, namespace, what, selector, st))
	}
	add("secrets", opts.SecretNamespace, s.secretName(),
		url.Values{"fieldSelector": {"metadata.name=" + opts.SecretName}}, secretStore{s: s, name: s.secretName(), set: s.setSecret})
	if opts.RulesSelector != "" {
		add("configmaps", opts.RulesNamespace, fmt.Sprintf("configmaps in namespace %s matching %q", opts.RulesNamespace, opts.RulesSelector),
			url.Values{"labelSelector": {opts.RulesSelector}}, configMapStore{s})
	}
	return s, nil
}

func (s *Source) secretName() string {
	return "secret " + s.opts.SecretNamespace + "/" + s.opts.SecretName
}

// Run reads until ctx is done.
func (s *Source) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, w := range s.watchers {
		wg.Go(func() { w.run(ctx) })
	}
	wg.Go(func() { s.runParts(ctx) })
	wg.Wait()
	return nil
}

// Changed receives after the content may have changed.
func (s *Source) Changed() <-chan struct{} { return s.changed }

func (s *Source) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Err says what keeps the last state served: the API server could not be
// reached at the last attempt, or refused it (since when and why), or the
// configuration's Secret, or a part's, is missing or lacks its key; it
// ends with "serving the last state". A nil Source has no error.
func (s *Source) Err() error {
	if s == nil {
		return nil // No API source.
	}
	if err := errors.Join(s.health.err(), errors.Join(s.unavailable()...)); err != nil {
		return fmt.Errorf("%w; serving the last state", err)
	}
	return nil
}

// unavailableSecrets counts the Secrets the configuration needs that are
// missing, lack the key, or whose reading fails.
func (s *Source) unavailableSecrets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	if _, err := s.config(); (s.secretSynced && err != nil) || s.health.errOf("secrets") != nil {
		n++
	}
	for name, p := range s.parts {
		if err := s.partErr(name, p); (err != nil && !errors.Is(err, reloader.ErrNotRead)) || s.health.errOf(partHealth(name)) != nil {
			n++
		}
	}
	return n
}

// unavailable returns, for each Secret the configuration needs (its own,
// and those of the parts last asked for) that was read and is missing or
// lacks the key, why.
func (s *Source) unavailable() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	if _, err := s.config(); s.secretSynced && err != nil {
		errs = append(errs, err)
	}
	for _, name := range slices.Sorted(maps.Keys(s.parts)) {
		if err := s.partErr(name, s.parts[name]); err != nil && !errors.Is(err, reloader.ErrNotRead) {
			errs = append(errs, err)
		}
	}
	return errs
}

// Snapshot returns the configuration and the rule files, or says what is
// not listed yet. While the Secret or its key is missing, the snapshot's
// ConfigErr says so, and the rule files still apply.
func (s *Source) Snapshot() (reloader.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := s.secretName()
	switch {
	case !s.secretSynced:
		return reloader.Snapshot{}, fmt.Errorf("%s: %w", name, reloader.ErrNotRead)
	case s.opts.RulesSelector != "" && !s.rulesSynced:
		return reloader.Snapshot{}, fmt.Errorf("configmaps matching %q: %w", s.opts.RulesSelector, reloader.ErrNotRead)
	}
	config, configErr := s.config()
	files := map[string]string{}
	for cm, obj := range s.configMaps {
		for k, v := range obj.Data {
			files[cm+"/"+k] = v
		}
		for k, v := range obj.BinaryData {
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				return reloader.Snapshot{}, fmt.Errorf("configmap %s/%s key %s: %w", s.opts.RulesNamespace, cm, k, err)
			}
			files[cm+"/"+k] = string(b)
		}
	}
	return reloader.Snapshot{Config: config, ConfigName: name + " key " + s.opts.SecretKey, ConfigErr: configErr, Files: files, Describe: s.describeFile}, nil
}

// config returns the configuration's key of the Secret read, or says why
// there is none. s.mu is held.
func (s *Source) config() ([]byte, error) {
	name := s.secretName()
	if s.secret == nil {
		return nil, fmt.Errorf("%s not found: waiting for it", name)
	}
	config, ok := s.secret[s.opts.SecretKey]
	if !ok {
		return nil, fmt.Errorf("%s has no key %q (it has %s): waiting for it", name, s.opts.SecretKey, keys(s.secret))
	}
	return config, nil
}

// describeFile names a file of a Snapshot, "<configmap>/<key>", by its
// ConfigMap and key.
func (s *Source) describeFile(name string) string {
	cm, key, _ := strings.Cut(name, "/")
	return fmt.Sprintf("configmap %s/%s key %s", s.opts.RulesNamespace, cm, key)
}

func keys[V any](m map[string]V) string {
	if len(m) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}

// secretStore keeps one Secret, watched by name: set receives its data
// decoded and its resource version, or nil and "" while it does not exist.
type secretStore struct {
	s    *Source
	name string // namespace/name, for the log
	set  func(data map[string][]byte, rv string)
}

func (st secretStore) replace(items []object) {
	var obj *object
	if len(items) > 0 {
		obj = &items[0]
	}
	st.decode(obj)
}

func (st secretStore) apply(typ string, obj object) {
	if typ == "DELETED" {
		st.decode(nil)
		return
	}
	st.decode(&obj)
}

func (st secretStore) decode(obj *object) {
	if obj == nil {
		st.set(nil, "")
		return
	}
	data := map[string][]byte{}
	for k, v := range obj.Data {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			st.s.logger.Error("API source: undecodable key", "secret", st.name, "key", k, "err", err)
			continue
		}
		data[k] = b
	}
	st.set(data, obj.Metadata.ResourceVersion)
}

// setSecret keeps the configuration Secret.
func (s *Source) setSecret(data map[string][]byte, rv string) {
	s.mu.Lock()
	changed := !s.secretSynced || rv != s.secretRV
	_, before := s.config()
	s.secret, s.secretRV, s.secretSynced = data, rv, true
	_, after := s.config()
	s.mu.Unlock()
	switch {
	case after != nil && (before == nil || after.Error() != before.Error()):
		s.logger.Warn("API source: no configuration, the last one is kept; rule changes still apply", "err", after)
	case after == nil && before != nil && changed:
		s.logger.Info("API source: configuration back", "secret", s.opts.SecretNamespace+"/"+s.opts.SecretName)
	}
	if changed {
		s.notify()
	}
}

// configMapStore keeps the rule ConfigMaps.
type configMapStore struct{ s *Source }

func (st configMapStore) replace(items []object) {
	s := st.s
	m := make(map[string]object, len(items))
	for _, obj := range items {
		m[obj.Metadata.Name] = obj
	}
	s.mu.Lock()
	changed := !s.rulesSynced || len(m) != len(s.configMaps)
	for name, obj := range m {
		if old, ok := s.configMaps[name]; !ok || old.Metadata.ResourceVersion != obj.Metadata.ResourceVersion {
			changed = true
		}
	}
	s.configMaps, s.rulesSynced = m, true
	s.mu.Unlock()
	if changed {
		s.notify()
	}
}

func (st configMapStore) apply(typ string, obj object) {
	s := st.s
	s.mu.Lock()
	if typ == "DELETED" {
		delete(s.configMaps, obj.Metadata.Name)
	} else {
		s.configMaps[obj.Metadata.Name] = obj
	}
	s.mu.Unlock()
	s.notify()
}

// health records, per resource, the error of the last failed attempt and
// since when attempts have failed.
type health struct {
	mu    sync.Mutex
	since map[string]time.Time
	errs  map[string]error
}

func (h *health) failed(resource string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.since[resource]; !ok {
		h.since[resource] = time.Now()
	}
	h.errs[resource] = err
}

func (h *health) ok(resource string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.since, resource)
	delete(h.errs, resource)
}

func (h *health) err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var errs []error
	for _, resource := range slices.Sorted(maps.Keys(h.errs)) {
		how := "API server unreachable for"
		if errors.As(h.errs[resource], new(*StatusError)) {
			how = "API server refuses"
		}
		errs = append(errs, fmt.Errorf("%s %s since %s: %w",
			how, resource, h.since[resource].UTC().Format(time.RFC3339), h.errs[resource]))
	}
	return errors.Join(errs...)
}

// errOf returns the error of resource's last attempt, if it failed.
func (h *health) errOf(resource string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.errs[resource]
}
