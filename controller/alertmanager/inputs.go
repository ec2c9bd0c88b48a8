package alertmanager

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/alertmanager/amconfig"
	"github.com/podreload/podreload/controller/store"
)

// base reads the configSecret of am: its alertmanager.yaml (nil when the
// Secret, the key or its content is absent: amconfig's default applies,
// as prometheus-operator's) and its other keys, which the generated
// Secret carries too. With spec.alertmanagerConfiguration there is no
// base Secret.
func base(ctx context.Context, reader client.Reader, am *monitoringv1.Alertmanager) ([]byte, map[string][]byte, error) {
	if am.Spec.AlertmanagerConfiguration != nil {
		return nil, nil, nil
	}
	var s corev1.Secret
	err := reader.Get(ctx, client.ObjectKey{Namespace: am.Namespace, Name: configSecretName(am)}, &s)
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("get Secret %s/%s: %w", am.Namespace, configSecretName(am), err)
	}
	config := s.Data[baseKey]
	others := maps.Clone(s.Data)
	delete(others, baseKey)
	if len(config) == 0 {
		config = nil
	}
	return config, others, nil
}

// globalConfig reads the AlertmanagerConfig spec.alertmanagerConfiguration
// names, in am's namespace, as prometheus-operator reads it: nil when am
// names none, and when it does not exist (amconfig.Generate then fails,
// naming it, as prometheus-operator's sync fails).
func globalConfig(ctx context.Context, c client.Reader, am *monitoringv1.Alertmanager) (*monitoringv1alpha1.AlertmanagerConfig, error) {
	g := am.Spec.AlertmanagerConfiguration
	if g == nil {
		return nil, nil
	}
	var amc monitoringv1alpha1.AlertmanagerConfig
	switch err := c.Get(ctx, client.ObjectKey{Namespace: am.Namespace, Name: g.Name}, &amc); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case meta.IsNoMatchError(err):
		return nil, fmt.Errorf("alertmanager %s/%s: spec.alertmanagerConfiguration: AlertmanagerConfig %s/%s: the AlertmanagerConfig CRD is not installed", am.Namespace, am.Name, am.Namespace, g.Name)
	case err != nil:
		return nil, fmt.Errorf("alertmanager %s/%s: spec.alertmanagerConfiguration: get AlertmanagerConfig %s/%s: %w", am.Namespace, am.Name, am.Namespace, g.Name, err)
	}
	return &amc, nil
}

// selectConfigs lists the AlertmanagerConfigs am selects, sorted by
// namespace and name: none with a nil alertmanagerConfigSelector (as
// prometheus-operator), in am's namespace with a nil
// alertmanagerConfigNamespaceSelector.
func selectConfigs(ctx context.Context, c client.Reader, am *monitoringv1.Alertmanager) ([]*monitoringv1alpha1.AlertmanagerConfig, error) {
	if am.Spec.AlertmanagerConfigSelector == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(am.Spec.AlertmanagerConfigSelector)
	if err != nil {
		return nil, fmt.Errorf("spec.alertmanagerConfigSelector: %w", err)
	}
	namespaces := []string{am.Namespace}
	if nsSel := am.Spec.AlertmanagerConfigNamespaceSelector; nsSel != nil {
		s, err := metav1.LabelSelectorAsSelector(nsSel)
		if err != nil {
			return nil, fmt.Errorf("spec.alertmanagerConfigNamespaceSelector: %w", err)
		}
		var list corev1.NamespaceList
		if err := c.List(ctx, &list, client.MatchingLabelsSelector{Selector: s}); err != nil {
			return nil, fmt.Errorf("list namespaces: %w", err)
		}
		namespaces = namespaces[:0]
		for _, ns := range list.Items {
			namespaces = append(namespaces, ns.Name)
		}
	}
	var out []*monitoringv1alpha1.AlertmanagerConfig
	for _, ns := range namespaces {
		var list monitoringv1alpha1.AlertmanagerConfigList
		err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel})
		if meta.IsNoMatchError(err) {
			return nil, nil // Without the CRD there is none to select.
		}
		if err != nil {
			return nil, fmt.Errorf("list AlertmanagerConfigs in %s: %w", ns, err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	slices.SortFunc(out, func(a, b *monitoringv1alpha1.AlertmanagerConfig) int {
		return cmp.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out, nil
}

// resolver reads the Secrets and ConfigMaps the configuration references
// from the API server, and remembers them for the Tracker: a change of
// one renders the Alertmanager again.
type resolver struct {
	reader client.Reader
	mu     sync.Mutex
	refs   []store.Ref
}

var _ amconfig.Resolver = (*resolver)(nil)

func (r *resolver) note(ref store.Ref) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refs = store.Union(r.refs, []store.Ref{ref})
}

// Secret reads the key sel names in the Secret it names in namespace.
func (r *resolver) Secret(ctx context.Context, namespace string, sel corev1.SecretKeySelector) ([]byte, error) {
	r.note(store.Ref{Kind: store.Secret, Namespace: namespace, Name: sel.Name})
	var s corev1.Secret
	if err := r.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: sel.Name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("secret %q not found (looking for key %q)", namespace+"/"+sel.Name, sel.Key)
		}
		return nil, fmt.Errorf("get Secret %s/%s: %w", namespace, sel.Name, err)
	}
	v, ok := s.Data[sel.Key]
	if !ok {
		return nil, fmt.Errorf("secret %q has no key %q", namespace+"/"+sel.Name, sel.Key)
	}
	return v, nil
}

// ConfigMap reads the key sel names in the ConfigMap it names in
// namespace.
func (r *resolver) ConfigMap(ctx context.Context, namespace string, sel corev1.ConfigMapKeySelector) ([]byte, error) {
	r.note(store.Ref{Kind: store.ConfigMap, Namespace: namespace, Name: sel.Name})
	var cm corev1.ConfigMap
	if err := r.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: sel.Name}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("configmap %q not found (looking for key %q)", namespace+"/"+sel.Name, sel.Key)
		}
		return nil, fmt.Errorf("get ConfigMap %s/%s: %w", namespace, sel.Name, err)
	}
	if v, ok := cm.Data[sel.Key]; ok {
		return []byte(v), nil
	}
	if v, ok := cm.BinaryData[sel.Key]; ok {
		return v, nil
	}
	return nil, fmt.Errorf("configmap %q has no key %q", namespace+"/"+sel.Name, sel.Key)
}
