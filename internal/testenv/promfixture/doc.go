// Package promfixture holds the fixtures and checks that the tests of the
// Prometheus configuration and rule files share: the benchmark inputs, the
// YAML readers of the test cases, and the promtool checks of what is
// rendered (packages controller/promcfg, controller/rulefiles,
// controller/prometheus and controller/prometheusserver). It is for tests
// only, and holds the strict gunzip of their Secrets (Gunzip).
//
// It imports no package of the controller, so that the pure packages'
// tests may use it without depending on what they must not.
package promfixture
