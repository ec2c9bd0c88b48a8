package promoperator

import (
	"fmt"
	"strings"
)

// RefusedVersion is the entry of a takeover's unsupported fields for the
// Prometheus version v (takeover.Image's, ok false when it is not one):
// "version" for what prometheus-operator cannot parse, the version named
// for a major other than 2 and 3, which its generator refuses ("unsupported
// Prometheus version", pkg/prometheus/promcfg.go), "" for a version it
// renders.
func RefusedVersion(v string, ok bool) string {
	if !ok {
		return "version"
	}
	if major, _, _ := strings.Cut(v, "."); major != "2" && major != "3" {
		return fmt.Sprintf("spec.version: Prometheus v%s, and prometheus-operator renders Prometheus 2 and 3 only", v)
	}
	return ""
}
