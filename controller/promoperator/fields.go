package promoperator

import (
	"reflect"

	"github.com/podreload/podreload/controller/sidecar"
	"github.com/podreload/podreload/controller/takeover"
)

// Reasons and descriptions the field tables of the kinds share.
const (
	// ReasonGlobal refuses a global setting of the configuration not
	// rendered.
	ReasonGlobal = "a global setting of the configuration podreload does not render yet"
	// MappedSelector describes a selector of objects, mapped.
	MappedSelector = "mapped as is: nil selects none, {} every object"
	// MappedNamespaceSelector describes a selector of namespaces, mapped.
	MappedNamespaceSelector = "mapped as is: nil means the object's namespace, {} every namespace"
)

// CommonFields are the rows of prometheus-operator's
// CommonPrometheusFields, which a Prometheus and a PrometheusAgent spec
// both inline, in the takeover's field tables (takeover.Field): each
// kind's table is these and its own.
//
//nolint:funlen // A table, one row per field of the upstream spec: its length is the spec's, not logic.
func CommonFields() []takeover.Field {
	const (
		pod      = "a pod setting podreload does not render yet"
		selector = MappedSelector
		nsSel    = MappedNamespaceSelector
	)
	refuse, refuseBut, limit, mapped, ignored := takeover.Refuse, takeover.RefuseBut, takeover.Limit, takeover.Mapped, takeover.Ignored
	return []takeover.Field{
		mapped("podMetadata", "spec.podMetadata; the selector labels win"),
		mapped("serviceMonitorSelector", selector),
		mapped("serviceMonitorNamespaceSelector", nsSel),
		mapped("podMonitorSelector", selector),
		mapped("podMonitorNamespaceSelector", nsSel),
		mapped("probeSelector", selector),
		mapped("probeNamespaceSelector", nsSel),
		mapped("scrapeConfigSelector", selector),
		mapped("scrapeConfigNamespaceSelector", nsSel),
		mapped("version", "spec.version; with no image, the tag of the image composed from baseImage (default v3.13.1, prometheus-operator's, or the version the running StatefulSet runs when newer: a takeover never downgrades Prometheus); a version that is not one, or of a Prometheus other than 2 and 3, is listed as refused, for prometheus-operator fails on it"),
		mapped("paused", "spec.paused: nothing is written"),
		mapped("image", "spec.image as is; unset, the image prometheus-operator composes from baseImage, sha, tag and version"),
		mapped("imagePullPolicy", "spec.imagePullPolicy, on Prometheus and on the config-reloader containers"),
		mapped("imagePullSecrets", "spec.imagePullSecrets"),
		mapped("replicas", "spec.replicas; unset or negative is 1, as prometheus-operator"),
		mapped("shards", "spec.shards; unset or below 1 is 1, as prometheus-operator"),
		refuseBut("shardingStrategy", "topology sharding (behind a feature gate) adds a zone to every shard; accepted: mode Address (the default) without topology",
			func(v reflect.Value) bool {
				return takeover.StringIn(v.Elem().FieldByName("Mode"), "", "Address") && v.Elem().FieldByName("Topology").IsNil()
			}),
		mapped("replicaExternalLabelName", "spec.replicaExternalLabelName: the replica label's name (\"\" drops it), which alerts drop"),
		mapped("prometheusExternalLabelName", "spec.prometheusExternalLabelName: the server label's name (\"\" drops it)"),
		mapped("logLevel", "spec.logLevel, passed to the reloaders too (--log-level) when not info, as prometheus-operator does"),
		mapped("logFormat", "spec.logFormat, passed to the reloaders too (--log-format) when not logfmt, as prometheus-operator does"),
		mapped("scrapeInterval", "spec.scrapeInterval; unset is 30s"),
		mapped("scrapeTimeout", "spec.scrapeTimeout"),
		mapped("scrapeProtocols", "spec.scrapeProtocols: global.scrape_protocols from Prometheus 2.49, PrometheusText1.0.0 from 3.0, as prometheus-operator"),
		mapped("externalLabels", "spec.externalLabels; prometheus and prometheus_replica win"),
		mapped("enableRemoteWriteReceiver", "spec.enableRemoteWriteReceiver: --web.enable-remote-write-receiver from Prometheus 2.33"),
		mapped("enableOTLPReceiver", "--web.enable-otlp-receiver from Prometheus 3, the feature otlp-write-receiver (a flag of its own) from 2.47; unset, on with an otlp section, as prometheus-operator"),
		mapped("remoteWriteReceiverMessageVersions", "spec.remoteWriteReceiverMessageVersions: --web.remote-write-receiver.accepted-protobuf-messages from Prometheus 2.54, with enableRemoteWriteReceiver"),
		mapped("enableFeatures", "spec.enableFeatures"),
		mapped("externalUrl", "spec.externalUrl"),
		mapped("routePrefix", "spec.routePrefix"),
		mapped("storage.disableMountSubPath", "the data volume mounted without the sub-path prometheus-db (deprecated)"),
		mapped("storage.emptyDir", "spec.storage.emptyDir"),
		mapped("storage.ephemeral", "the data volume a generic ephemeral volume, prometheus-<name>-db, as prometheus-operator (the reloaders keep their state in Secrets: no claim template)"),
		ignored("storage.volumeClaimTemplate.apiVersion", "cleared from the claim template, as prometheus-operator does"),
		ignored("storage.volumeClaimTemplate.kind", "cleared from the claim template, as prometheus-operator does"),
		mapped("storage.volumeClaimTemplate.metadata", "spec.storage.volumeClaimTemplate.metadata; a storage with neither emptyDir nor ephemeral is a claim template, as prometheus-operator"),
		mapped("storage.volumeClaimTemplate.spec", "spec.storage.volumeClaimTemplate.spec"),
		ignored("storage.volumeClaimTemplate.status", "a status in a claim template changes nothing the StatefulSet controller creates"),
		mapped("volumes", "spec.volumes; a name the controller uses is refused (InvalidSpec)"),
		mapped("volumeMounts", "spec.volumeMounts, on the Prometheus container after the data volume's"),
		mapped("persistentVolumeClaimRetentionPolicy", "the StatefulSets', as prometheus-operator sets it"),
		mapped("web.tlsConfig.certFile", "cert_file, the path as it is (a file the pod mounts: secrets, configMaps, volumes), as prometheus-operator writes it; the config-reloader then reloads at https://localhost without verifying the certificate, as prometheus-operator's does"),
		refuse("web.tlsConfig.keyFile", takeover.ReasonKeyFile),
		mapped("web.tlsConfig.clientCAFile", "client_ca_file, the path as it is, as prometheus-operator writes it (with a clientAuthType that asks for client certificates, as client_ca)"),
		limit("web.tlsConfig.clientAuthType", "a type that requires a client certificate leaves the pods never ready (the kubelet's probes present none); accepted: NoClientCert, RequestClientCert, VerifyClientCertIfGiven",
			takeover.OnlyStrings("NoClientCert", "RequestClientCert", "VerifyClientCertIfGiven")),
		mapped("web.tlsConfig.cert", "spec.web.tlsConfig.cert"),
		mapped("web.tlsConfig.keySecret", "spec.web.tlsConfig.keySecret"),
		mapped("web.tlsConfig.client_ca", "spec.web.tlsConfig.client_ca"),
		mapped("web.tlsConfig.minVersion", "spec.web.tlsConfig.minVersion"),
		mapped("web.tlsConfig.maxVersion", "spec.web.tlsConfig.maxVersion"),
		mapped("web.tlsConfig.cipherSuites", "spec.web.tlsConfig.cipherSuites"),
		mapped("web.tlsConfig.preferServerCipherSuites", "spec.web.tlsConfig.preferServerCipherSuites"),
		mapped("web.tlsConfig.curvePreferences", "spec.web.tlsConfig.curvePreferences"),
		mapped("web.httpConfig", "spec.web.httpConfig"),
		mapped("web.pageTitle", "spec.web.pageTitle"),
		mapped("web.maxConnections", "spec.web.maxConnections"),
		mapped("resources", "spec.resources"),
		mapped("nodeSelector", "spec.nodeSelector"),
		mapped("schedulerName", "spec.schedulerName"),
		mapped("serviceAccountName", "spec.serviceAccountName"),
		mapped("automountServiceAccountToken", "unset or true, the pods mount the token and the config-reloaders read the configuration and the rule files through the API server and report what Prometheus runs (ConfigApplied); false, the pods mount none, as prometheus-operator's (Prometheus' Kubernetes service discovery then needs apiserverConfig's credentials, as there), the config-reloaders read the volumes (a change 60 to 90 s later, when the kubelet syncs it), keep their state on the data volume and report nothing: ConfigApplied Unknown, NotReported"),
		mapped("secrets", "spec.secrets: volumes secret-<name> at /etc/prometheus/secrets/<name>, as prometheus-operator"),
		mapped("configMaps", "spec.configMaps: volumes configmap-<name> at /etc/prometheus/configmaps/<name>, as prometheus-operator"),
		mapped("affinity", "spec.affinity"),
		mapped("tolerations", "spec.tolerations"),
		mapped("topologySpreadConstraints", "spec.topologySpreadConstraints"),
		mapped("remoteWrite[].url", "spec.remoteWrite[].url"),
		mapped("remoteWrite[].name", "spec.remoteWrite[].name (written from Prometheus 2.15)"),
		mapped("remoteWrite[].messageVersion", "protobuf_message from Prometheus 2.54 (metadata_config.send false with V2.0), as prometheus-operator"),
		mapped("remoteWrite[].sendExemplars", "spec.remoteWrite[].sendExemplars (from Prometheus 2.27)"),
		mapped("remoteWrite[].sendNativeHistograms", "spec.remoteWrite[].sendNativeHistograms (from Prometheus 2.40)"),
		mapped("remoteWrite[].remoteTimeout", "spec.remoteWrite[].remoteTimeout; unset is 30s, Prometheus' default"),
		mapped("remoteWrite[].headers", "spec.remoteWrite[].headers (from Prometheus 2.15)"),
		mapped("remoteWrite[].writeRelabelConfigs", "spec.remoteWrite[].writeRelabelConfigs"),
		mapped("remoteWrite[].oauth2", "spec.remoteWrite[].oauth2 (from Prometheus 2.27, its proxy and TLS settings from 2.43)"),
		mapped("remoteWrite[].basicAuth", "spec.remoteWrite[].basicAuth"),
		mapped("remoteWrite[].bearerTokenFile", "bearer_token_file (deprecated)"),
		mapped("remoteWrite[].authorization", "spec.remoteWrite[].authorization; refused before Prometheus 2.26, where prometheus-operator's generator fails on it"),
		mapped("remoteWrite[].sigv4", "sigv4 from Prometheus 2.26 (external_id from 3.11, use_fips_sts_endpoint from 2.54), the keys read from their Secrets, as prometheus-operator; with no other authentication"),
		mapped("remoteWrite[].azureAd", "azuread from Prometheus 2.45 (scope from 3.9), the OAuth client secret read from its Secret, checked as prometheus-operator checks it: one of managedIdentity (with a clientId before 3.5), oauth (from 2.48), sdk (from 2.52), workloadIdentity (from 3.7), UUIDs where Azure wants them"),
		mapped("remoteWrite[].bearerToken", "bearer_token (deprecated)"),
		mapped("remoteWrite[].tlsConfig", "spec.remoteWrite[].tlsConfig"),
		mapped("remoteWrite[].proxyUrl", "spec.remoteWrite[].proxyUrl"),
		mapped("remoteWrite[].noProxy", "spec.remoteWrite[].noProxy"),
		mapped("remoteWrite[].proxyFromEnvironment", "spec.remoteWrite[].proxyFromEnvironment"),
		mapped("remoteWrite[].proxyConnectHeader", "spec.remoteWrite[].proxyConnectHeader"),
		mapped("remoteWrite[].followRedirects", "spec.remoteWrite[].followRedirects (from Prometheus 2.26)"),
		mapped("remoteWrite[].queueConfig", "spec.remoteWrite[].queueConfig, each key for the Prometheus versions that have it, as prometheus-operator (min_shards from 2.6, max_retries before 2.11, retry_on_http_429 from 2.26, sample_age_limit from 2.50)"),
		mapped("remoteWrite[].metadataConfig", "spec.remoteWrite[].metadataConfig (from Prometheus 2.23, maxSamplesPerSend from 2.29; send false with messageVersion V2.0)"),
		mapped("remoteWrite[].enableHTTP2", "spec.remoteWrite[].enableHTTP2 (from Prometheus 2.35)"),
		mapped("remoteWrite[].roundRobinDNS", "round_robin_dns from Prometheus 3.1"),
		mapped("otlp", "the otlp section, each key from the Prometheus version that has it, checked as prometheus-operator checks it (refused before Prometheus 2.55)"),
		mapped("securityContext", "spec.securityContext; unset stays unset (no pod security context, as prometheus-operator), not podreload's default"),
		mapped("dnsPolicy", "spec.dnsPolicy"),
		mapped("dnsConfig", "spec.dnsConfig"),
		mapped("listenLocal", "--web.listen-address=127.0.0.1:9090, no container port, probes by a command in the container (curl or wget on localhost), the config-reloader on localhost:8080 without a port, as prometheus-operator (a Prometheus field only, not a PrometheusServer one)"),
		mapped("podManagementPolicy", "the StatefulSets'; unset, Parallel; an existing StatefulSet's is kept (it cannot change)"),
		mapped("updateStrategy", "the StatefulSets' (type and rollingUpdate.maxUnavailable); unset, RollingUpdate"),
		mapped("enableServiceLinks", "spec.enableServiceLinks"),
		limit("containers", "merged into the rendered containers as prometheus-operator merges them (takeover.MergeContainers): one named prometheus or config-reloader is a strategic merge patch of it, the others appended after them; accepted: every one but a config-reloader patch setting image, command or args (podreload's config-reloader runs neither prometheus-operator's image nor its flags)",
			takeover.OnlyPatches(sidecar.ContainerName)),
		limit("initContainers", "merged into the rendered init container as prometheus-operator merges them: one named init-config-reloader is a strategic merge patch of it, the others appended after it; accepted: every one but an init-config-reloader patch setting image, command or args",
			takeover.OnlyPatches(sidecar.InitContainerName)),
		mapped("additionalScrapeConfigs", "spec.additionalScrapeConfigs"),
		mapped("apiserverConfig", "api_server and its credentials (basic auth, bearer token or file, authorization from Prometheus 2.26, TLS, proxy) in every Kubernetes service discovery of the ServiceMonitors, PodMonitors, Probes and Alertmanagers, as prometheus-operator (not in those of ScrapeConfigs)"),
		mapped("priorityClassName", "spec.priorityClassName"),
		mapped("portName", "spec.portName: the name of Prometheus' port (default web), which the probes use"),
		mapped("arbitraryFSAccessThroughSMs", "spec.arbitraryFSAccessThroughSMs: with deny, the ServiceMonitors whose endpoints read the pod's files (bearerTokenFile, tlsConfig caFile, certFile, keyFile) are left out, as prometheus-operator"),
		mapped("overrideHonorLabels", "spec.overrideHonorLabels: honor_labels false on the jobs of ServiceMonitors, PodMonitors and ScrapeConfigs"),
		mapped("overrideHonorTimestamps", "spec.overrideHonorTimestamps: honor_timestamps false on the jobs of monitors, Probes and the ScrapeConfigs that set it"),
		mapped("ignoreNamespaceSelectors", "spec.ignoreNamespaceSelectors: the monitors and Probes discover in their own namespace only"),
		mapped("enforcedNamespaceLabel", "spec.enforcedNamespaceLabel"),
		mapped("enforcedSampleLimit", "spec.enforcedSampleLimit: caps the sample_limit of every job and the global one, as prometheus-operator"),
		mapped("enforcedTargetLimit", "spec.enforcedTargetLimit: caps the target_limit of every job and the global one, as prometheus-operator"),
		mapped("enforcedLabelLimit", "spec.enforcedLabelLimit: caps the label_limit of every job and the global one, as prometheus-operator"),
		mapped("enforcedLabelNameLengthLimit", "spec.enforcedLabelNameLengthLimit: caps the label_name_length_limit of every job and the global one, as prometheus-operator"),
		mapped("enforcedLabelValueLengthLimit", "spec.enforcedLabelValueLengthLimit: caps the label_value_length_limit of every job and the global one, as prometheus-operator"),
		mapped("enforcedKeepDroppedTargets", "spec.enforcedKeepDroppedTargets: caps the keep_dropped_targets of every job and the global one, as prometheus-operator"),
		mapped("enforcedBodySizeLimit", "spec.enforcedBodySizeLimit: caps the body_size_limit of every job and the global one, as prometheus-operator"),
		mapped("nameValidationScheme", "spec.nameValidationScheme: global.metric_name_validation_scheme from Prometheus 3.0"),
		mapped("nameEscapingScheme", "spec.nameEscapingScheme: global.metric_name_escaping_scheme from Prometheus 3.4"),
		mapped("convertClassicHistogramsToNHCB", "spec.convertClassicHistogramsToNHCB: global.convert_classic_histograms_to_nhcb from Prometheus 3.4"),
		mapped("scrapeNativeHistograms", "spec.scrapeNativeHistograms: global.scrape_native_histograms from Prometheus 3.8"),
		mapped("scrapeClassicHistograms", "spec.scrapeClassicHistograms: global.always_scrape_classic_histograms from Prometheus 3.5"),
		refuse("extraScrapeMetrics", "prometheus-operator v0.95's (a global setting, or a feature flag before Prometheus 3.10): what its generator renders for it cannot be checked, the module proxy serves no prometheus-operator v0.95 (v0.95.2 is refused) and TestOperatorConfigDiff runs v0.93.1's"),
		mapped("minReadySeconds", "the StatefulSets'"),
		mapped("hostAliases", "spec.hostAliases"),
		mapped("additionalArgs", "spec.additionalArgs; a flag podreload sets is refused (InvalidSpec)"),
		mapped("walCompression", "spec.walCompression"),
		mapped("excludedFromEnforcement", "spec.excludedFromEnforcement"),
		mapped("hostNetwork", "the pods'; dnsPolicy ClusterFirstWithHostNet unless dnsPolicy is set, as prometheus-operator"),
		mapped("podTargetLabels", "after each ServiceMonitor's and PodMonitor's own podTargetLabels, as prometheus-operator"),
		mapped("tracingConfig", "the tracing section (client type and compression lower-cased, as prometheus-operator)"),
		mapped("bodySizeLimit", "spec.bodySizeLimit: global.body_size_limit from Prometheus 2.45"),
		mapped("sampleLimit", "spec.sampleLimit: global.sample_limit (above 0) from Prometheus 2.45"),
		mapped("targetLimit", "spec.targetLimit: global.target_limit (above 0) from Prometheus 2.45"),
		mapped("labelLimit", "spec.labelLimit: global.label_limit (above 0) from Prometheus 2.45"),
		mapped("labelNameLengthLimit", "spec.labelNameLengthLimit: global.label_name_length_limit (above 0) from Prometheus 2.45"),
		mapped("labelValueLengthLimit", "spec.labelValueLengthLimit: global.label_value_length_limit (above 0) from Prometheus 2.45"),
		mapped("keepDroppedTargets", "spec.keepDroppedTargets: global.keep_dropped_targets (above 0) from Prometheus 2.47"),
		mapped("reloadStrategy", "spec.reloader.reloadMethod: HTTP is http, ProcessSignal is signal (a shared process namespace; podreload keeps --web.enable-lifecycle)"),
		mapped("maximumStartupDurationSeconds", "the startup probe: from 60 s on, a failure threshold of ceil(s/60) and a period of ceil(s/threshold), as prometheus-operator; unset, 15 s × 60"),
		mapped("scrapeClasses", "spec.scrapeClasses (files only in tlsConfig and authorization, as prometheus-operator)"),
		mapped("serviceDiscoveryRole", "spec.serviceDiscoveryRole: the role of the ServiceMonitors that set none and of the Alertmanagers (EndpointSlice from Prometheus 2.21, as prometheus-operator); Prometheus' service account reads EndpointSlices (deploy/example/prometheus-rbac.yaml)"),
		mapped("tsdb.outOfOrderTimeWindow", "spec.tsdb.outOfOrderTimeWindow: storage.tsdb.out_of_order_time_window from Prometheus 2.39 (an agent's from 2.54)"),
		mapped("tsdb.staleSeriesCompactionThreshold", "storage.tsdb.stale_series_compaction_threshold from Prometheus 3.10 (between 0 and 1)"),
		mapped("tsdb.chunkEncoding", "storage.tsdb.chunk_encoding.floats, lower-cased, from Prometheus 3.13 (Xor refused with the st-storage feature, as prometheus-operator); an agent's with no other TSDB setting (prometheus-operator writes a storage section for each, which Prometheus refuses)"),
		mapped("scrapeFailureLogFile", "global.scrape_failure_log_file from Prometheus 2.55; a name without a directory is in /var/log/prometheus, the emptyDir log-file, as prometheus-operator mounts it"),
		mapped("serviceName", "the StatefulSets' governing Service, which must exist and select the pods (else nothing more is written, and the reconcile is retried), prometheus-operated left as it is, as prometheus-operator; an existing StatefulSet's is kept (it cannot change)"),
		mapped("runtime", "runtime.gogc from Prometheus 2.53"),
		mapped("terminationGracePeriodSeconds", "spec.terminationGracePeriodSeconds; unset is 600 in both"),
		mapped("hostUsers", "spec.hostUsers"),
	}
}
