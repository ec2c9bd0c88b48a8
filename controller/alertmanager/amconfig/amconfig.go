// Package amconfig builds the Alertmanager configuration of an Alertmanager
// taken over from prometheus-operator, as prometheus-operator builds it: the
// base (the configSecret's alertmanager.yaml, or
// spec.alertmanagerConfiguration), plus one child route per selected
// AlertmanagerConfig with the namespace matcher of
// spec.alertmanagerConfigMatcherStrategy, its receivers, inhibit rules and
// time intervals, and the Secrets and ConfigMaps they reference resolved.
// The result is loaded with Alertmanager's own configuration package before
// it is returned: an AlertmanagerConfig that makes it fail is left out on
// its own, a base that fails is an error. The Alertmanager's
// spec.version gates what the AlertmanagerConfigs and
// spec.alertmanagerConfiguration's global section add as
// prometheus-operator v0.93.1 gates it (versions.go, versions_drop.go,
// versions_global.go): an AlertmanagerConfig with an integration or a key
// that version does not know is left out (the one
// spec.alertmanagerConfiguration names, or a global setting, is an
// error), and the keys prometheus-operator drops for it are dropped. An
// AlertmanagerConfig that references a file of the container where
// spec.alertmanagerConfigFileSystemMode forbids it is left out, as
// prometheus-operator v0.95 rejects it (filesystem.go; unset is v0.95's
// default, FromAlertmanagerConfigMatcherStrategy). The configSecret's
// base is sanitized for spec.version as prometheus-operator sanitizes the
// whole document (versions_base.go): its keys that version does not know
// dropped, an integration it does not know an error.
//
// It is pure: the objects in, the configuration out; what the
// configuration references is read through a Resolver.
package amconfig

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/alertmanager/config"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Version is the version of Alertmanager the configuration is built for
// and loaded with (that of github.com/prometheus/alertmanager in go.mod,
// the image's and the controller's default). The keys an older
// spec.version does not know are dropped or refused as
// prometheus-operator does (versions.go).
const Version = "0.34.0"

// Resolver reads the values the configuration references, in a namespace.
type Resolver interface {
	Secret(ctx context.Context, namespace string, sel corev1.SecretKeySelector) ([]byte, error)
	ConfigMap(ctx context.Context, namespace string, sel corev1.ConfigMapKeySelector) ([]byte, error)
}

// Input is what the configuration of one Alertmanager is built from.
type Input struct {
	// Alertmanager is the object taken over.
	Alertmanager *monitoringv1.Alertmanager
	// Base is the alertmanager.yaml key of the configSecret; nil when the
	// Secret or the key is absent, or when
	// spec.alertmanagerConfiguration is set. Empty, it is
	// prometheus-operator's default configuration, as nil.
	Base []byte
	// Configuration is the AlertmanagerConfig that
	// spec.alertmanagerConfiguration names (in the Alertmanager's
	// namespace); nil when it is not set or the object does not exist.
	Configuration *monitoringv1alpha1.AlertmanagerConfig
	// Configs are the AlertmanagerConfigs the Alertmanager selects. The
	// one spec.alertmanagerConfiguration names is skipped if it is
	// among them, as prometheus-operator skips it. They are ignored when
	// the Alertmanager has neither spec.alertmanagerConfigSelector nor
	// spec.alertmanagerConfiguration: the base is then used as it is.
	Configs []*monitoringv1alpha1.AlertmanagerConfig
	// Resolver reads what the base and the configs reference.
	Resolver Resolver
}

// LeftOut is an AlertmanagerConfig left out of the configuration.
type LeftOut struct {
	// Config names the AlertmanagerConfig.
	Config types.NamespacedName
	// Reason is why: the reference that failed, or the message
	// Alertmanager's parser gave.
	Reason string
}

// String names the AlertmanagerConfig and says why it is left out.
func (l LeftOut) String() string {
	return fmt.Sprintf("AlertmanagerConfig %s left out: %s", l.Config, l.Reason)
}

// Result is a configuration Alertmanager loads.
type Result struct {
	// Config is alertmanager.yaml, uncompressed; the same inputs give the
	// same bytes.
	Config []byte
	// LeftOut are the selected AlertmanagerConfigs left out, sorted by
	// name.
	LeftOut []LeftOut
}

// defaultConfig is what prometheus-operator gives an Alertmanager without
// a configuration: every alert to a receiver that sends nothing.
const defaultConfig = "route:\n  receiver: \"null\"\nreceivers:\n- name: \"null\"\n"

// Generate returns the configuration of in. An error means the base does
// not load: the caller keeps the last good configuration.
//
// Each selected AlertmanagerConfig adds a first-level route in front of
// the base's routes, with the namespace matcher of the strategy and
// continue set, its receivers, inhibition rules and time intervals, their
// names prefixed with <namespace>/<name>/. One that cannot be converted
// (a reference that does not resolve) or that makes Alertmanager's parser
// refuse the configuration is left out on its own; the culprit is found
// by loading each AlertmanagerConfig alone on the base, not every subset.
func Generate(ctx context.Context, in Input) (Result, error) {
	am := in.Alertmanager
	name := types.NamespacedName{Namespace: am.Namespace, Name: am.Name}
	base := in.Base
	if len(base) == 0 {
		base = []byte(defaultConfig)
	}
	if c := am.Spec.AlertmanagerConfiguration; c != nil {
		var err error
		if base, err = fromConfiguration(refs{ctx: ctx, resolver: in.Resolver, namespace: am.Namespace}, am, in.Configuration); err != nil {
			return Result{}, fmt.Errorf("alertmanager %s: %w", name, err)
		}
	}
	if _, err := config.Load(string(base)); err != nil {
		return Result{}, fmt.Errorf("alertmanager %s: base configuration: %w", name, err)
	}
	if am.Spec.AlertmanagerConfigSelector == nil && am.Spec.AlertmanagerConfiguration == nil {
		return Result{Config: base}, nil
	}
	doc, err := parseBase(base)
	if err != nil {
		return Result{}, fmt.Errorf("alertmanager %s: base configuration: %w", name, err)
	}
	if am.Spec.AlertmanagerConfiguration == nil {
		if doc, err = sanitizeBase(doc, am.Spec.Version); err != nil {
			return Result{}, fmt.Errorf("alertmanager %s: base configuration: %w", name, err)
		}
	}

	configs := selected(am, in.Configs)
	s := newStrategy(am)
	var (
		res   Result
		parts []*part
	)
	leaveOut := func(c *monitoringv1alpha1.AlertmanagerConfig, reason string) {
		res.LeftOut = append(res.LeftOut, LeftOut{Config: types.NamespacedName{Namespace: c.Namespace, Name: c.Name}, Reason: reason})
	}
	for _, c := range configs {
		if err := checkFiles(am, c, false); err != nil {
			leaveOut(c, err.Error())
			continue
		}
		if err := checkVersion(c, am.Spec.Version); err != nil {
			leaveOut(c, err.Error())
			continue
		}
		p, err := convertConfig(refs{ctx: ctx, resolver: in.Resolver, namespace: c.Namespace}, c, s)
		if err != nil {
			leaveOut(c, err.Error())
			continue
		}
		dropUnknown(p, am.Spec.Version)
		if _, err := load(doc, []*part{p}); err != nil {
			leaveOut(c, err.Error())
			continue
		}
		parts = append(parts, p)
	}
	// Each loads alone on the base; together they could still clash.
	// Then the ones that do not load on those accepted before them are
	// left out, in order.
	if res.Config, err = load(doc, parts); err != nil {
		var accepted []*part
		for _, p := range parts {
			if _, err := load(doc, append(slices.Clip(accepted), p)); err != nil {
				leaveOut(p.config, err.Error())
				continue
			}
			accepted = append(accepted, p)
		}
		if res.Config, err = load(doc, accepted); err != nil {
			return Result{}, fmt.Errorf("alertmanager %s: %w", name, err)
		}
	}
	slices.SortFunc(res.LeftOut, func(a, b LeftOut) int {
		return cmp.Or(cmp.Compare(a.Config.Namespace, b.Config.Namespace), cmp.Compare(a.Config.Name, b.Config.Name))
	})
	return res, nil
}

// selected returns configs sorted by namespace and name, without the one
// spec.alertmanagerConfiguration names and without duplicates.
func selected(am *monitoringv1.Alertmanager, configs []*monitoringv1alpha1.AlertmanagerConfig) []*monitoringv1alpha1.AlertmanagerConfig {
	out := make([]*monitoringv1alpha1.AlertmanagerConfig, 0, len(configs))
	for _, c := range configs {
		if g := am.Spec.AlertmanagerConfiguration; g != nil && c.Namespace == am.Namespace && c.Name == g.Name {
			continue
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *monitoringv1alpha1.AlertmanagerConfig) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return slices.CompactFunc(out, func(a, b *monitoringv1alpha1.AlertmanagerConfig) bool {
		return a.Namespace == b.Namespace && a.Name == b.Name
	})
}

// load assembles doc and parts and loads the result with Alertmanager's
// configuration package; the error is the parser's.
func load(doc baseDocument, parts []*part) ([]byte, error) {
	b, err := assemble(doc, parts)
	if err != nil {
		return nil, err
	}
	if _, err := config.Load(string(b)); err != nil {
		return nil, fmt.Errorf("alertmanager refuses the configuration: %w", err)
	}
	return b, nil
}
