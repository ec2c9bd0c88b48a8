// Package controller runs the managed kinds: New builds the manager
// (package kube) and sets up, from the table of kinds (kinds.go: each
// kind's name, scheme, setup and takeover check), the reconciler of each;
// cmd/controller runs the Controller it returns, and its takeover-check
// the checks of the table (TakeoverCheckers).
//
// The packages below it, and the direction of their imports (checked by
// depguard, .golangci.yml):
//
//	controller/           Options, New, the table of managed kinds
//	controller/prometheusserver the PrometheusServer kind: its front, its status
//	controller/prometheus prometheus-operator's Prometheus taken over: its
//	                      conversion and field table on promoperator
//	controller/prometheusagent prometheus-operator's PrometheusAgent taken
//	                      over, the same way
//	controller/promoperator what prometheus-operator's kinds that run
//	                      Prometheus share, taken over: the takeover variant,
//	                      the status, the common fields
//	controller/promserver what the kinds that run Prometheus share: the
//	                      model, the layout as a value, render, writes,
//	                      watches, the reconciler of a kind's front
//	controller/alertmanager prometheus-operator's Alertmanager taken over;
//	                      amconfig/ builds its configuration
//	controller/takeover   kind-neutral: what the kinds taken over share (one
//	                      lifecycle each configures as a variant, the
//	                      controller id, the hand-back, the field tables)
//	controller/kube       kind-neutral: the manager and its caches, the
//	                      reconcile metrics by kind, the coalescing of an
//	                      object's events into renders; writing
//	                      objects (create or update, server-side apply of
//	                      StatefulSets with recreate, delete, several at
//	                      once), owner any object; Warning Events
//	controller/store      kind-neutral: the referenced Secrets and ConfigMaps,
//	                      typed references, one resolver, who references what
//	controller/webconfig  kind-neutral: the web configuration file of spec.web
//	                      (exporter-toolkit's), its checks, Secret and pod parts
//	controller/sidecar    kind-neutral: the config-reloader's containers, its
//	                      source, the Role and RoleBinding of its pods, its
//	                      state Secrets, their reports and their timing
//	controller/promcfg    pure: a PrometheusServer and its monitors into
//	                      prometheus.yaml (a server's or an agent's), with
//	                      credential/ (HTTP clients' credentials from Secrets)
//	                      and relabeling/ (relabelings, checked and built in)
//	controller/rulefiles  pure: PrometheusRules into checked rule files in
//	                      ConfigMap shards, and the order of their writes
//	controller/configsecret pure: a configuration as gzipped Secret contents,
//	                      split into parts through a cache
//	controller/promyaml   pure: the YAML writer of the configuration and rules
//	controller/selector   pure: a pair of (object, namespace) selectors
//	contract/             what the controller and the config-reloader agree on:
//	                      the content hash, the applied report, the part lines
//
// A kind imports promserver (the kinds that run Prometheus), promoperator
// (prometheus-operator's among them, taken over), kube, store,
// webconfig, sidecar, takeover, the pure packages and contract, never
// another kind nor this package; they know no kind. (The envtest suite of
// the kinds that run Prometheus, prometheusserver's tests, runs the
// Prometheus kind beside: its tests alone import it.) The pure packages import no client (controller-runtime,
// client-go) and, of the controller's packages, only the pure ones
// below them (TestPureDeps checks their dependencies). docs/adding-a-kind.md
// says where a new kind goes, step by step.
package controller
