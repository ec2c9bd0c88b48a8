package promcfg

import (
	yaml "go.yaml.in/yaml/v2"

	"github.com/podreload/podreload/api/v1alpha1"
)

// EnforcedLabel is the label spec.enforcedNamespaceLabel sets on the
// targets, series and rules of the object of kind in namespace named name:
// "" when it is not set, or spec.excludedFromEnforcement spares the object
// (an entry without a name spares its whole namespace).
func EnforcedLabel(spec *v1alpha1.PrometheusServerSpec, kind, namespace, name string) string {
	if spec.EnforcedNamespaceLabel == "" {
		return ""
	}
	for _, ex := range spec.ExcludedFromEnforcement {
		if ex.GroupKind().Kind == kind && ex.Namespace == namespace && (ex.Name == "" || ex.Name == name) {
			return ""
		}
	}
	return spec.EnforcedNamespaceLabel
}

// appendEnforced appends to relabelings the one that sets label to the
// namespace ns, when label is not "": last, so that no relabeling of the
// user's can change it, as prometheus-operator does.
func appendEnforced(relabelings []yaml.MapSlice, label, ns string) []yaml.MapSlice {
	if label == "" {
		return relabelings
	}
	return append(relabelings, yaml.MapSlice{{Key: "target_label", Value: label}, {Key: "replacement", Value: ns}})
}
