// Package controller renders and reconciles the objects of a PrometheusServer.
package controller

import (
	// Pinned here until the rendering code uses them.
	_ "github.com/prometheus/prometheus/model/rulefmt"
	_ "github.com/prometheus/prometheus/promql/parser"
	_ "sigs.k8s.io/controller-runtime/pkg/client"
)
