// Package controller runs the managed kinds: New builds the manager
// (package kube) and sets up, from the table of kinds (kinds.go), the
// reconciler of each; cmd/controller runs the Controller it returns.
//
// Where things are:
//
//	controller.go   New, Options, Controller
//	kinds.go        the table of managed kinds
//	kube/           kind-neutral: the manager and its caches, writing objects
//	prometheus/     the PrometheusServer kind: render, reconcile, status
package controller
