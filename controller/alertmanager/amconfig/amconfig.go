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
	"context"

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
