package takeover

import (
	"fmt"
	"log/slog"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Served reports whether the API server serves kind of gv, one of
// prometheus-operator's kinds taken over. A
// cluster without its CRD has no object of the kind to take over: the
// controller runs all the same, and logs why (the kind, and the cause).
func Served(mapper meta.RESTMapper, logger *slog.Logger, gv schema.GroupVersion, kind string) (bool, error) {
	_, err := mapper.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
	switch {
	case meta.IsNoMatchError(err):
		logger.Warn("prometheus-operator's CRD is not installed: no object of its kind is taken over (install it and restart the controller)", "kind", kind, "err", err)
		return false, nil
	case err != nil:
		return false, fmt.Errorf("take over %s objects: %w", kind, err)
	}
	return true, nil
}

// Changed passes the events of an object taken over that its reconciler
// acts on: its creation and deletion, and a change of its spec (its
// generation), labels or annotations (AnnotationControllerID among them).
func Changed() predicate.Predicate {
	return predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{})
}
