// Command opconfig prints the Prometheus configuration that
// prometheus-operator (the version tools/go.mod pins) generates for a
// Prometheus object, with its own code: the resource selection, the Store
// of Secrets and ConfigMaps and the ConfigGenerator its Prometheus
// controller runs (pkg/prometheus/server/operator.go, sync), over fake
// clients holding the objects read.
//
// It reads a stream of YAML documents (files named as arguments, or
// stdin): one Prometheus, and ServiceMonitors, PodMonitors, Probes,
// ScrapeConfigs, PrometheusRules, Secrets, ConfigMaps and Namespaces. A
// namespace an object lives in but no Namespace document declares exists,
// without labels. The objects are taken as the API server would return
// them: CRD defaults are not applied here. The configuration goes to
// stdout, uncompressed; the objects prometheus-operator rejects are logged
// on stderr. The controller's differential test
// (controller/prometheus/operatordiff_test.go) compares it with ours.
//
// With --agent, it prints the configuration prometheus-operator's agent
// controller generates for a PrometheusAgent object instead
// (GenerateAgentConfiguration, pkg/prometheus/agent): the documents are one
// PrometheusAgent, its monitors, Secrets, ConfigMaps and Namespaces; with
// spec.mode DaemonSet, as its DaemonSet mode generates it.
//
// With --alertmanager, it prints the Alertmanager configuration that
// prometheus-operator generates for an Alertmanager object instead, with
// its ConfigBuilder (pkg/alertmanager): the documents are one Alertmanager,
// AlertmanagerConfigs, Secrets, ConfigMaps and Namespaces; the
// AlertmanagerConfigs prometheus-operator rejects are logged on stderr
// ("skipping alertmanagerconfig"). The differential test of
// controller/alertmanager/amconfig compares it with ours.
//
// With --parse, it reads a Prometheus configuration instead and prints it
// as the Prometheus of this module (the one bin/prometheus is built from)
// parses it: with its defaults filled in (a job's scrape_interval from
// global, say) and the values of secrets shown, so that two equivalent
// configurations print the same.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/blang/semver/v4"
	"github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus-operator/prometheus-operator/pkg/assets"
	mfake "github.com/prometheus-operator/prometheus-operator/pkg/client/versioned/fake"
	"github.com/prometheus-operator/prometheus-operator/pkg/informers"
	"github.com/prometheus-operator/prometheus-operator/pkg/k8s"
	"github.com/prometheus-operator/prometheus-operator/pkg/namespacelabeler"
	"github.com/prometheus-operator/prometheus-operator/pkg/operator"
	prompkg "github.com/prometheus-operator/prometheus-operator/pkg/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	commoncfg "github.com/prometheus/common/config"
	promconfig "github.com/prometheus/prometheus/config"
	// The service discoveries bin/prometheus is built with (the
	// Makefile's PROMETHEUS_TAGS), and HTTP's, which Prometheus always
	// has: their configurations parse.
	_ "github.com/prometheus/prometheus/discovery/dns"
	_ "github.com/prometheus/prometheus/discovery/file"
	_ "github.com/prometheus/prometheus/discovery/http"
	_ "github.com/prometheus/prometheus/discovery/kubernetes"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kinformers "k8s.io/client-go/informers"
	kfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	sigsyaml "sigs.k8s.io/yaml"
)

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

// run is main with its arguments, input and outputs: exit 2 for a usage
// error or unreadable input, 1 when prometheus-operator generates no
// configuration.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// The Kubernetes version decides two generator options, as
	// prometheus-operator's main decides them from the API server's version;
	// the default is the version of the node the tests run.
	kubeVersion := "1.36.3"
	var files []string
	parse, alertmanager, agent := false, false, false
	for _, a := range args {
		switch {
		case a == "--parse":
			parse = true
		case a == "--alertmanager":
			alertmanager = true
		case a == "--agent":
			agent = true
		case strings.HasPrefix(a, "--kubernetes-version="):
			kubeVersion = strings.TrimPrefix(a, "--kubernetes-version=")
		case strings.HasPrefix(a, "-") && a != "-":
			fmt.Fprintf(stderr, "opconfig: unknown flag %s\nusage: opconfig [--agent] [--kubernetes-version=V] [FILE...]\n       opconfig --alertmanager [FILE...]\n       opconfig --parse [FILE]\n", a)
			return 2
		default:
			files = append(files, a)
		}
	}
	kv, err := semver.ParseTolerant(kubeVersion)
	if err != nil {
		fmt.Fprintf(stderr, "opconfig: --kubernetes-version: %v\n", err)
		return 2
	}
	var in bytes.Buffer
	if len(files) == 0 {
		files = []string{"-"}
	}
	for _, f := range files {
		var b []byte
		if f == "-" {
			b, err = io.ReadAll(stdin)
		} else {
			b, err = os.ReadFile(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "opconfig: read %s: %v\n", f, err)
			return 2
		}
		if in.Len() > 0 && !parse {
			in.WriteString("\n---\n")
		}
		in.Write(b)
	}
	if parse {
		out, err := parseConfig(in.String())
		if err != nil {
			fmt.Fprintf(stderr, "opconfig: %v\n", err)
			return 1
		}
		if _, err := stdout.Write(out); err != nil {
			fmt.Fprintf(stderr, "opconfig: %v\n", err)
			return 1
		}
		return 0
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if alertmanager {
		return runAlertmanager(&in, logger, stdout, stderr)
	}
	objs, err := decode(&in)
	if err != nil {
		fmt.Fprintf(stderr, "opconfig: %v\n", err)
		return 2
	}
	cfg, code := generateFor(logger, objs, agent, kv, stderr)
	if code != 0 {
		return code
	}
	if _, err := stdout.Write(cfg); err != nil {
		fmt.Fprintf(stderr, "opconfig: %v\n", err)
		return 1
	}
	return 0
}

// generateFor generates the configuration of objs' Prometheus, or of its
// PrometheusAgent with agent, and says on stderr why there is none: exit
// code 2 when the object is missing, 1 when prometheus-operator generates
// nothing.
func generateFor(logger *slog.Logger, objs *inputObjects, agent bool, kv semver.Version, stderr io.Writer) ([]byte, int) {
	ctx := context.Background()
	switch {
	case agent && objs.agent == nil:
		fmt.Fprintln(stderr, "opconfig: no PrometheusAgent object")
		return nil, 2
	case agent:
		cfg, err := generateAgent(ctx, logger, objs, kv)
		if err != nil {
			fmt.Fprintf(stderr, "opconfig: prometheusagent %s/%s: %v\n", objs.agent.Namespace, objs.agent.Name, err)
			return nil, 1
		}
		return cfg, 0
	case objs.prometheus == nil:
		fmt.Fprintln(stderr, "opconfig: no Prometheus object")
		return nil, 2
	}
	cfg, err := generate(ctx, logger, objs, kv)
	if err != nil {
		fmt.Fprintf(stderr, "opconfig: prometheus %s/%s: %v\n", objs.prometheus.Namespace, objs.prometheus.Name, err)
		return nil, 1
	}
	return cfg, 0
}

// inputObjects are the objects read.
type inputObjects struct {
	prometheus *monitoringv1.Prometheus
	agent      *monitoringv1alpha1.PrometheusAgent
	// core holds the Secrets, ConfigMaps and Namespaces.
	core []runtime.Object
	// monitoring holds the monitors, probes, ScrapeConfigs and rules.
	monitoring []runtime.Object
}

// object is a Kubernetes object.
type object interface {
	runtime.Object
	metav1.Object
}

// newObject returns a new object of kind, and whether it is a core one.
func newObject(kind string) (obj object, core bool, ok bool) {
	switch kind {
	case monitoringv1.PrometheusesKind:
		return &monitoringv1.Prometheus{}, false, true
	case monitoringv1alpha1.PrometheusAgentsKind:
		return &monitoringv1alpha1.PrometheusAgent{}, false, true
	case monitoringv1.AlertmanagersKind:
		return &monitoringv1.Alertmanager{}, false, true
	case monitoringv1alpha1.AlertmanagerConfigKind:
		return &monitoringv1alpha1.AlertmanagerConfig{}, false, true
	case monitoringv1.ServiceMonitorsKind:
		return &monitoringv1.ServiceMonitor{}, false, true
	case monitoringv1.PodMonitorsKind:
		return &monitoringv1.PodMonitor{}, false, true
	case monitoringv1.ProbesKind:
		return &monitoringv1.Probe{}, false, true
	case monitoringv1alpha1.ScrapeConfigsKind:
		return &monitoringv1alpha1.ScrapeConfig{}, false, true
	case monitoringv1.PrometheusRuleKind:
		return &monitoringv1.PrometheusRule{}, false, true
	case "Secret":
		return &corev1.Secret{}, true, true
	case "ConfigMap":
		return &corev1.ConfigMap{}, true, true
	case "Namespace":
		return &corev1.Namespace{}, true, true
	}
	return nil, false, false
}

// decode reads the YAML documents of r; unknown fields are errors, so that
// a typo in a test case cannot go unnoticed.
func decode(r io.Reader) (*inputObjects, error) {
	objs := &inputObjects{}
	namespaces := map[string]bool{}
	declared := map[string]bool{}
	err := decodeAll(r, func(_ int, obj object, core bool) error {
		if ns, ok := obj.(*corev1.Namespace); ok {
			declared[ns.Name] = true
		} else {
			namespaces[obj.GetNamespace()] = true
		}
		switch o := obj.(type) {
		case *monitoringv1.Prometheus:
			if objs.prometheus != nil {
				return fmt.Errorf("two Prometheus objects: %s/%s and %s/%s", objs.prometheus.Namespace, objs.prometheus.Name, o.Namespace, o.Name)
			}
			objs.prometheus = o
		case *monitoringv1alpha1.PrometheusAgent:
			if objs.agent != nil {
				return fmt.Errorf("two PrometheusAgent objects: %s/%s and %s/%s", objs.agent.Namespace, objs.agent.Name, o.Namespace, o.Name)
			}
			objs.agent = o
		default:
			if core {
				objs.core = append(objs.core, o)
			} else {
				objs.monitoring = append(objs.monitoring, o)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for ns := range namespaces {
		if !declared[ns] {
			objs.core = append(objs.core, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}
	}
	return objs, nil
}

// decodeAll calls f with each object of the YAML documents of r, in
// order, with its document's index and whether it is a core object; empty
// documents are skipped. It stops at f's first error.
func decodeAll(r io.Reader, f func(i int, obj object, core bool) error) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for i := 0; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
		obj, core, err := decodeDocument(doc)
		if err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
		if obj == nil {
			continue
		}
		if err := f(i, obj, core); err != nil {
			return err
		}
	}
}

// decodeDocument decodes one YAML document strictly; obj is nil for an
// empty document. A Secret's stringData moves into its data, as the API
// server moves it.
func decodeDocument(doc []byte) (obj object, core bool, err error) {
	var meta metav1.TypeMeta
	if err := sigsyaml.Unmarshal(doc, &meta); err != nil {
		return nil, false, err
	}
	if meta.Kind == "" {
		if trimmed := bytes.TrimSpace(doc); len(trimmed) == 0 || string(trimmed) == "null" {
			return nil, false, nil
		}
		return nil, false, errors.New("no kind")
	}
	obj, core, ok := newObject(meta.Kind)
	if !ok {
		return nil, false, fmt.Errorf("unsupported kind %q", meta.Kind)
	}
	if err := sigsyaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, false, fmt.Errorf("%s %s/%s: %w", meta.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	if _, ns := obj.(*corev1.Namespace); !ns && obj.GetNamespace() == "" {
		return nil, false, fmt.Errorf("%s %s: no namespace", meta.Kind, obj.GetName())
	}
	if s, ok := obj.(*corev1.Secret); ok {
		for k, v := range s.StringData {
			if s.Data == nil {
				s.Data = map[string][]byte{}
			}
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
	}
	return obj, core, nil
}

// selection is what prometheus-operator's resource selection gives for a
// Prometheus: the valid monitors of each kind, and the names of the rule
// ConfigMaps its pods mount.
type selection struct {
	serviceMonitors map[string]*monitoringv1.ServiceMonitor
	podMonitors     map[string]*monitoringv1.PodMonitor
	probes          map[string]*monitoringv1.Probe
	scrapeConfigs   map[string]*monitoringv1alpha1.ScrapeConfig
	ruleConfigMaps  []string
}

// generate runs prometheus-operator's configuration generation for
// objs.prometheus, the way its Prometheus controller's sync does.
func generate(ctx context.Context, logger *slog.Logger, objs *inputObjects, kubeVersion semver.Version) ([]byte, error) {
	p := objs.prometheus
	if p.Spec.ServiceMonitorSelector == nil && p.Spec.PodMonitorSelector == nil && p.Spec.ProbeSelector == nil && p.Spec.ScrapeConfigSelector == nil {
		return nil, errors.New("no monitor selector: prometheus-operator leaves the configuration unmanaged (an empty Secret)")
	}
	kclient := kfake.NewClientset(objs.core...)
	store := assets.NewStoreBuilder(kclient.CoreV1(), kclient.CoreV1())
	sel, err := selectResources(ctx, logger, p, kclient, mfake.NewClientset(objs.monitoring...), store)
	if err != nil {
		return nil, err
	}

	var opts []prompkg.ConfigGeneratorOption
	if kubeVersion.GTE(semver.MustParse("1.21.0")) {
		opts = append(opts, prompkg.WithEndpointSliceSupport())
	}
	if kubeVersion.GTE(semver.MustParse("1.35.0")) {
		opts = append(opts, prompkg.WithPodTopologyLabelsSupport())
	}
	cg, err := prompkg.NewConfigGenerator(logger, p, opts...)
	if err != nil {
		return nil, err
	}
	if err := addServerToStore(ctx, cg, store, p); err != nil {
		return nil, err
	}
	secrets := kclient.CoreV1().Secrets(p.Namespace)
	var additional [3][]byte
	for i, ref := range []*corev1.SecretKeySelector{p.Spec.AdditionalScrapeConfigs, p.Spec.AdditionalAlertRelabelConfigs, p.Spec.AdditionalAlertManagerConfigs} {
		if additional[i], err = k8s.LoadSecretRef(ctx, logger, secrets, ref); err != nil {
			return nil, fmt.Errorf("load additional configuration from Secret: %w", err)
		}
	}
	return cg.GenerateServerConfiguration(p,
		sel.serviceMonitors, sel.podMonitors, sel.probes, sel.scrapeConfigs,
		store, additional[0], additional[1], additional[2], sel.ruleConfigMaps)
}

// server is a Prometheus or a PrometheusAgent.
type server interface {
	monitoringv1.PrometheusInterface
	runtime.Object
}

// selectResources selects the monitors and rules of p as
// prometheus-operator's getSelectedConfigResources does, through informers
// over the fake clients, adding what they reference to store.
func selectResources(ctx context.Context, logger *slog.Logger, p server, kclient *kfake.Clientset, mclient *mfake.Clientset, store *assets.StoreBuilder) (*selection, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	nsInformer := kinformers.NewSharedInformerFactory(kclient, 0).Core().V1().Namespaces().Informer()
	go nsInformer.Run(ctx.Done())
	informer := func(gvr schema.GroupVersionResource) (*informers.ForResource, error) {
		inf, err := informers.NewInformersForResource(
			informers.NewMonitoringInformerFactories(map[string]struct{}{metav1.NamespaceAll: {}}, map[string]struct{}{}, mclient, 0, nil), gvr)
		if err != nil {
			return nil, err
		}
		inf.Start(ctx.Done())
		return inf, nil
	}
	infs := map[string]*informers.ForResource{}
	synced := []cache.InformerSynced{nsInformer.HasSynced}
	for _, gvr := range []schema.GroupVersionResource{
		monitoringv1.SchemeGroupVersion.WithResource(monitoringv1.ServiceMonitorName),
		monitoringv1.SchemeGroupVersion.WithResource(monitoringv1.PodMonitorName),
		monitoringv1.SchemeGroupVersion.WithResource(monitoringv1.ProbeName),
		monitoringv1alpha1.SchemeGroupVersion.WithResource(monitoringv1alpha1.ScrapeConfigName),
		monitoringv1.SchemeGroupVersion.WithResource(monitoringv1.PrometheusRuleName),
	} {
		inf, err := informer(gvr)
		if err != nil {
			return nil, fmt.Errorf("informers of %s: %w", gvr.Resource, err)
		}
		infs[gvr.Resource], synced = inf, append(synced, inf.HasSynced)
	}
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), synced...) {
		return nil, errors.New("informers did not sync")
	}

	events := operator.NewFakeRecorder(1000, p)
	rs, err := prompkg.NewResourceSelector(logger, p, store, nsInformer, operator.NewMetrics(prometheus.NewRegistry()), events)
	if err != nil {
		return nil, err
	}
	smons, err := rs.SelectServiceMonitors(ctx, infs[monitoringv1.ServiceMonitorName].ListAllByNamespace)
	if err != nil {
		return nil, fmt.Errorf("select ServiceMonitors: %w", err)
	}
	pmons, err := rs.SelectPodMonitors(ctx, infs[monitoringv1.PodMonitorName].ListAllByNamespace)
	if err != nil {
		return nil, fmt.Errorf("select PodMonitors: %w", err)
	}
	probes, err := rs.SelectProbes(ctx, infs[monitoringv1.ProbeName].ListAllByNamespace)
	if err != nil {
		return nil, fmt.Errorf("select Probes: %w", err)
	}
	scons, err := rs.SelectScrapeConfigs(ctx, infs[monitoringv1alpha1.ScrapeConfigName].ListAllByNamespace)
	if err != nil {
		return nil, fmt.Errorf("select ScrapeConfigs: %w", err)
	}
	var ruleConfigMaps []string
	if server, ok := p.(*monitoringv1.Prometheus); ok { // An agent has no rules.
		if ruleConfigMaps, err = ruleConfigMapNames(ctx, logger, server, kclient, nsInformer, infs[monitoringv1.PrometheusRuleName], events); err != nil {
			return nil, err
		}
	}
	return &selection{
		serviceMonitors: smons.ValidResources(), podMonitors: pmons.ValidResources(),
		probes: probes.ValidResources(), scrapeConfigs: scons.ValidResources(),
		ruleConfigMaps: ruleConfigMaps,
	}, nil
}

// addServerToStore adds what the Prometheus itself references to store,
// as createOrUpdateConfigurationSecret does before it generates the
// configuration. prometheus-operator also validates the Alertmanager
// endpoints there (validateAlertmanagerEndpoints, not exported): the cases
// are valid.
func addServerToStore(ctx context.Context, cg *prompkg.ConfigGenerator, store *assets.StoreBuilder, p *monitoringv1.Prometheus) error {
	if err := prompkg.AddRemoteReadsToStore(ctx, store, p.Namespace, p.Spec.RemoteRead); err != nil {
		return err
	}
	if err := cg.AddRemoteWriteToStore(ctx, store, p.Namespace, p.Spec.RemoteWrite); err != nil {
		return err
	}
	if err := prompkg.AddAPIServerConfigToStore(ctx, store, p.Namespace, p.Spec.APIServerConfig); err != nil {
		return err
	}
	if p.Spec.Alerting != nil {
		for i, am := range p.Spec.Alerting.Alertmanagers {
			if err := addAlertmanagerToStore(ctx, store, p.Namespace, am); err != nil {
				return fmt.Errorf("alertmanager %d: %w", i, err)
			}
		}
	}
	if err := prompkg.AddScrapeClassesToStore(ctx, store, p.Namespace, p.Spec.ScrapeClasses); err != nil {
		return fmt.Errorf("scrape classes: %w", err)
	}
	return nil
}

// addAlertmanagerToStore adds the credentials of an Alertmanager endpoint
// to store, as prometheus-operator's addAlertmanagerEndpointsToStore does.
func addAlertmanagerToStore(ctx context.Context, store *assets.StoreBuilder, namespace string, am monitoringv1.AlertmanagerEndpoints) error {
	if err := store.AddBasicAuth(ctx, namespace, am.BasicAuth); err != nil {
		return err
	}
	if err := store.AddSafeAuthorizationCredentials(ctx, namespace, am.Authorization); err != nil {
		return err
	}
	if err := store.AddSigV4(ctx, namespace, am.Sigv4); err != nil {
		return err
	}
	if err := store.AddTLSConfig(ctx, namespace, am.TLSConfig); err != nil {
		return err
	}
	return store.AddProxyConfig(ctx, namespace, am.ProxyConfig)
}

// ruleConfigMapNames selects the PrometheusRules of p and writes their
// ConfigMaps (into the fake client), as prometheus-operator's
// selectPrometheusRules and createOrUpdateRuleConfigMaps do, and returns
// the names the pod mounts, which the configuration's rule_files list.
func ruleConfigMapNames(ctx context.Context, logger *slog.Logger, p *monitoringv1.Prometheus, kclient *kfake.Clientset, nsInformer cache.SharedIndexInformer, ruleInfs *informers.ForResource, events *operator.EventRecorder) ([]string, error) {
	namespaces, err := operator.SelectNamespacesFromCache(p, p.Spec.RuleNamespaceSelector, nsInformer)
	if err != nil {
		return nil, err
	}
	excluded := p.Spec.ExcludedFromEnforcement
	for _, r := range p.Spec.PrometheusRulesExcludedFromEnforce {
		excluded = append(excluded, monitoringv1.ObjectReference{
			Namespace: r.RuleNamespace, Group: monitoring.GroupName,
			Resource: monitoringv1.PrometheusRuleName, Name: r.RuleName,
		})
	}
	var parserOpts parser.Options
	for _, f := range p.Spec.EnableFeatures {
		switch f {
		case "promql-experimental-functions":
			parserOpts.EnableExperimentalFunctions = true
		case "promql-duration-expr":
			parserOpts.ExperimentalDurationExpr = true
		case "promql-extended-range-selectors":
			parserOpts.EnableExtendedRangeSelectors = true
		case "promql-binop-fill-modifiers":
			parserOpts.EnableBinopFillModifiers = true
		}
	}
	version := operator.StringValOrDefault(p.Spec.Version, operator.DefaultPrometheusVersion)
	sel, err := operator.NewPrometheusRuleSelector(operator.PrometheusFormat, version, p.Spec.RuleSelector,
		namespacelabeler.New(p.Spec.EnforcedNamespaceLabel, excluded, true), ruleInfs, events, logger, parserOpts)
	if err != nil {
		return nil, fmt.Errorf("rule selector: %w", err)
	}
	rules, err := sel.Select(namespaces)
	if err != nil {
		return nil, fmt.Errorf("select PrometheusRules: %w", err)
	}
	syncer := operator.NewPrometheusRuleSyncer(logger, "prometheus-"+p.Name,
		kclient.CoreV1().ConfigMaps(p.Namespace), labels.Set{prompkg.LabelPrometheusName: p.Name}, nil)
	names, err := syncer.Sync(ctx, rules.RuleFiles())
	if err != nil {
		return nil, fmt.Errorf("rule ConfigMaps: %w", err)
	}
	return syncer.AppendConfigMapNames(names, 3), nil
}

// parseConfig parses a Prometheus configuration with Prometheus' config
// package and marshals it back, secrets shown.
func parseConfig(config string) ([]byte, error) {
	cfg, err := promconfig.Load(config, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, fmt.Errorf("parse the configuration: %w", err)
	}
	commoncfg.MarshalSecretValue = true
	return yaml.Marshal(cfg)
}
