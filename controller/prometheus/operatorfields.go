package prometheus

import (
	"github.com/podreload/podreload/controller/promoperator"
	"github.com/podreload/podreload/controller/takeover"
)

// thanosTLSIgnored is why the fields of spec.thanos.grpcServerTlsConfig
// but the files, versions, cipher suites and curves change nothing.
const thanosTLSIgnored = "prometheus-operator v0.93.1 renders nothing for it (the sidecar's gRPC TLS takes minVersion, the files, cipherSuites and curves alone), nor does podreload"

// operatorFields is the takeover's field coverage of prometheus-operator's
// Prometheus spec at the pinned version, the common fields
// (promoperator.CommonFields) and its own: every field has a row
// (TestOperatorFieldsCoverTheSpec walks the type), and
// docs/prometheus-operator.md is its rendering (TestOperatorFieldMatrix).
func operatorFields() []takeover.Field {
	const (
		selector = promoperator.MappedSelector
		nsSel    = promoperator.MappedNamespaceSelector
	)
	mapped := takeover.Mapped
	return append(append(promoperator.CommonFields(),
		// PrometheusSpec's own fields.
		mapped("baseImage", "spec.image, composed as prometheus-operator's BuildImagePath (deprecated)"),
		mapped("tag", "spec.image, composed as prometheus-operator's BuildImagePath (deprecated)"),
		mapped("sha", "spec.image, composed as prometheus-operator's BuildImagePath (deprecated)"),
		mapped("retention", "spec.retention; unset, with no retentionSize, 24h (prometheus-operator's default, not podreload's 15d)"),
		mapped("retentionSize", "spec.retentionSize"),
		mapped("retentionPercentage", "storage.tsdb.retention.percentage of the configuration from Prometheus 3.11 (nothing before: there is no flag), above 0 in place of the default retention time, outside 0 to 100 an error (InvalidSpec), as prometheus-operator v0.94.1's generator renders it (read, not run: TestOperatorConfigDiff runs v0.93.1's, which does not know the field)"),
		mapped("shardRetentionPolicy", "the StatefulSets of the shards scaled away: deleted, or with whenScaled Retain annotated with prometheus-operator's deletion deadline (now plus retain.retentionPeriod, else the retention; never with a size-based retention alone) and deleted once it is past, as prometheus-operator does with its PrometheusShardRetentionPolicy feature gate on"),
		mapped("disableCompaction", "spec.disableCompaction: --storage.tsdb.max-block-duration and min-block-duration 2h; with tsdb.outOfOrderTimeWindow, --no-storage.tsdb.allow-overlapping-compaction from Prometheus 2.55"),
		mapped("rules", "spec.rules: the rules.alert.* flags"),
		mapped("prometheusRulesExcludedFromEnforce", "appended to spec.excludedFromEnforcement as PrometheusRule references, as prometheus-operator (deprecated)"),
		mapped("ruleSelector", selector),
		mapped("ruleNamespaceSelector", nsSel),
		mapped("query", "spec.query: the query.* flags"),
		mapped("alerting.alertmanagers[].namespace", "spec.alerting.alertmanagers[].namespace; unset is the object's"),
		mapped("alerting.alertmanagers[].name", "spec.alerting.alertmanagers[].name"),
		mapped("alerting.alertmanagers[].port", "spec.alerting.alertmanagers[].port"),
		mapped("alerting.alertmanagers[].scheme", "spec.alerting.alertmanagers[].scheme, lower-cased"),
		mapped("alerting.alertmanagers[].pathPrefix", "spec.alerting.alertmanagers[].pathPrefix"),
		mapped("alerting.alertmanagers[].tlsConfig", "spec.alerting.alertmanagers[].tlsConfig"),
		mapped("alerting.alertmanagers[].basicAuth", "spec.alerting.alertmanagers[].basicAuth (from Prometheus 2.26)"),
		mapped("alerting.alertmanagers[].bearerTokenFile", "spec.alerting.alertmanagers[].bearerTokenFile: bearer_token_file (deprecated)"),
		mapped("alerting.alertmanagers[].authorization", "spec.alerting.alertmanagers[].authorization (from Prometheus 2.26)"),
		mapped("alerting.alertmanagers[].sigv4", "sigv4 from Prometheus 2.48, the keys read from their Secrets; with no other authentication"),
		mapped("alerting.alertmanagers[].proxyUrl", "spec.alerting.alertmanagers[].proxyUrl"),
		mapped("alerting.alertmanagers[].noProxy", "spec.alerting.alertmanagers[].noProxy"),
		mapped("alerting.alertmanagers[].proxyFromEnvironment", "spec.alerting.alertmanagers[].proxyFromEnvironment"),
		mapped("alerting.alertmanagers[].proxyConnectHeader", "spec.alerting.alertmanagers[].proxyConnectHeader"),
		mapped("alerting.alertmanagers[].apiVersion", "spec.alerting.alertmanagers[].apiVersion (v2 only: v1 is refused, InvalidSpec)"),
		mapped("alerting.alertmanagers[].timeout", "spec.alerting.alertmanagers[].timeout"),
		mapped("alerting.alertmanagers[].enableHttp2", "spec.alerting.alertmanagers[].enableHttp2 (from Prometheus 2.35)"),
		mapped("alerting.alertmanagers[].relabelings", "spec.alerting.alertmanagers[].relabelings: after the controller's"),
		mapped("alerting.alertmanagers[].alertRelabelings", "spec.alerting.alertmanagers[].alertRelabelings (from Prometheus 2.51)"),
		mapped("additionalAlertRelabelConfigs", "spec.additionalAlertRelabelConfigs: after the replica label's labeldrop"),
		mapped("additionalAlertManagerConfigs", "spec.additionalAlertManagerConfigs: after the Alertmanagers of alerting"),
		mapped("remoteRead", "the remote_read section, each key from the Prometheus version that has it, as prometheus-operator (a Prometheus field only, not a PrometheusServer one)"),
		mapped("queryLogFile", "global.query_log_file from Prometheus 2.16; a name without a directory is in /var/log/prometheus, the emptyDir log-file, as prometheus-operator mounts it (not when scrapeFailureLogFile is set)"),
		mapped("allowOverlappingBlocks", "--storage.tsdb.allow-overlapping-blocks from Prometheus 2.11 to 2.38, as prometheus-operator (deprecated)"),
		mapped("exemplars", "spec.exemplars: storage.exemplars.max_exemplars"),
		mapped("evaluationInterval", "spec.evaluationInterval; unset is 30s"),
		mapped("ruleQueryOffset", "spec.ruleQueryOffset: global.rule_query_offset"),
		mapped("enableAdminAPI", "spec.enableAdminAPI"),
	), thanosFields()...)
}

// thanosFields are the rows of spec.thanos, the Thanos sidecar (package
// promserver/thanos renders it).
func thanosFields() []takeover.Field {
	mapped, ignored := takeover.Mapped, takeover.Ignored
	return []takeover.Field{
		mapped("thanos.image", "the thanos-sidecar container's image, as is"),
		mapped("thanos.version", "the sidecar's image tag as written (default v0.42.2, prometheus-operator's) and the Thanos version its flags are gated on; one that is not a version is an error (InvalidSpec), as prometheus-operator writes no StatefulSet for it"),
		mapped("thanos.baseImage", "the sidecar's image, composed as prometheus-operator's BuildImagePath (deprecated; default quay.io/thanos/thanos)"),
		mapped("thanos.tag", "the sidecar's image, composed as prometheus-operator's BuildImagePath (deprecated)"),
		mapped("thanos.sha", "the sidecar's image, composed as prometheus-operator's BuildImagePath (deprecated)"),
		mapped("thanos.resources", "the sidecar's resources"),
		mapped("thanos.objectStorageConfig", "--objstore.config=$(OBJSTORE_CONFIG), the variable from the Secret's key; the data volume mounted, --tsdb.path; Prometheus' blocks not compacted (blockSize) or, from Prometheus 3.9 with Thanos 0.41, compacted once uploaded (--storage.tsdb.delay-compact-file.path, the shipper's meta file)"),
		mapped("thanos.objectStorageConfigFile", "--objstore.config-file (over objectStorageConfig), with the data volume and compaction as objectStorageConfig's"),
		mapped("thanos.listenLocal", "the sidecar's gRPC and HTTP servers on 127.0.0.1 (deprecated)"),
		mapped("thanos.grpcListenLocal", "--grpc-address=127.0.0.1:10901"),
		mapped("thanos.httpListenLocal", "--http-address=127.0.0.1:10902"),
		mapped("thanos.tracingConfig", "--tracing.config=$(TRACING_CONFIG), the variable from the Secret's key"),
		mapped("thanos.tracingConfigFile", "--tracing.config-file (over tracingConfig)"),
		mapped("thanos.grpcServerTlsConfig.certFile", "--grpc-server-tls-cert"),
		mapped("thanos.grpcServerTlsConfig.keyFile", "--grpc-server-tls-key"),
		mapped("thanos.grpcServerTlsConfig.caFile", "--grpc-server-tls-client-ca"),
		mapped("thanos.grpcServerTlsConfig.minVersion", "--grpc-server-tls-min-version from Thanos 0.37"),
		mapped("thanos.grpcServerTlsConfig.cipherSuites", "--grpc-server-tls-ciphers, one per suite, from Thanos 0.42"),
		mapped("thanos.grpcServerTlsConfig.curves", "--grpc-server-tls-curves, one per curve, from Thanos 0.42"),
		ignored("thanos.grpcServerTlsConfig.ca", thanosTLSIgnored),
		ignored("thanos.grpcServerTlsConfig.cert", thanosTLSIgnored),
		ignored("thanos.grpcServerTlsConfig.keySecret", thanosTLSIgnored),
		ignored("thanos.grpcServerTlsConfig.serverName", thanosTLSIgnored),
		ignored("thanos.grpcServerTlsConfig.insecureSkipVerify", thanosTLSIgnored),
		ignored("thanos.grpcServerTlsConfig.maxVersion", thanosTLSIgnored),
		mapped("thanos.logLevel", "--log.level of the sidecar; unset, spec.logLevel's"),
		mapped("thanos.logFormat", "--log.format of the sidecar; unset, spec.logFormat's"),
		mapped("thanos.minTime", "--min-time"),
		mapped("thanos.blockSize", "Prometheus' --storage.tsdb.max-block-duration and min-block-duration when its blocks are not compacted (default 2h)"),
		mapped("thanos.readyTimeout", "--prometheus.ready_timeout"),
		mapped("thanos.getConfigInterval", "--prometheus.get_config_interval from Thanos 0.29"),
		mapped("thanos.getConfigTimeout", "--prometheus.get_config_timeout from Thanos 0.29"),
		mapped("thanos.volumeMounts", "mounted in the sidecar by name and mount path alone, as prometheus-operator copies them"),
		mapped("thanos.additionalArgs", "after the sidecar's flags; one naming a flag the sidecar is given (or its no- form) is an error (InvalidSpec), as prometheus-operator writes no StatefulSet for it"),
	}
}
