// Package promfixture holds the fixtures and checks that the tests of the
// Prometheus configuration and rule files share: the benchmark inputs, the
// YAML readers of the test cases, and the promtool checks of what is
// rendered (packages controller/promcfg, controller/rulefiles and
// controller/prometheus). It is for tests only.
//
// It imports no package of the controller, so that the pure packages'
// tests may use it without depending on what they must not.
package promfixture
