// Package selector is how a pair of selectors of prometheus-operator's
// kinds (an object selector and a namespace selector, such as a
// Prometheus' serviceMonitorSelector and serviceMonitorNamespaceSelector)
// selects objects, the way prometheus-operator reads them. It is pure: it
// imports no client.
//
// Where things are:
//
//	selector.go  Pair, Parse and Selects
package selector

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Selects reports whether a pair of selectors of an object in namespace
// selects obj, the way prometheus-operator reads them: selector must match
// the labels of obj (nil selects nothing, {} everything); nsSelector nil
// means namespace only, {} every namespace, anything else the namespaces
// whose labels (from namespaces, by name) it matches. An object in a
// namespace missing from namespaces is not selected. Both selectors are
// checked even when the answer is already known, so an invalid one is
// never hidden.
func Selects(namespace string, selector, nsSelector *metav1.LabelSelector, obj metav1.Object, namespaces map[string]labels.Set) (bool, error) {
	p, err := Parse(namespace, selector, nsSelector)
	if err != nil {
		return false, err
	}
	return p.Selects(obj, namespaces), nil
}

// Pair is a pair of selectors of an object in a namespace, parsed.
type Pair struct {
	// objects selects the objects by label; nil selects none.
	objects labels.Selector
	// namespaces selects the namespaces by label; nil means namespace only.
	namespaces labels.Selector
	namespace  string
}

// Parse parses selector and nsSelector, of an object in namespace, both
// whatever the other is.
func Parse(namespace string, selector, nsSelector *metav1.LabelSelector) (Pair, error) {
	p := Pair{namespace: namespace}
	var err error
	if selector != nil {
		if p.objects, err = metav1.LabelSelectorAsSelector(selector); err != nil {
			return Pair{}, fmt.Errorf("parse label selector: %w", err)
		}
	}
	if nsSelector != nil {
		if p.namespaces, err = metav1.LabelSelectorAsSelector(nsSelector); err != nil {
			return Pair{}, fmt.Errorf("parse namespace selector: %w", err)
		}
	}
	return p, nil
}

// Selects reports whether p selects obj, with the labels of the namespaces
// by name.
func (p Pair) Selects(obj metav1.Object, namespaces map[string]labels.Set) bool {
	switch {
	case p.objects == nil || !p.objects.Matches(labels.Set(obj.GetLabels())):
		return false
	case p.namespaces == nil:
		return obj.GetNamespace() == p.namespace
	case p.namespaces.Empty():
		return true
	}
	nsLabels, ok := namespaces[obj.GetNamespace()]
	return ok && p.namespaces.Matches(nsLabels)
}
