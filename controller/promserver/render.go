package promserver

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	yaml "go.yaml.in/yaml/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/controller/configsecret"
	"github.com/podreload/podreload/controller/promcfg"
	"github.com/podreload/podreload/controller/promserver/promargs"
	"github.com/podreload/podreload/controller/promserver/thanos"
	"github.com/podreload/podreload/controller/selector"
	"github.com/podreload/podreload/controller/sidecar"
	"github.com/podreload/podreload/controller/store"
	"github.com/podreload/podreload/controller/webconfig"
)

// LabelConfig marks the config Secret of a server; its value is the server
// name.
const LabelConfig = "podreload.dev/config"

// Inputs is a snapshot of everything a PrometheusServer's objects are
// rendered from.
type Inputs struct {
	// Server is the PrometheusServer to render.
	Server *v1alpha1.PrometheusServer
	// Layout is the layout Server is rendered in, decided by where it
	// comes from (layout.go): the zero value for a PrometheusServer,
	// prometheus-operator's for a Prometheus object converted.
	Layout layout
	// UserConfig tells that Server's configuration Secret is the user's
	// (Target.UserConfig): read, never written.
	UserConfig bool
	// Namespaces holds the labels of the namespaces, by name, for the
	// namespace selectors of Server.
	Namespaces map[string]labels.Set
	// ServiceMonitors are all the candidates; render selects among them.
	ServiceMonitors []*monitoringv1.ServiceMonitor
	// PodMonitors are all the candidates; render selects among them.
	PodMonitors []*monitoringv1.PodMonitor
	// Probes are all the candidates; render selects among them.
	Probes []*monitoringv1.Probe
	// ScrapeConfigs are all the candidates; render selects among them.
	ScrapeConfigs []*monitoringv1alpha1.ScrapeConfig
	// Rules are all the candidate PrometheusRules; render selects among
	// them.
	Rules []*monitoringv1.PrometheusRule
	// Secrets holds the Secrets that Server and the monitors reference, by
	// "namespace/name".
	Secrets map[string]*corev1.Secret
	// ConfigMaps holds the ConfigMaps that Server references (in
	// spec.web.tlsConfig), by "namespace/name".
	ConfigMaps map[string]*corev1.ConfigMap
	// Running holds the live StatefulSets of Server, by name, or for an
	// agent in DaemonSet mode its live DaemonSet's pod template
	// (templateOf): a shard whose pods run the config-reloader at another
	// image than the controller's default, and would be rendered the same
	// but for that image, keeps it (keepRunningReloader); and their
	// Prometheus version is never downgraded (notOlder).
	Running map[string]*appsv1.StatefulSet
	// HoldRules keeps the rule ConfigMaps as they were last written
	// (rulefiles.Written), when the cache knows them, instead of
	// those rendered from Rules: a render while a burst of changes goes
	// on holds the rules' changes back (coalesce.go). The rest, the
	// configuration's rule_files and the content hash included, follows
	// the ConfigMaps kept.
	HoldRules bool
}

// Objects are the objects rendered for a PrometheusServer, and what was
// left out of them. Owner references are not set.
type Objects struct {
	// ConfigSecret, named ConfigSecretName, holds prometheus.yaml gzipped
	// under ConfigSecretKey. The same configuration gives the same bytes.
	// It is nil when the configuration is too large (Oversized).
	ConfigSecret *corev1.Secret
	// ConfigParts, named ConfigPartName, hold the scrape jobs that do not
	// fit in ConfigSecret (configsecret.SplitConfig), in order; none when it holds all, and
	// always none in prometheus-operator's layout.
	ConfigParts []*corev1.Secret
	// Oversized, when not nil, is why there is no ConfigSecret: the
	// configuration is too large for a Secret. The other objects are
	// rendered all the same.
	Oversized *oversizedError
	// WebConfigSecret, named WebConfigSecretName, holds the web
	// configuration file of spec.web under WebConfigSecretKey; nil when
	// there is none (never in prometheus-operator's layout, whose file is
	// empty without spec.web).
	WebConfigSecret *corev1.Secret
	// RuleShards are the rule file ConfigMaps, named ruleShardName; none
	// when no rule is rendered.
	RuleShards []*corev1.ConfigMap
	// RulesHeld is set when RuleShards are those last written, kept
	// (inputs.HoldRules), and differ from those of the rules.
	RulesHeld bool
	// Role and RoleBinding let the reloaders of a server report in their
	// pods and, with the API source, read its config Secret and rule
	// ConfigMaps (renderAccess).
	Role        *rbacv1.Role
	RoleBinding *rbacv1.RoleBinding
	// ThanosSecret is the HTTP client configuration the Thanos sidecar's
	// pods mount (thanos.HTTPClientSecret); nil without one.
	ThanosSecret *corev1.Secret
	// StateSecrets, one per pod named <pod>-reloader-state, empty, hold
	// the reloaders' state when Prometheus' storage is not a claim
	// (renderStateSecrets); created when missing, never updated.
	StateSecrets []*corev1.Secret
	// Service is the headless Service of the StatefulSet.
	Service *corev1.Service
	// StatefulSets run Prometheus and the config-reloader, one per shard,
	// shard 0 first. Their pod templates' annotationInputHash covers
	// neither the configuration nor the rules, which reach Prometheus
	// through reloads. None in DaemonSet mode.
	StatefulSets []*appsv1.StatefulSet
	// DaemonSet runs them instead, an agent per node, in
	// prometheus-operator's layout of an agent in DaemonSet mode (then
	// Service is nil); nil otherwise.
	DaemonSet *appsv1.DaemonSet
	// Rejected lists the selected objects left out, and why, sorted by
	// kind, namespace and name.
	Rejected []promcfg.Rejection
	// Selected counts the objects of each kind (selectedKinds) the server
	// selected, the rejected ones included, by kind.
	Selected map[string]int
	// ConfigHash is the hex SHA-256 of the uncompressed prometheus.yaml
	// (which names its parts with their hashes, when it is split); empty
	// with no ConfigSecret.
	ConfigHash string
	// ContentHash is the content hash (package contract) of the
	// ConfigSecret's key as stored (which names its parts with their
	// hashes, so it covers them) and of the RuleShards' files, the hash
	// the config-reloaders report once Prometheus runs them; empty with no
	// ConfigSecret.
	ContentHash string
	// SecretRefs are the Secrets that the server and the selected
	// monitors reference, and the ConfigMaps the server references,
	// whether they exist or not: a change to one of them may change the
	// objects. Sorted.
	SecretRefs []store.Ref
}

// SpecError is the error of render for a PrometheusServer whose own spec
// cannot be rendered into a configuration, with the Secrets looked up
// before it: creating or fixing one of them may be what it takes.
type SpecError struct {
	// Err is the cause.
	Err error
	// SecretRefs are the Secrets and ConfigMaps looked up before Err,
	// found or not. Sorted.
	SecretRefs []store.Ref
}

func (e *SpecError) Error() string { return e.Err.Error() }

func (e *SpecError) Unwrap() error { return e.Err }

// Render renders the objects of in.Server: it selects the monitors and
// rules with selector.Parse, renders the rules into ConfigMaps (ruleCache.render,
// through cache when it is not nil), the configuration with the rule_files
// of as many shards (promcfg.Server, then Parts.Head with
// ruleFilesGlobs), its Secret, the Role and RoleBinding of the API source
// (renderAccess), and the Service and the StatefulSet of each shard
// (renderWorkload and renderShard, with opts and what the other objects
// decide for the pods, podOptions), or an agent's DaemonSet in DaemonSet
// mode (renderWorkloads). The rules are rendered on
// other goroutines while this one renders the configuration; render
// returns when they are done. The output is deterministic: the order of the
// candidates does not matter.
//
// A selected object that cannot be rendered is left out and listed in
// objects.Rejected, and the rest is rendered. An error means the server
// itself cannot be rendered: an invalid selector or field of the server, or
// a nil or duplicate candidate. A configuration too large for a Secret is
// split into part Secrets (configsecret.SplitConfig, objects.ConfigParts); one too large even
// without its scrape jobs is no error: the other objects are rendered, and
// objects.Oversized says so. An error of the server's configuration (a
// Secret it references is missing, say) is a *specError, which tells the
// Secrets looked up.
func Render(in Inputs, opts WorkloadOptions, cache *RuleCache) (*Objects, error) {
	if in.Server == nil {
		return nil, errors.New("render: no PrometheusServer")
	}
	in.Server = notOlder(in)
	server := Target{PrometheusServer: in.Server, Layout: in.Layout, UserConfig: in.UserConfig}
	if err := cmp.Or(ValidateArgs(server), validateContainers(server), thanos.Validate(operatorThanos(server, corev1.VolumeMount{})),
		promargs.ValidateRetentionPercentage(server.Spec)); err != nil {
		return nil, err
	}
	web, err := RenderWeb(in)
	if err != nil {
		return nil, &SpecError{Err: err, SecretRefs: web.Refs}
	}
	sel, err := selectAll(in)
	if err != nil {
		return nil, err
	}

	if cache == nil {
		cache = new(RuleCache)
	}
	// The rules, and the configuration but for its rule_files (which
	// depend on the shard count), do not depend on each other: render
	// them at the same time.
	var (
		wg            sync.WaitGroup
		shards        []*corev1.ConfigMap
		rejectedRules []promcfg.Rejection
	)
	if !server.Layout.Agent() { // An agent has no rules.
		wg.Go(func() { shards, rejectedRules = cache.Render(server, sel.rules) })
	}
	lookup := store.NewLookup(store.Objects{Secrets: in.Secrets, ConfigMaps: in.ConfigMaps})
	generate := promcfg.Server
	if server.Layout.Agent() {
		generate = promcfg.Agent
	}
	parts, rejected, err := generate(ConfigInput(server, sel, lookup, &cache.parts))
	wg.Wait()
	shards, held := cache.written.Hold(writtenFor(server), shards, in.HoldRules)
	refs := store.Union(lookup.Refs(), web.Refs)
	if err != nil {
		return nil, &SpecError{Err: err, SecretRefs: refs}
	}
	head, err := parts.Head(RuleFilesGlobs(server, len(shards)))
	if err != nil {
		return nil, err
	}
	rejected = sortRejections(append(rejected, rejectedRules...))

	var cfg *Objects
	if UserConfigured(server) {
		cfg, err = userConfig(server, lookup, shards)
		if err != nil {
			return nil, &SpecError{Err: err, SecretRefs: store.Union(refs, lookup.Refs())}
		}
	} else {
		cfg, err = RenderConfigSecrets(server, head, parts, shards, cache)
	}
	cache.parts.Rotate()
	if err != nil {
		return nil, err
	}
	pods := PodOptions{WorkloadOptions: opts, RuleShards: len(shards), ConfigParts: len(cfg.ConfigParts), Reload: web.Reload}
	if server.Layout.Operator() && web.Secret != nil {
		sum := sha256.Sum256(web.Secret.Data[WebConfigSecretKey])
		pods.WebConfigHash = hex.EncodeToString(sum[:])
	}
	svc, sets, ds, err := renderWorkloads(in, server, pods)
	if err != nil {
		return nil, err
	}
	role, binding := RenderAccess(server, len(cfg.ConfigParts))
	cfg.Role, cfg.RoleBinding, cfg.StateSecrets = role, binding, renderStateSecrets(server)
	cfg.RuleShards, cfg.RulesHeld, cfg.Service, cfg.StatefulSets, cfg.DaemonSet = shards, held, svc, sets, ds
	cfg.Rejected = sortRejections(append(rejected, cfg.Rejected...))
	cfg.Selected = map[string]int{}
	for _, k := range SelectedKinds() {
		cfg.Selected[k.Kind] = k.count(sel)
	}
	cfg.WebConfigSecret, cfg.SecretRefs, cfg.ThanosSecret = web.Secret, refs, operatorThanosSecret(server)
	return cfg, nil
}

// RenderConfigSecrets renders the config Secret of the configuration
// made of head and parts.Body, split into parts when it is too large
// (configsecret.SplitConfig), and its hashes with the rule ConfigMaps
// shards: the objects of the configuration, with the monitors left out.
func RenderConfigSecrets(server Target, head []byte, parts promcfg.Parts, shards []*corev1.ConfigMap, cache *RuleCache) (*Objects, error) {
	objs := &Objects{}
	whole := append([][]byte{head}, parts.Body()...)
	size := 0
	for _, b := range whole {
		size += len(b)
	}
	var (
		gz  []byte
		sum [sha256.Size]byte
		err error
	)
	fits := !parts.Jobs.Splitting() && size <= configsecret.MaxConfigBytes
	if fits {
		gz, sum, err = cache.parts.Gzip(corev1.MaxSecretSize, whole...)
	}
	var tooLarge *configsecret.SizeError
	switch {
	case fits && err == nil:
		objs.ConfigHash = hex.EncodeToString(sum[:])
	case (err == nil || errors.As(err, &tooLarge)) && server.Layout.Operator():
		// prometheus-operator's pods cannot join parts: no split.
		if err == nil {
			err = fmt.Errorf("prometheus.yaml is more than the %d bytes a config-reloader renders", configsecret.MaxConfigBytes)
		}
		objs.Oversized = &oversizedError{Err: err, unsplit: true}
		return objs, nil
	case err == nil || errors.As(err, &tooLarge):
		split, err := configsecret.SplitConfig(ConfigSecretOf(server), head, parts.Rest, parts.Jobs)
		if errors.As(err, &tooLarge) {
			objs.Oversized = &oversizedError{Err: err}
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(split.Main)
		gz, objs.ConfigHash = split.MainGzip, hex.EncodeToString(sum[:])
		for i, part := range split.Parts {
			objs.ConfigParts = append(objs.ConfigParts, configPart(server, i+1, part))
		}
		for _, r := range split.Rejected {
			objs.Rejected = append(objs.Rejected, promcfg.Rejection{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Reason: r.Reason})
		}
	default:
		return nil, err
	}
	objs.ConfigSecret = configSecret(server, gz)
	objs.ContentHash = ContentHash(gz, shards)
	return objs, nil
}

func sortRejections(rejected []promcfg.Rejection) []promcfg.Rejection {
	slices.SortFunc(rejected, func(a, b promcfg.Rejection) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return rejected
}

// PodOptions are the inputs of renderWorkload: the controller's
// WorkloadOptions, and what render decides for the pods from the other
// objects of the server.
type PodOptions struct {
	WorkloadOptions
	// ruleShards is the number of rule file ConfigMaps; ruleFilesGlobs
	// gets the same number. The pods of a server with the API source do
	// not depend on it.
	RuleShards int
	// configParts is the number of part Secrets of the configuration
	// (configsecret.SplitConfig): the pods of a server with the volume
	// source mount configsecret.PartSlots of them. The pods of a server
	// with the API source do not depend on it.
	ConfigParts int
	// reload is how the config-reloader verifies Prometheus' certificate,
	// which render decides from the certificate (renderWeb); the zero
	// value verifies it with itself.
	Reload webconfig.Reload
	// webConfigHash is the hash of the web configuration file, which the
	// pods of prometheus-operator's layout mount with a sub-path.
	WebConfigHash string
}

// ConfigInput is the input of the configuration of server, with the
// objects it selected, sel, and lookup to read the Secrets and ConfigMaps
// they reference: its shards and, in prometheus-operator's layout from
// Prometheus 3.11, the retention the configuration holds.
func ConfigInput(server Target, sel Selected, lookup *store.Lookup, parts *configsecret.Cache) promcfg.Input {
	in := promcfg.Input{
		Server:          server.PrometheusServer,
		ServiceMonitors: sel.ServiceMonitors,
		PodMonitors:     sel.PodMonitors,
		Probes:          sel.Probes,
		ScrapeConfigs:   sel.ScrapeConfigs,
		Lookup:          lookup,
		Parts:           parts,
		Shards:          ShardCount(server),
		Version:         server.Spec.Version,
		DaemonSet:       server.Layout.DaemonSet(),
	}
	if server.Layout.Operator() {
		in.Version = cmp.Or(server.Spec.Version, OperatorDefaultVersion)
	}
	if server.Layout.Operator() && !server.Layout.Agent() && promargs.RetentionInConfig(server.Spec) {
		// Never nil: the section is written even when it is empty.
		in.Retention = append(yaml.MapSlice{}, promargs.RetentionSettings(server.Spec)...)
	}
	return in
}

// Selected are the objects of each kind a server selects.
type Selected struct {
	ServiceMonitors []*monitoringv1.ServiceMonitor
	PodMonitors     []*monitoringv1.PodMonitor
	Probes          []*monitoringv1.Probe
	ScrapeConfigs   []*monitoringv1alpha1.ScrapeConfig
	rules           []*monitoringv1.PrometheusRule
}

// selectAll returns the monitors, probes, scrape configurations and rules
// of in that in.Server selects.
func selectAll(in Inputs) (Selected, error) {
	var s Selected
	for _, k := range SelectedKinds() {
		if err := k.choose(in, &s); err != nil {
			return Selected{}, err
		}
	}
	// promcfg.Server refuses duplicate monitors; a duplicate rule would
	// give a duplicate rule file.
	if _, err := promcfg.SortedObjects(s.rules, KindPrometheusRule); err != nil {
		return Selected{}, fmt.Errorf("select %ss: %w", KindPrometheusRule, err)
	}
	return s, nil
}

// oversizedError is a configuration too big for a Secret even without
// any scrape job, all of them in parts (split).
type oversizedError struct {
	// Err tells the sizes.
	Err error
	// unsplit is a configuration of prometheus-operator's layout, which
	// is never split: too large with its scrape jobs.
	unsplit bool
}

func (e *oversizedError) Error() string {
	if e.unsplit {
		return e.Err.Error() + " (prometheus-operator's layout cannot split it into parts)"
	}
	return e.Err.Error() + " without any scrape job"
}

func (e *oversizedError) Unwrap() error { return e.Err }

// selectObjects returns the objects of objs that the selectors of server
// select, in their order. The selectors are checked even when there is no
// candidate, so that an invalid one is an error whatever the cluster holds.
func selectObjects[T interface {
	comparable
	metav1.Object
}](server *v1alpha1.PrometheusServer, kind string, sel, nsSelector *metav1.LabelSelector, objs []T, namespaces map[string]labels.Set) ([]T, error) {
	s, err := selector.Parse(server.Namespace, sel, nsSelector)
	if err != nil {
		return nil, fmt.Errorf("select %ss: %w", kind, err)
	}
	var nilObject T
	var selected []T
	for _, o := range objs {
		if o == nilObject {
			return nil, fmt.Errorf("select %ss: nil %s", kind, kind)
		}
		if s.Selects(o, namespaces) {
			selected = append(selected, o)
		}
	}
	return selected, nil
}

func configSecret(server Target, gz []byte) *corev1.Secret {
	l := SelectorLabels(server)
	if server.Layout.Operator() {
		l = operatorObjectLabels(server)
	}
	l[LabelConfig] = server.Name
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      ConfigSecretOf(server),
			Namespace: server.Namespace,
			Labels:    l,
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{ConfigSecretKey: gz},
	}
}

// ContentHash is the content hash of config, as stored in the config
// Secret, and of the files of the rule ConfigMaps shards, named as the
// config-reloaders name them: <configmap>/<key>.
func ContentHash(config []byte, shards []*corev1.ConfigMap) string {
	files := map[string]string{}
	for _, cm := range shards {
		for key, content := range cm.Data {
			files[cm.Name+"/"+key] = content
		}
		for key, content := range cm.BinaryData {
			files[cm.Name+"/"+key] = string(content)
		}
	}
	return contract.Sum(config, files)
}

// LabelConfigPart marks the part Secrets of a server with their number;
// they also carry labelConfig.
const LabelConfigPart = "podreload.dev/config-part"

// ConfigPartName is the name of the i-th part Secret (from 1) of server, a
// PrometheusServer object (in podreload's layout).
func ConfigPartName(server *v1alpha1.PrometheusServer, i int) string {
	return configPartName(OwnTarget(server), i)
}

// configPartName is the name of the i-th part Secret (from 1) of server,
// in its layout.
func configPartName(server Target, i int) string {
	return configsecret.PartName(ConfigSecretOf(server), i)
}

// configPart is the i-th part Secret of server, holding gz.
func configPart(server Target, i int, gz []byte) *corev1.Secret {
	s := configSecret(server, gz)
	s.Name = configPartName(server, i)
	s.Labels[LabelConfigPart] = strconv.Itoa(i)
	return s
}

// renderWorkloads renders the Service and the StatefulSets of server's
// shards (keepRunningReloader), or, for an agent in DaemonSet mode, its
// DaemonSet alone, and refuses their pods when the API server would
// (validatePod).
func renderWorkloads(in Inputs, server Target, pods PodOptions) (*corev1.Service, []*appsv1.StatefulSet, *appsv1.DaemonSet, error) {
	if server.Layout.DaemonSet() {
		ds := keepRunningDaemonSet(in, server, pods)
		return nil, nil, ds, validatePod(templateOf(ds))
	}
	svc, sts := RenderWorkload(server, pods)
	sets := []*appsv1.StatefulSet{keepRunningReloader(in, server, pods, 0, sts)}
	for shard := 1; shard < ShardCount(server); shard++ {
		sets = append(sets, keepRunningReloader(in, server, pods, shard, RenderShard(server, pods, shard)))
	}
	return svc, sets, nil, validatePod(sts)
}

// keepRunningDaemonSet is keepRunningReloader for the DaemonSet of an
// agent in DaemonSet mode, whose live DaemonSet in.Running holds as a
// StatefulSet of its pod template (runningDaemonSet).
func keepRunningDaemonSet(in Inputs, server Target, pods PodOptions) *appsv1.DaemonSet {
	ds := RenderDaemonSet(server, pods)
	if server.Spec.Reloader.Image != "" {
		return ds
	}
	desired, kept := templateOf(ds), ds
	got := sidecar.KeepRunningImage(in.Running[ds.Name], desired, pods.DefaultReloaderImage, AnnotationInputHash, func(image string) *appsv1.StatefulSet {
		pods.DefaultReloaderImage = image
		kept = RenderDaemonSet(server, pods)
		return templateOf(kept)
	})
	if got == desired {
		return ds
	}
	return kept
}

// templateOf is a StatefulSet of ds' pod template alone, for what reads a
// workload's pods only (KeepRunningImage, notOlder, validatePod).
func templateOf(ds *appsv1.DaemonSet) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: ds.ObjectMeta, Spec: appsv1.StatefulSetSpec{Template: ds.Spec.Template}}
}

// keepRunningReloader returns sts, the StatefulSet of shard, or the one
// rendered with the config-reloader image its live StatefulSet
// (in.Running) runs, when that is the only change and the spec names no
// image (sidecar.KeepRunningImage): an upgrade of the controller rolls no
// pod for its own image.
func keepRunningReloader(in Inputs, server Target, pods PodOptions, shard int, sts *appsv1.StatefulSet) *appsv1.StatefulSet {
	if server.Spec.Reloader.Image != "" {
		return sts
	}
	return sidecar.KeepRunningImage(in.Running[sts.Name], sts, pods.DefaultReloaderImage, AnnotationInputHash, func(image string) *appsv1.StatefulSet {
		pods.DefaultReloaderImage = image
		return RenderShard(server, pods, shard)
	})
}
