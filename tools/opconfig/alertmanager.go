package main

// The --alertmanager mode: the Alertmanager configuration
// prometheus-operator generates, with its own ConfigBuilder.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"sort"
	_ "unsafe" // go:linkname, below.

	"github.com/blang/semver/v4"
	alertmanager "github.com/prometheus-operator/prometheus-operator/pkg/alertmanager"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus-operator/prometheus-operator/pkg/assets"
	"github.com/prometheus-operator/prometheus-operator/pkg/operator"
	"go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	kfake "k8s.io/client-go/kubernetes/fake"
)

// initializeFromAlertmanagerConfig is prometheus-operator's
// ConfigBuilder.initializeFromAlertmanagerConfig, which its Alertmanager
// controller calls for spec.alertmanagerConfiguration and does not
// export.
//
//go:linkname initializeFromAlertmanagerConfig github.com/prometheus-operator/prometheus-operator/pkg/alertmanager.(*ConfigBuilder).initializeFromAlertmanagerConfig
func initializeFromAlertmanagerConfig(cb *alertmanager.ConfigBuilder, ctx context.Context, global *monitoringv1.AlertmanagerGlobalConfig, amc *monitoringv1alpha1.AlertmanagerConfig) error

// checkAlertmanagerConfigResource is prometheus-operator's check of an
// AlertmanagerConfig (validation, references, the Alertmanager version's
// features), which its selection runs and does not export.
//
//go:linkname checkAlertmanagerConfigResource github.com/prometheus-operator/prometheus-operator/pkg/alertmanager.checkAlertmanagerConfigResource
func checkAlertmanagerConfigResource(ctx context.Context, amc *monitoringv1alpha1.AlertmanagerConfig, amVersion semver.Version, store *assets.StoreBuilder) error

// defaultAlertmanagerConfig is the configuration prometheus-operator
// gives an Alertmanager whose config Secret or key is missing or empty.
const defaultAlertmanagerConfig = "route:\n  receiver: 'null'\nreceivers:\n- name: 'null'"

// alertmanagerInput is what the --alertmanager mode reads.
type alertmanagerInput struct {
	am         *monitoringv1.Alertmanager
	configs    []*monitoringv1alpha1.AlertmanagerConfig
	secrets    map[string]*corev1.Secret
	namespaces map[string]*corev1.Namespace
	core       []runtime.Object
}

// runAlertmanager is run in --alertmanager mode: the configuration of the
// Alertmanager of in to stdout; exit 2 for unreadable input, 1 when
// prometheus-operator generates no configuration.
func runAlertmanager(in io.Reader, logger *slog.Logger, stdout, stderr io.Writer) int {
	amIn, err := decodeAlertmanager(in)
	if err != nil {
		fmt.Fprintf(stderr, "opconfig: %v\n", err)
		return 2
	}
	cfg, err := generateAlertmanager(context.Background(), logger, amIn)
	if err != nil {
		fmt.Fprintf(stderr, "opconfig: alertmanager %s/%s: %v\n", amIn.am.Namespace, amIn.am.Name, err)
		return 1
	}
	if _, err := stdout.Write(cfg); err != nil {
		fmt.Fprintf(stderr, "opconfig: %v\n", err)
		return 1
	}
	return 0
}

// decodeAlertmanager reads one Alertmanager, AlertmanagerConfigs, Secrets,
// ConfigMaps and Namespaces.
func decodeAlertmanager(r io.Reader) (*alertmanagerInput, error) {
	in := &alertmanagerInput{secrets: map[string]*corev1.Secret{}, namespaces: map[string]*corev1.Namespace{}}
	err := decodeAll(r, func(i int, obj object, _ bool) error {
		switch o := obj.(type) {
		case *monitoringv1.Alertmanager:
			if in.am != nil {
				return fmt.Errorf("two Alertmanager objects: %s/%s and %s/%s", in.am.Namespace, in.am.Name, o.Namespace, o.Name)
			}
			in.am = o
		case *monitoringv1alpha1.AlertmanagerConfig:
			in.configs = append(in.configs, o)
		case *corev1.Secret:
			in.secrets[o.Namespace+"/"+o.Name] = o
			in.core = append(in.core, o)
		case *corev1.ConfigMap:
			in.core = append(in.core, o)
		case *corev1.Namespace:
			in.namespaces[o.Name] = o
		default:
			return fmt.Errorf("document %d: %s is not read in --alertmanager mode", i, obj.GetObjectKind().GroupVersionKind().Kind)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if in.am == nil {
		return nil, errors.New("no Alertmanager object")
	}
	for _, c := range in.configs {
		if _, ok := in.namespaces[c.Namespace]; !ok {
			in.namespaces[c.Namespace] = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.Namespace}}
		}
	}
	for _, ns := range in.namespaces {
		in.core = append(in.core, ns)
	}
	return in, nil
}

// generateAlertmanager runs prometheus-operator's configuration generation
// for in.am, as its Alertmanager controller's
// provisionAlertmanagerConfiguration does.
func generateAlertmanager(ctx context.Context, logger *slog.Logger, in *alertmanagerInput) ([]byte, error) {
	am := in.am
	version, err := semver.ParseTolerant(operator.StringValOrDefault(am.Spec.Version, operator.DefaultAlertmanagerVersion))
	if err != nil {
		return nil, fmt.Errorf("alertmanager version: %w", err)
	}
	raw := []byte(defaultAlertmanagerConfig)
	secretName := am.Spec.ConfigSecret
	if secretName == "" {
		secretName = "alertmanager-" + am.Name
	}
	if s, ok := in.secrets[am.Namespace+"/"+secretName]; ok && len(s.Data["alertmanager.yaml"]) > 0 {
		raw = s.Data["alertmanager.yaml"]
	}
	if am.Spec.AlertmanagerConfigSelector == nil && am.Spec.AlertmanagerConfiguration == nil {
		return raw, nil
	}

	kclient := kfake.NewClientset(in.core...)
	var global *monitoringv1alpha1.AlertmanagerConfig
	if c := am.Spec.AlertmanagerConfiguration; c != nil {
		for _, amc := range in.configs {
			if amc.Namespace == am.Namespace && amc.Name == c.Name {
				global = amc
			}
		}
		if global == nil {
			return nil, fmt.Errorf("global AlertmanagerConfig %s/%s not found", am.Namespace, c.Name)
		}
	}
	store := assets.NewStoreBuilder(kclient.CoreV1(), kclient.CoreV1())
	selected, err := selectAlertmanagerConfigs(ctx, logger, in, version, store)
	if err != nil {
		return nil, err
	}
	cb := alertmanager.NewConfigBuilder(logger, version, store, am)
	if global != nil {
		err = initializeFromAlertmanagerConfig(cb, ctx, am.Spec.AlertmanagerConfiguration.Global, global)
	} else {
		err = cb.InitializeFromRawConfiguration(raw)
	}
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if err := cb.AddAlertmanagerConfigs(ctx, selected); err != nil {
		return nil, err
	}
	out, err := cb.MarshalJSON()
	if err != nil {
		return nil, err
	}
	if c := am.Spec.AlertmanagerConfiguration; c != nil && len(c.Templates) > 0 {
		// The controller appends the templates to the builder's
		// configuration, which is not exported: to the output here.
		var doc yaml.MapSlice
		if err := yaml.Unmarshal(out, &doc); err != nil {
			return nil, err
		}
		var templates []string
		for _, t := range c.Templates {
			if t.ConfigMap != nil {
				templates = append(templates, path.Join("/etc/alertmanager/templates", t.ConfigMap.Key))
			}
			if t.Secret != nil {
				templates = append(templates, path.Join("/etc/alertmanager/templates", t.Secret.Key))
			}
		}
		for i := range doc {
			if doc[i].Key == "templates" {
				doc[i].Value = templates
			}
		}
		return yaml.Marshal(doc)
	}
	return out, nil
}

// selectAlertmanagerConfigs selects the AlertmanagerConfigs of in.am as
// prometheus-operator's selectAlertmanagerConfigs does, and rejects the
// invalid ones with its checkAlertmanagerConfigResource. A rejected one
// is logged, as prometheus-operator logs it.
func selectAlertmanagerConfigs(ctx context.Context, logger *slog.Logger, in *alertmanagerInput, version semver.Version, store *assets.StoreBuilder) (map[string]*monitoringv1alpha1.AlertmanagerConfig, error) {
	am := in.am
	nsSel := labels.Nothing()
	if am.Spec.AlertmanagerConfigNamespaceSelector != nil {
		var err error
		if nsSel, err = metav1.LabelSelectorAsSelector(am.Spec.AlertmanagerConfigNamespaceSelector); err != nil {
			return nil, err
		}
	}
	sel, err := metav1.LabelSelectorAsSelector(am.Spec.AlertmanagerConfigSelector)
	if err != nil {
		return nil, err
	}
	out := map[string]*monitoringv1alpha1.AlertmanagerConfig{}
	keys := []string{}
	for _, c := range in.configs {
		ns := in.namespaces[c.Namespace]
		inNamespace := c.Namespace == am.Namespace
		if am.Spec.AlertmanagerConfigNamespaceSelector != nil {
			inNamespace = nsSel.Matches(labels.Set(ns.Labels))
		}
		if !inNamespace || !sel.Matches(labels.Set(c.Labels)) {
			continue
		}
		if g := am.Spec.AlertmanagerConfiguration; g != nil && c.Namespace == am.Namespace && c.Name == g.Name {
			continue
		}
		keys = append(keys, c.Namespace+"/"+c.Name)
		out[c.Namespace+"/"+c.Name] = c
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := checkAlertmanagerConfigResource(ctx, out[k], version, store); err != nil {
			logger.Warn("skipping alertmanagerconfig", "alertmanagerconfig", k, "err", err.Error())
			delete(out, k)
		}
	}
	return out, nil
}
