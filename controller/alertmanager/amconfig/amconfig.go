// Package amconfig builds the Alertmanager configuration of an Alertmanager
// taken over from prometheus-operator, as prometheus-operator builds it: the
// base (the configSecret's alertmanager.yaml, or
// spec.alertmanagerConfiguration), plus one child route per selected
// AlertmanagerConfig with the namespace matcher of
// spec.alertmanagerConfigMatcherStrategy, its receivers, inhibit rules and
// time intervals, and the Secrets and ConfigMaps they reference resolved.
// The result is loaded with Alertmanager's own configuration package before
// it is returned: an AlertmanagerConfig that makes it fail is left out on
// its own, a base that fails is an error.
//
// It is pure: the objects in, the configuration out; what the
// configuration references is read through a Resolver.
package amconfig

import (
	"fmt"

	"context"
	"github.com/prometheus/alertmanager/config"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

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
	// spec.alertmanagerConfiguration is set.
	Base []byte
	// Configs are the AlertmanagerConfigs the Alertmanager selects.
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
// Only the base is built so far; AlertmanagerConfigs are left out, each
// with that reason.
func Generate(_ context.Context, in Input) (Result, error) {
	base := in.Base
	if base == nil {
		base = []byte(defaultConfig)
	}
	if _, err := config.Load(string(base)); err != nil {
		return Result{}, fmt.Errorf("alertmanager %s/%s: base configuration: %w", in.Alertmanager.Namespace, in.Alertmanager.Name, err)
	}
	res := Result{Config: base}
	for _, c := range in.Configs {
		res.LeftOut = append(res.LeftOut, LeftOut{Config: types.NamespacedName{Namespace: c.Namespace, Name: c.Name}, Reason: "AlertmanagerConfigs are not built yet"})
	}
	return res, nil
}
