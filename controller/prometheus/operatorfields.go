package prometheus

import (
	"reflect"
	"slices"
	"strings"
)

// fieldClass is what a takeover does with a field of prometheus-operator's
// PrometheusSpec.
type fieldClass int

const (
	// fieldMapped fields are carried into the PrometheusServer spec with
	// prometheus-operator's meaning (fromPrometheus).
	fieldMapped fieldClass = iota + 1
	// fieldIgnored fields change nothing podreload renders.
	fieldIgnored
	// fieldRefused fields, when set to a value they do not accept, keep
	// the object from being taken over.
	fieldRefused
)

func (c fieldClass) String() string {
	switch c {
	case fieldMapped:
		return "mapped"
	case fieldIgnored:
		return "ignored"
	case fieldRefused:
		return "refused"
	}
	return "unknown"
}

// operatorField classifies one field of monitoringv1.PrometheusSpec (with
// CommonPrometheusFields inlined) by its JSON path: dot-separated JSON
// names, "[]" after a list whose items are classified field by field. A
// row covers the field and everything under it.
type operatorField struct {
	path  string
	class fieldClass
	// note says what a mapped field becomes (and how it differs), why an
	// ignored field changes nothing, why a refused field is refused and
	// which values it accepts.
	note string
	// accepts, for a refused field, are the values set that can be taken
	// over all the same, because podreload renders what they ask for; nil
	// accepts only the zero value (a nil pointer, an empty list, false).
	accepts func(v reflect.Value) bool
}

// operatorFields is the takeover's field coverage of prometheus-operator's
// Prometheus spec at the pinned version: every field has a row
// (TestOperatorFieldsCoverTheSpec walks the type), and
// docs/prometheus-operator.md is its rendering (TestOperatorFieldMatrix).
//
//nolint:funlen // A table, one row per field of the upstream spec: its length is the spec's, not logic.
func operatorFields() []operatorField {
	const (
		flag     = "a Prometheus flag podreload does not render yet"
		global   = "a global setting of the configuration podreload does not render yet"
		genJobs  = "changes the jobs prometheus-operator generates from the monitors; podreload's generator has no such setting yet"
		pod      = "a pod setting podreload does not render yet"
		rwLater  = "a remote write setting podreload does not render yet"
		amLater  = "an Alertmanager endpoint setting podreload does not render yet"
		selector = "mapped as is: nil selects none, {} every object"
		nsSel    = "mapped as is: nil means the object's namespace, {} every namespace"
	)
	refuse := func(path, note string) operatorField {
		return operatorField{path: path, class: fieldRefused, note: note}
	}
	refuseBut := func(path, note string, accepts func(reflect.Value) bool) operatorField {
		return operatorField{path: path, class: fieldRefused, note: note, accepts: accepts}
	}
	mapped := func(path, note string) operatorField {
		return operatorField{path: path, class: fieldMapped, note: note}
	}
	ignored := func(path, note string) operatorField {
		return operatorField{path: path, class: fieldIgnored, note: note}
	}
	return []operatorField{
		// CommonPrometheusFields.
		mapped("podMetadata", "spec.podMetadata; the selector labels win"),
		mapped("serviceMonitorSelector", selector),
		mapped("serviceMonitorNamespaceSelector", nsSel),
		mapped("podMonitorSelector", selector),
		mapped("podMonitorNamespaceSelector", nsSel),
		mapped("probeSelector", selector),
		mapped("probeNamespaceSelector", nsSel),
		mapped("scrapeConfigSelector", selector),
		mapped("scrapeConfigNamespaceSelector", nsSel),
		mapped("version", "spec.version; with no image, the tag of the image composed from baseImage (default v3.13.1, prometheus-operator's); a version that is not one is listed as refused, for prometheus-operator fails on it"),
		mapped("paused", "spec.paused: nothing is written"),
		mapped("image", "spec.image as is; unset, the image prometheus-operator composes from baseImage, sha, tag and version"),
		mapped("imagePullPolicy", "spec.imagePullPolicy, on Prometheus and on the config-reloader containers"),
		mapped("imagePullSecrets", "spec.imagePullSecrets"),
		mapped("replicas", "spec.replicas; unset or negative is 1, as prometheus-operator"),
		mapped("shards", "spec.shards; unset or below 1 is 1, as prometheus-operator"),
		refuseBut("shardingStrategy", "topology sharding (behind a feature gate) adds a zone to every shard; accepted: mode Address (the default) without topology",
			func(v reflect.Value) bool {
				return stringIn(v.Elem().FieldByName("Mode"), "", "Address") && v.Elem().FieldByName("Topology").IsNil()
			}),
		mapped("replicaExternalLabelName", "spec.replicaExternalLabelName: the replica label's name (\"\" drops it), which alerts drop"),
		mapped("prometheusExternalLabelName", "spec.prometheusExternalLabelName: the server label's name (\"\" drops it)"),
		mapped("logLevel", "spec.logLevel (Prometheus only: the reloaders keep their own)"),
		mapped("logFormat", "spec.logFormat (Prometheus only: the reloaders keep their own)"),
		mapped("scrapeInterval", "spec.scrapeInterval; unset is 30s"),
		mapped("scrapeTimeout", "spec.scrapeTimeout"),
		refuse("scrapeProtocols", global),
		mapped("externalLabels", "spec.externalLabels; prometheus and prometheus_replica win"),
		refuse("enableRemoteWriteReceiver", flag),
		refuseBut("enableOTLPReceiver", flag+"; accepted: false", onlyBool(false)),
		refuse("remoteWriteReceiverMessageVersions", flag),
		mapped("enableFeatures", "spec.enableFeatures"),
		mapped("externalUrl", "spec.externalUrl"),
		mapped("routePrefix", "spec.routePrefix"),
		refuseBut("storage.disableMountSubPath", "the data volume's sub-path is not rendered per object yet; accepted: false", onlyBool(false)),
		mapped("storage.emptyDir", "spec.storage.emptyDir"),
		refuse("storage.ephemeral", "an ephemeral data volume is not rendered yet"),
		ignored("storage.volumeClaimTemplate.apiVersion", "cleared from the claim template, as prometheus-operator does"),
		ignored("storage.volumeClaimTemplate.kind", "cleared from the claim template, as prometheus-operator does"),
		mapped("storage.volumeClaimTemplate.metadata", "spec.storage.volumeClaimTemplate.metadata; a storage with neither emptyDir nor ephemeral is a claim template, as prometheus-operator"),
		mapped("storage.volumeClaimTemplate.spec", "spec.storage.volumeClaimTemplate.spec"),
		ignored("storage.volumeClaimTemplate.status", "a status in a claim template changes nothing the StatefulSet controller creates"),
		mapped("volumes", "spec.volumes; a name the controller uses is refused (InvalidSpec)"),
		mapped("volumeMounts", "spec.volumeMounts, on the Prometheus container after the data volume's"),
		refuse("persistentVolumeClaimRetentionPolicy", "a StatefulSet setting podreload does not render yet"),
		refuse("web.tlsConfig.certFile", "podreload renders the web configuration's certificates from Secrets and ConfigMaps (cert, keySecret, client_ca), not files yet"),
		refuse("web.tlsConfig.keyFile", "podreload renders the web configuration's certificates from Secrets and ConfigMaps (cert, keySecret, client_ca), not files yet"),
		refuse("web.tlsConfig.clientCAFile", "podreload renders the web configuration's certificates from Secrets and ConfigMaps (cert, keySecret, client_ca), not files yet"),
		refuseBut("web.tlsConfig.clientAuthType", "a type that requires a client certificate leaves the pods never ready (the kubelet's probes present none); accepted: NoClientCert, RequestClientCert, VerifyClientCertIfGiven",
			onlyStrings("NoClientCert", "RequestClientCert", "VerifyClientCertIfGiven")),
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
		refuseBut("automountServiceAccountToken", "the config-reloader reads the API server and reports what Prometheus runs with the pod's token; accepted: true", onlyBool(true)),
		mapped("secrets", "spec.secrets: volumes secret-<name> at /etc/prometheus/secrets/<name>, as prometheus-operator"),
		mapped("configMaps", "spec.configMaps: volumes configmap-<name> at /etc/prometheus/configmaps/<name>, as prometheus-operator"),
		mapped("affinity", "spec.affinity"),
		mapped("tolerations", "spec.tolerations"),
		mapped("topologySpreadConstraints", "spec.topologySpreadConstraints"),
		mapped("remoteWrite[].url", "spec.remoteWrite[].url"),
		mapped("remoteWrite[].name", "spec.remoteWrite[].name"),
		refuse("remoteWrite[].messageVersion", rwLater),
		mapped("remoteWrite[].sendExemplars", "spec.remoteWrite[].sendExemplars"),
		mapped("remoteWrite[].sendNativeHistograms", "spec.remoteWrite[].sendNativeHistograms"),
		mapped("remoteWrite[].remoteTimeout", "spec.remoteWrite[].remoteTimeout; unset is 30s, Prometheus' default"),
		mapped("remoteWrite[].headers", "spec.remoteWrite[].headers"),
		mapped("remoteWrite[].writeRelabelConfigs", "spec.remoteWrite[].writeRelabelConfigs"),
		mapped("remoteWrite[].oauth2", "spec.remoteWrite[].oauth2"),
		mapped("remoteWrite[].basicAuth", "spec.remoteWrite[].basicAuth"),
		refuse("remoteWrite[].bearerTokenFile", rwLater+" (deprecated)"),
		mapped("remoteWrite[].authorization", "spec.remoteWrite[].authorization"),
		refuse("remoteWrite[].sigv4", rwLater),
		refuse("remoteWrite[].azureAd", rwLater),
		refuse("remoteWrite[].bearerToken", rwLater+" (deprecated)"),
		mapped("remoteWrite[].tlsConfig", "spec.remoteWrite[].tlsConfig"),
		mapped("remoteWrite[].proxyUrl", "spec.remoteWrite[].proxyUrl"),
		mapped("remoteWrite[].noProxy", "spec.remoteWrite[].noProxy"),
		mapped("remoteWrite[].proxyFromEnvironment", "spec.remoteWrite[].proxyFromEnvironment"),
		mapped("remoteWrite[].proxyConnectHeader", "spec.remoteWrite[].proxyConnectHeader"),
		mapped("remoteWrite[].followRedirects", "spec.remoteWrite[].followRedirects"),
		mapped("remoteWrite[].queueConfig", "spec.remoteWrite[].queueConfig (maxRetries, ignored since Prometheus 2.11, is not rendered, as prometheus-operator)"),
		mapped("remoteWrite[].metadataConfig", "spec.remoteWrite[].metadataConfig"),
		mapped("remoteWrite[].enableHTTP2", "spec.remoteWrite[].enableHTTP2"),
		refuse("remoteWrite[].roundRobinDNS", rwLater),
		refuse("otlp", "the otlp section of the configuration is not rendered yet"),
		mapped("securityContext", "spec.securityContext; unset stays unset (no pod security context, as prometheus-operator), not podreload's default"),
		mapped("dnsPolicy", "spec.dnsPolicy"),
		mapped("dnsConfig", "spec.dnsConfig"),
		refuseBut("listenLocal", "Prometheus on 127.0.0.1 needs exec probes and a Service without a port; accepted: false", onlyBool(false)),
		refuseBut("podManagementPolicy", "podreload renders Parallel; accepted: Parallel", onlyStrings("Parallel")),
		refuse("updateStrategy", "a StatefulSet setting podreload does not render yet"),
		mapped("enableServiceLinks", "spec.enableServiceLinks"),
		refuse("containers", "merging containers into the pod is not rendered yet"),
		refuse("initContainers", "merging init containers into the pod is not rendered yet"),
		mapped("additionalScrapeConfigs", "spec.additionalScrapeConfigs"),
		refuse("apiserverConfig", "service discovery through another API server is not rendered yet"),
		mapped("priorityClassName", "spec.priorityClassName"),
		mapped("portName", "spec.portName: the name of Prometheus' port (default web), which the probes use"),
		refuseBut("arbitraryFSAccessThroughSMs", genJobs+"; accepted: deny false", func(v reflect.Value) bool { return !v.FieldByName("Deny").Bool() }),
		refuseBut("overrideHonorLabels", genJobs+"; accepted: false", onlyBool(false)),
		refuseBut("overrideHonorTimestamps", genJobs+"; accepted: false", onlyBool(false)),
		refuseBut("ignoreNamespaceSelectors", genJobs+"; accepted: false", onlyBool(false)),
		mapped("enforcedNamespaceLabel", "spec.enforcedNamespaceLabel"),
		refuse("enforcedSampleLimit", genJobs),
		refuse("enforcedTargetLimit", genJobs),
		refuse("enforcedLabelLimit", genJobs),
		refuse("enforcedLabelNameLengthLimit", genJobs),
		refuse("enforcedLabelValueLengthLimit", genJobs),
		refuse("enforcedKeepDroppedTargets", genJobs),
		refuse("enforcedBodySizeLimit", genJobs),
		refuse("nameValidationScheme", global),
		refuse("nameEscapingScheme", global),
		refuse("convertClassicHistogramsToNHCB", global),
		refuse("scrapeNativeHistograms", global),
		refuse("scrapeClassicHistograms", global),
		refuseBut("minReadySeconds", "a StatefulSet setting podreload does not render yet; accepted: 0", func(v reflect.Value) bool { return v.Elem().Int() == 0 }),
		mapped("hostAliases", "spec.hostAliases"),
		mapped("additionalArgs", "spec.additionalArgs; a flag podreload sets is refused (InvalidSpec)"),
		mapped("walCompression", "spec.walCompression"),
		mapped("excludedFromEnforcement", "spec.excludedFromEnforcement"),
		refuseBut("hostNetwork", pod+"; accepted: false", onlyBool(false)),
		refuse("podTargetLabels", genJobs),
		refuse("tracingConfig", "the tracing section of the configuration is not rendered yet"),
		refuse("bodySizeLimit", global),
		refuse("sampleLimit", global),
		refuse("targetLimit", global),
		refuse("labelLimit", global),
		refuse("labelNameLengthLimit", global),
		refuse("labelValueLengthLimit", global),
		refuse("keepDroppedTargets", global),
		mapped("reloadStrategy", "spec.reloader.reloadMethod: HTTP is http, ProcessSignal is signal (a shared process namespace; podreload keeps --web.enable-lifecycle)"),
		refuse("maximumStartupDurationSeconds", "a startup probe podreload does not render yet"),
		mapped("scrapeClasses", "spec.scrapeClasses (files only in tlsConfig and authorization, as prometheus-operator)"),
		refuseBut("serviceDiscoveryRole", genJobs+"; accepted: Endpoints (podreload's default)", onlyStrings("Endpoints")),
		mapped("tsdb.outOfOrderTimeWindow", "spec.tsdb.outOfOrderTimeWindow: storage.tsdb.out_of_order_time_window"),
		refuse("tsdb.staleSeriesCompactionThreshold", "a TSDB setting podreload does not render yet"),
		refuse("tsdb.chunkEncoding", "a TSDB setting podreload does not render yet"),
		refuse("scrapeFailureLogFile", global),
		refuse("serviceName", "a governing Service of the user's is not rendered yet"),
		refuse("runtime", "the runtime section of the configuration is not rendered yet"),
		mapped("terminationGracePeriodSeconds", "spec.terminationGracePeriodSeconds; unset is 600 in both"),
		mapped("hostUsers", "spec.hostUsers"),

		// PrometheusSpec's own fields.
		mapped("baseImage", "spec.image, composed as prometheus-operator's BuildImagePath (deprecated)"),
		mapped("tag", "spec.image, composed as prometheus-operator's BuildImagePath (deprecated)"),
		mapped("sha", "spec.image, composed as prometheus-operator's BuildImagePath (deprecated)"),
		mapped("retention", "spec.retention; unset, with no retentionSize, 24h (prometheus-operator's default, not podreload's 15d)"),
		mapped("retentionSize", "spec.retentionSize"),
		refuse("retentionPercentage", "not rendered yet, and unknown to the v0.93.1 operator the takeover hands back to"),
		refuseBut("shardRetentionPolicy", "retaining scaled-down shards is not rendered yet (podreload deletes them); accepted: whenScaled Delete without retain",
			func(v reflect.Value) bool {
				return stringIn(v.Elem().FieldByName("WhenScaled"), "", "Delete") && v.Elem().FieldByName("Retain").IsNil()
			}),
		refuseBut("disableCompaction", flag+"; accepted: false", onlyBool(false)),
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
		mapped("alerting.alertmanagers[].basicAuth", "spec.alerting.alertmanagers[].basicAuth"),
		refuse("alerting.alertmanagers[].bearerTokenFile", amLater),
		mapped("alerting.alertmanagers[].authorization", "spec.alerting.alertmanagers[].authorization"),
		refuse("alerting.alertmanagers[].sigv4", amLater),
		mapped("alerting.alertmanagers[].proxyUrl", "spec.alerting.alertmanagers[].proxyUrl"),
		mapped("alerting.alertmanagers[].noProxy", "spec.alerting.alertmanagers[].noProxy"),
		mapped("alerting.alertmanagers[].proxyFromEnvironment", "spec.alerting.alertmanagers[].proxyFromEnvironment"),
		mapped("alerting.alertmanagers[].proxyConnectHeader", "spec.alerting.alertmanagers[].proxyConnectHeader"),
		mapped("alerting.alertmanagers[].apiVersion", "spec.alerting.alertmanagers[].apiVersion (v2 only: v1 is refused, InvalidSpec)"),
		mapped("alerting.alertmanagers[].timeout", "spec.alerting.alertmanagers[].timeout"),
		mapped("alerting.alertmanagers[].enableHttp2", "spec.alerting.alertmanagers[].enableHttp2"),
		mapped("alerting.alertmanagers[].relabelings", "spec.alerting.alertmanagers[].relabelings: after the controller's"),
		mapped("alerting.alertmanagers[].alertRelabelings", "spec.alerting.alertmanagers[].alertRelabelings"),
		mapped("additionalAlertRelabelConfigs", "spec.additionalAlertRelabelConfigs: after the replica label's labeldrop"),
		mapped("additionalAlertManagerConfigs", "spec.additionalAlertManagerConfigs: after the Alertmanagers of alerting"),
		refuse("remoteRead", "remote read is not rendered yet"),
		refuse("thanos", "the Thanos sidecar is out of scope"),
		refuse("queryLogFile", global),
		refuseBut("allowOverlappingBlocks", flag+" (deprecated; a flag for Prometheus 2.11 to 2.39 only); accepted: false", onlyBool(false)),
		mapped("exemplars", "spec.exemplars: storage.exemplars.max_exemplars"),
		mapped("evaluationInterval", "spec.evaluationInterval; unset is 30s"),
		mapped("ruleQueryOffset", "spec.ruleQueryOffset: global.rule_query_offset"),
		mapped("enableAdminAPI", "spec.enableAdminAPI"),
	}
}

// onlyStrings accepts a string, or a pointer to one, equal to one of ok.
func onlyStrings(ok ...string) func(reflect.Value) bool {
	return func(v reflect.Value) bool { return stringIn(v, ok...) }
}

// stringIn reports whether v, a string or a pointer to one (nil reads
// as ""), is one of ok.
func stringIn(v reflect.Value, ok ...string) bool {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return slices.Contains(ok, "")
		}
		v = v.Elem()
	}
	return slices.Contains(ok, v.String())
}

// onlyBool accepts a bool, or a pointer to one, equal to ok.
func onlyBool(ok bool) func(reflect.Value) bool {
	return func(v reflect.Value) bool { return reflect.Indirect(v).Bool() == ok }
}

// refusedFields are the JSON paths of the refused fields spec sets to a
// value they do not accept, sorted, each once. spec is a
// monitoringv1.PrometheusSpec.
func refusedFields(spec any) []string {
	var out []string
	root := reflect.ValueOf(spec)
	for _, f := range operatorFields() {
		if f.class != fieldRefused {
			continue
		}
		for _, v := range fieldValues(root, f.path) {
			if isSet(v) && (f.accepts == nil || !f.accepts(v)) {
				out = append(out, f.path)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// isSet reports whether v is set: not its zero value, nor an empty list
// or map.
func isSet(v reflect.Value) bool {
	if v.Kind() == reflect.Slice || v.Kind() == reflect.Map {
		return v.Len() > 0
	}
	return !v.IsZero()
}

// fieldValues are the values at path in v, a struct: one for each item of
// the lists marked "[]"; none where a pointer on the way is nil.
func fieldValues(v reflect.Value, path string) []reflect.Value {
	name, rest, more := strings.Cut(path, ".")
	list := strings.HasSuffix(name, "[]")
	f, ok := jsonField(v, strings.TrimSuffix(name, "[]"))
	if !ok {
		return nil
	}
	if !more {
		return []reflect.Value{f}
	}
	var items []reflect.Value
	if list {
		for i := range f.Len() {
			items = append(items, f.Index(i))
		}
	} else {
		items = []reflect.Value{f}
	}
	var out []reflect.Value
	for _, it := range items {
		if it.Kind() == reflect.Pointer {
			if it.IsNil() {
				continue
			}
			it = it.Elem()
		}
		out = append(out, fieldValues(it, rest)...)
	}
	return out
}

// jsonField is the field of the struct v whose JSON name is name, looking
// into inlined (embedded, unnamed) fields.
func jsonField(v reflect.Value, name string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		switch {
		case tag == "-" || !sf.IsExported():
		case tag == "" && sf.Anonymous:
			if f, ok := jsonField(v.Field(i), name); ok {
				return f, true
			}
		case tag == name:
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}
