package controller

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podreload/podreload/api/v1alpha1"
)

// Selected reports whether a pair of selectors of server selects obj, the
// way prometheus-operator reads them: selector must match the labels of obj
// (nil selects nothing, {} everything); nsSelector nil means the server's own
// namespace only, {} every namespace, anything else the namespaces whose
// labels (from namespaces, by name) it matches. An object in a namespace
// missing from namespaces is not selected. Both selectors are checked even
// when the answer is already known, so an invalid one is never hidden.
func Selected(server *v1alpha1.PrometheusServer, selector, nsSelector *metav1.LabelSelector, obj metav1.Object, namespaces map[string]labels.Set) (bool, error) {
	if selector == nil {
		return false, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return false, fmt.Errorf("parse label selector: %w", err)
	}
	nsSel := labels.Everything()
	if nsSelector != nil {
		if nsSel, err = metav1.LabelSelectorAsSelector(nsSelector); err != nil {
			return false, fmt.Errorf("parse namespace selector: %w", err)
		}
	}
	if !sel.Matches(labels.Set(obj.GetLabels())) {
		return false, nil
	}
	switch {
	case nsSelector == nil:
		return obj.GetNamespace() == server.Namespace, nil
	case nsSel.Empty():
		return true, nil
	}
	nsLabels, ok := namespaces[obj.GetNamespace()]
	return ok && nsSel.Matches(nsLabels), nil
}
