// Package controller renders and reconciles the objects of a PrometheusServer:
// the gzipped configuration Secret, the sharded rules ConfigMaps, a headless
// Service and the StatefulSet whose pods run Prometheus with the
// config-reloader sidecar.
package controller

import (
	// controller-runtime is pinned here until the reconciler uses it.
	_ "sigs.k8s.io/controller-runtime/pkg/client"
)
