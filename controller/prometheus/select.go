package prometheus

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podreload/podreload/api/v1alpha1"
)

// isSelected reports whether a pair of selectors of server selects obj, the
// way prometheus-operator reads them: selector must match the labels of obj
// (nil selects nothing, {} everything); nsSelector nil means the server's own
// namespace only, {} every namespace, anything else the namespaces whose
// labels (from namespaces, by name) it matches. An object in a namespace
// missing from namespaces is not selected. Both selectors are checked even
// when the answer is already known, so an invalid one is never hidden.
func isSelected(server *v1alpha1.PrometheusServer, selector, nsSelector *metav1.LabelSelector, obj metav1.Object, namespaces map[string]labels.Set) (bool, error) {
	s, err := newSelection(server, selector, nsSelector)
	if err != nil {
		return false, err
	}
	return s.selects(obj, namespaces), nil
}

// selection is a pair of selectors of a server, parsed.
type selection struct {
	// objects selects the objects by label; nil selects none.
	objects labels.Selector
	// namespaces selects the namespaces by label; nil means namespace only.
	namespaces labels.Selector
	namespace  string
}

// newSelection parses selector and nsSelector, both whatever the other is.
func newSelection(server *v1alpha1.PrometheusServer, selector, nsSelector *metav1.LabelSelector) (selection, error) {
	s := selection{namespace: server.Namespace}
	var err error
	if selector != nil {
		if s.objects, err = metav1.LabelSelectorAsSelector(selector); err != nil {
			return selection{}, fmt.Errorf("parse label selector: %w", err)
		}
	}
	if nsSelector != nil {
		if s.namespaces, err = metav1.LabelSelectorAsSelector(nsSelector); err != nil {
			return selection{}, fmt.Errorf("parse namespace selector: %w", err)
		}
	}
	return s, nil
}

// selects reports whether s selects obj, with the labels of the namespaces
// by name.
func (s selection) selects(obj metav1.Object, namespaces map[string]labels.Set) bool {
	switch {
	case s.objects == nil || !s.objects.Matches(labels.Set(obj.GetLabels())):
		return false
	case s.namespaces == nil:
		return obj.GetNamespace() == s.namespace
	case s.namespaces.Empty():
		return true
	}
	nsLabels, ok := namespaces[obj.GetNamespace()]
	return ok && s.namespaces.Matches(nsLabels)
}
