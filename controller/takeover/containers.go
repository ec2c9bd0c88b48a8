package takeover

import (
	"encoding/json"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// MergeContainers merges a spec's containers (or init containers) into
// the rendered ones as prometheus-operator does (pkg/k8s/merge.go
// MergePatchContainers at v0.94.1): each of patches named as one of base
// is a strategic merge patch of it (the fields it sets win; env, ports
// and volume mounts merged by their keys, args replaced), in base's
// order; the others are appended, in their order. A probe the merge left
// with two handlers keeps the patch's.
func MergeContainers(base, patches []corev1.Container) ([]corev1.Container, error) {
	byName := make(map[string]corev1.Container, len(patches))
	for _, p := range patches {
		byName[p.Name] = p
	}
	out := make([]corev1.Container, 0, len(base)+len(patches))
	for _, c := range base {
		p, ok := byName[c.Name]
		if !ok {
			out = append(out, c)
			continue
		}
		merged, err := mergeContainer(c, p)
		if err != nil {
			return nil, fmt.Errorf("container %s: %w", c.Name, err)
		}
		out = append(out, merged)
		delete(byName, c.Name)
	}
	for _, p := range patches {
		// As prometheus-operator: a name twice is the last of them, twice.
		if c, ok := byName[p.Name]; ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// mergeContainer is c patched with p, a strategic merge patch of the
// fields p sets.
func mergeContainer(c, p corev1.Container) (corev1.Container, error) {
	original, err := json.Marshal(c)
	if err != nil {
		return c, err
	}
	patch, err := json.Marshal(p)
	if err != nil {
		return c, err
	}
	b, err := strategicpatch.StrategicMergePatch(original, patch, corev1.Container{})
	if err != nil {
		return c, fmt.Errorf("strategic merge patch: %w", err)
	}
	var merged corev1.Container
	if err := json.Unmarshal(b, &merged); err != nil {
		return c, err
	}
	for _, pr := range []struct{ merged, patch *corev1.Probe }{
		{merged.StartupProbe, p.StartupProbe}, {merged.ReadinessProbe, p.ReadinessProbe}, {merged.LivenessProbe, p.LivenessProbe},
	} {
		if pr.merged != nil && pr.patch != nil && handlers(pr.merged.ProbeHandler) > 1 {
			pr.merged.ProbeHandler = pr.patch.ProbeHandler
		}
	}
	return merged, nil
}

// handlers counts the handlers a probe sets.
func handlers(h corev1.ProbeHandler) int {
	n := 0
	for _, set := range []bool{h.HTTPGet != nil, h.TCPSocket != nil, h.Exec != nil, h.GRPC != nil} {
		if set {
			n++
		}
	}
	return n
}

// PatchesOnly reports whether none of containers named as one of names
// sets image, command or args: the rendered containers of those names are
// podreload's config-reloaders, which neither run prometheus-operator's
// image nor take its flags, so such a patch cannot mean the same.
func PatchesOnly(containers []corev1.Container, names ...string) bool {
	for _, c := range containers {
		for _, n := range names {
			if c.Name == n && (c.Image != "" || len(c.Command) > 0 || len(c.Args) > 0) {
				return false
			}
		}
	}
	return true
}

// OnlyPatches accepts, as the Accepts of a field's row, a list of
// containers none of which patches the image, command or args of the
// config-reloader container name (PatchesOnly): podreload's
// config-reloader runs neither prometheus-operator's image nor its flags.
func OnlyPatches(name string) func(reflect.Value) bool {
	return func(v reflect.Value) bool {
		containers, _ := v.Interface().([]corev1.Container)
		return PatchesOnly(containers, name)
	}
}
