// Package e2e runs the real pieces of a pod together: the kubelet's atomic
// writer (bin/projector) updates Secret- and ConfigMap-style volumes,
// config-reloader renders and reloads, and a real Prometheus (bin/prometheus,
// built by `make tools`) is asked, through its own API, what it runs; the
// oldest v2 Prometheus built here (bin/prometheus-v2.35) runs what the
// takeover renders for its version.
//
// Run it with `go test -race ./e2e/`. The suite builds config-reloader from
// the working tree, with the race detector, unless PODRELOAD_E2E_CONFIG_RELOADER
// names a binary to use instead.
package e2e
