// Package compat holds what prometheus-operator does alike for several of
// podreload's packages, which read and render as it does: its tolerant
// version parse and its rendering of arguments as flags. It is pure (no
// client, no other package of the controller), so that the pure renderers
// and the takeover's shared package both import it.
package compat

import (
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

// SemverTolerant reads a version as prometheus-operator does (blang's
// semver.ParseTolerant: spaces and a leading v trimmed, leading zeros
// dropped, a missing minor or patch is 0) and returns it without the v;
// ok is false when it is not a version.
func SemverTolerant(v string) (string, bool) {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 3 && strings.ContainsAny(parts[len(parts)-1], "+-") {
		return v, false
	}
	for len(parts) < 3 {
		parts = append(parts, "0")
	}
	core, suffix := parts[2], ""
	if i := strings.IndexAny(core, "+-"); i >= 0 {
		core, suffix = core[:i], core[i:]
	}
	nums := []string{parts[0], parts[1], core}
	for i, n := range nums {
		u, err := strconv.ParseUint(n, 10, 64)
		if err != nil {
			return v, false
		}
		nums[i] = strconv.FormatUint(u, 10)
	}
	return strings.Join(nums, ".") + suffix, true
}

// CommandLine renders arguments as flags, as prometheus-operator renders
// additionalArgs and its own: --name=value, or --name alone.
func CommandLine(args []monitoringv1.Argument) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = "--" + a.Name
		if a.Value != "" {
			out[i] += "=" + a.Value
		}
	}
	return out
}
