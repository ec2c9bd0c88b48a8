package takeover

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options configure the takeover of prometheus-operator's kinds.
type Options struct {
	// ControllerID is the value of AnnotationControllerID of the objects
	// taken over. Empty takes over those without the annotation or with
	// an empty value, as prometheus-operator's own --controller-id does:
	// the match is exact.
	ControllerID string
}

// Check is what taking over an object would do, for `controller
// takeover-check`: whether it can be taken over and what rolls.
type Check struct {
	// Kind, Namespace and Name name the object.
	Kind, Namespace, Name string
	// ControllerID is its AnnotationControllerID (absent reads as empty).
	ControllerID string
	// Unsupported are the fields it sets that keep it from being taken
	// over (JSON paths, sorted, and reasons that are not a field's); none
	// when it can be.
	Unsupported []string
	// Invalid are the fields it sets that prometheus-operator's own
	// validation refuses ("<path>: <message>"): taken over, it is not
	// rendered until they go.
	Invalid []string
	// StatefulSets are the StatefulSets whose pods roll once, to the
	// podreload sidecar.
	StatefulSets []string
	// DaemonSet, when not empty, is the DaemonSet whose pods roll once
	// instead (a PrometheusAgent in DaemonSet mode).
	DaemonSet string
	// Replicas is the number of pods of each StatefulSet.
	Replicas int32
	// Warnings are what the API server would warn of, reading the object
	// from a file: a key set twice (the last is read), a field that is
	// not one but for its case (dropped).
	Warnings []string
	// Notes are what taking it over renders differently from what the
	// prometheus-operator it runs under may render today, by default
	// (an Alertmanager's AlertmanagerConfigs left out for
	// alertmanagerConfigFileSystemMode, prometheus-operator v0.95's).
	Notes []string
}

// Checker tells, without a cluster, what taking over the objects of one
// kind would do: `controller takeover-check` runs the Checker of each
// kind of the table of kinds that has one, on objects it decodes (New)
// or lists (NewList).
type Checker struct {
	// Kind is the kind's name, as in an object's kind field.
	Kind string
	// APIVersion is its group and version, as in an object's apiVersion.
	APIVersion string
	// New returns an empty object of the kind, NewList an empty list.
	New     func() client.Object
	NewList func() client.ObjectList
	// check tells what taking over an object of New would do.
	check func(client.Object) (Check, bool)
}

// NewChecker returns the Checker of the objects P of kind (apiVersion),
// listed as L, that check tells about.
func NewChecker[P client.Object, L client.ObjectList](kind, apiVersion string, newObj func() P, newList func() L, check func(P) Check) Checker {
	return Checker{
		Kind: kind, APIVersion: apiVersion,
		New:     func() client.Object { return newObj() },
		NewList: func() client.ObjectList { return newList() },
		check: func(obj client.Object) (Check, bool) {
			p, ok := obj.(P)
			if !ok {
				return Check{}, false
			}
			return check(p), true
		},
	}
}

// Check tells what taking over obj, an object of New or an item of a
// list of NewList, would do.
func (c Checker) Check(obj client.Object) (Check, error) {
	out, ok := c.check(obj)
	if !ok {
		return Check{}, fmt.Errorf("check %s %s/%s: a %T, not a %s", c.Kind, obj.GetNamespace(), obj.GetName(), obj, c.Kind)
	}
	return out, nil
}
