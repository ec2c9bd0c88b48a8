package alertmanager

import (
	"cmp"
	"fmt"
	"slices"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

	"github.com/podreload/podreload/controller/sidecar"
	"github.com/podreload/podreload/controller/takeover"
)

// beforeMatchers is why an Alertmanager before 0.22 whose configuration is
// generated is refused: package amconfig writes the routes' and inhibit
// rules' matchers, which 0.22 brought, where prometheus-operator writes
// match and match_re for older ones.
const beforeMatchers = "a configuration generated from AlertmanagerConfigs (alertmanagerConfigSelector, alertmanagerConfiguration) for Alertmanager before 0.22 is not rendered (its routes would need match and match_re rather than matchers)"

// zero says what becomes of a duration of zero (nonZero).
const zero = "zero is dropped, not passed, and Reconciled's reason IgnoredFields names it, as prometheus-operator v0.94 does"

// operatorFields is the takeover's field coverage of prometheus-operator's
// Alertmanager spec (the main module's types, v0.95.2): every field has a
// row (TestFieldsCoverTheSpec walks the type), and the Alertmanager part
// of docs/prometheus-operator.md is its rendering (TestFieldMatrix).
//
//nolint:funlen // A table, one row per field of the upstream spec: its length is the spec's, not logic.
func operatorFields() []takeover.Field {
	const (
		asIs     = "as prometheus-operator sets it in the pods"
		flag     = "Alertmanager's flag, as prometheus-operator renders it"
		selector = "the AlertmanagerConfigs selected: nil selects none, {} every one"
	)
	limit, mapped := takeover.Limit, takeover.Mapped
	return []takeover.Field{
		mapped("podMetadata", "the pods' labels and annotations; the selector labels win"),
		mapped("image", "the image as is; unset, the image prometheus-operator composes from baseImage, sha, tag and version"),
		mapped("imagePullPolicy", "on Alertmanager and the config-reloaders"),
		mapped("version", "the image's tag with no image (unset, prometheus-operator v0.94.1's default, v0.34.0, or the version the StatefulSet runs when newer: never older than what runs), the version label of the pods, and the flags rendered, each gated on the version as prometheus-operator gates it (flags.go); the generated configuration's keys, each dropped or refused on the version as prometheus-operator v0.93.1 drops or refuses it, and the route labels of prometheus-operator v0.95's AlertmanagerConfigs (Alertmanager 0.34's) refused before 0.34 (package amconfig: an AlertmanagerConfig refused is left out, with the reason in its status binding; a refused key of alertmanagerConfiguration or its global section is InvalidConfiguration, the last good configuration kept; the configSecret's base, when AlertmanagerConfigs are selected, sanitized as prometheus-operator sanitizes the whole document: its keys dropped, an integration the version does not know InvalidConfiguration); a version prometheus-operator refuses (before v0.15.0, from v1) is refused, and so is a version that is not one"),
		mapped("tag", "deprecated: the image's tag, as prometheus-operator composes it"),
		mapped("sha", "deprecated: the image's digest, as prometheus-operator composes it"),
		mapped("baseImage", "deprecated: the image's repository, as prometheus-operator composes it"),
		mapped("imagePullSecrets", asIs),
		mapped("secrets", "mounted at /etc/alertmanager/secrets/<name> in Alertmanager"),
		mapped("configMaps", "mounted at /etc/alertmanager/configmaps/<name> in Alertmanager"),
		mapped("configSecret", "the base configuration's Secret (key alertmanager.yaml; default alertmanager-<name>); its other keys are copied into the generated Secret, as prometheus-operator copies them"),
		mapped("logLevel", flag+", and the reloaders' --log-level when not info, as prometheus-operator does"),
		mapped("logFormat", flag+", and the reloaders' --log-format when not logfmt, as prometheus-operator does"),
		mapped("replicas", "unset is 1, negative 0, as prometheus-operator; one --cluster.peer per replica"),
		mapped("retention", "--data.retention; unset is 120h; "+zero+" (120h then)"),
		mapped("storage.disableMountSubPath", "deprecated: the data volume mounted without the sub-path alertmanager-db"),
		mapped("storage.emptyDir", "the data volume"),
		mapped("storage.ephemeral", "the data volume, an ephemeral one"),
		mapped("storage.volumeClaimTemplate", "the claim template alertmanager-<name>-db (or its name), ReadWriteOnce by default; an existing StatefulSet's templates are kept"),
		mapped("volumes", "after the data volume"),
		mapped("volumeMounts", "Alertmanager's, after spec.secrets and spec.configMaps"),
		mapped("persistentVolumeClaimRetentionPolicy", asIs),
		mapped("externalUrl", flag),
		mapped("routePrefix", flag+", and the paths of the probes and of the reload"),
		mapped("paused", "nothing is written"),
		mapped("nodeSelector", asIs),
		mapped("schedulerName", asIs),
		mapped("resources", "Alertmanager's; a memory request of 200Mi unless one is set"),
		mapped("affinity", asIs),
		mapped("tolerations", asIs),
		mapped("topologySpreadConstraints", asIs),
		mapped("securityContext", "the pod's, as is; unset, the reloaders run as 65534, the image's user"),
		mapped("dnsPolicy", asIs+"; ClusterFirstWithHostNet by default on the host's network"),
		mapped("dnsConfig", asIs),
		mapped("enableServiceLinks", asIs),
		mapped("serviceName", "the StatefulSet's governing Service, the user's: alertmanager-operated is not written for it, and the peers are named in it (prometheus-operator also checks that it selects the pods; podreload does not)"),
		mapped("serviceAccountName", "the pods', and the subject of the reloaders' RoleBinding"),
		mapped("listenLocal", "--web.listen-address=127.0.0.1:9093, no web port nor probes, as prometheus-operator; the reloaders reload Alertmanager on 127.0.0.1 in any case"),
		mapped("podManagementPolicy", "default Parallel; an existing StatefulSet's is kept"),
		mapped("updateStrategy", "the StatefulSet's; unset, RollingUpdate"),
		limit("containers", "merged into the rendered containers as prometheus-operator merges them (takeover.MergeContainers): one named alertmanager or config-reloader is a strategic merge patch of it, the others appended after them; accepted: every one but a config-reloader patch setting image, command or args (podreload's config-reloader runs neither prometheus-operator's image nor its flags)",
			takeover.OnlyPatches(sidecar.ContainerName)),
		limit("initContainers", "merged into the rendered init container as prometheus-operator merges them: one named init-config-reloader is a strategic merge patch of it, the others appended after it; accepted: every one but an init-config-reloader patch setting image, command or args",
			takeover.OnlyPatches(sidecar.InitContainerName)),
		mapped("priorityClassName", asIs),
		mapped("additionalPeers", "one --cluster.peer each, after the replicas'"),
		mapped("clusterAdvertiseAddress", flag),
		mapped("clusterGossipInterval", flag+"; "+zero),
		mapped("clusterLabel", "--cluster.label; unset, <namespace>/<name>"),
		mapped("clusterPushpullInterval", flag+"; "+zero),
		mapped("clusterPeerTimeout", flag+"; "+zero),
		mapped("clusterPeerName", "--cluster.peer-name from Alertmanager 0.30, as prometheus-operator v0.94 renders it; unset or empty, $(POD_NAME), the pod's name"),
		mapped("portName", "the name of the web port, of the Service's port and of the probes' (default web)"),
		mapped("forceEnableClusterMode", "clustering with one replica"),
		mapped("alertmanagerConfigSelector", selector+" (package amconfig)"),
		mapped("alertmanagerConfigNamespaceSelector", "the namespaces of the AlertmanagerConfigs: nil the Alertmanager's, {} every one"),
		mapped("alertmanagerConfigFileSystemMode", "prometheus-operator v0.95's (package amconfig): an AlertmanagerConfig that references a file of the Alertmanager container (Telegram's botTokenFile, Pushover's userKeyFile and tokenFile) is left out where the mode forbids it, with the reason in its status binding, a Warning Event and the rejected count: AllowAll forbids none; DenyAll every one, and the AlertmanagerConfig alertmanagerConfiguration names too (InvalidConfiguration, the last good configuration kept); FromAlertmanagerConfigMatcherStrategy, the default when unset, follows alertmanagerConfigMatcherStrategy: None forbids none, OnNamespaceExceptForAlertmanagerNamespace those outside the Alertmanager's namespace, OnNamespace (the default) every one but alertmanagerConfiguration's. The secure default is v0.95's: unset, a tenant's file reference that prometheus-operator before v0.95 rendered is left out"),
		mapped("alertmanagerConfigMatcherStrategy", "the namespace matcher of each AlertmanagerConfig's route (package amconfig)"),
		mapped("minReadySeconds", "the StatefulSet's, and --dispatch.start-delay unless additionalArgs sets it"),
		mapped("hostAliases", asIs),
		mapped("hostNetwork", asIs),
		mapped("web.tlsConfig", "the web configuration file's TLS settings (its certificate, key and client CA checked), the files mounted under /etc/alertmanager/web_tls (certFile and clientCAFile, files of the pod's, written as they are, as prometheus-operator; keyFile refused, InvalidSpec: prometheus-operator writes no StatefulSet for it); the probes and the reloaders over HTTPS, the reloaders verifying the certificate (not a certFile, which the controller cannot read: as prometheus-operator's reloaders)"),
		mapped("web.httpConfig", "the web configuration file's HTTP settings"),
		mapped("web.getConcurrency", flag),
		mapped("web.timeout", flag),
		mapped("limits", "--silences.max-silences and --silences.max-per-silence-bytes"),
		mapped("clusterTLS", "mutual TLS between the peers as prometheus-operator renders it: the file (server and client TLS settings) in the Secret alertmanager-<name>-cluster-tls-config, mounted with a sub-path at /etc/alertmanager/cluster_tls_config and named by --cluster.tls-config from Alertmanager 0.24, each certificate, key and CA from a Secret or ConfigMap mounted whole under it (server_tls/, client_tls/); a change of the file rolls the pods (Alertmanager reads it once); what prometheus-operator refuses in it (a server key missing, a client certificate missing, a file and a reference both), and a Secret, ConfigMap or key it names that is missing (which prometheus-operator does not check), is Reconciled False, InvalidClusterTLS, nothing written"),
		mapped("alertmanagerConfiguration", "the base configuration from the AlertmanagerConfig it names in the Alertmanager's namespace (package amconfig; the configSecret is not read), with its global settings; one that does not exist keeps the last good configuration (Reconciled False, InvalidConfiguration); its templates projected in the volume notification-templates at /etc/alertmanager/templates, watched by the reloaders; global.telegram's botToken and botTokenFile (prometheus-operator v0.95's) are Alertmanager 0.31's telegram_bot_token and telegram_bot_token_file, which the Telegram receivers without a token inherit: InvalidConfiguration before 0.31 (what v0.95 renders cannot be checked: its generator is not served)"),
		mapped("automountServiceAccountToken", "unset or true, the pods mount the token and the config-reloaders read the generated Secret through the API server and report what Alertmanager runs (ConfigApplied); false, the pods mount no token and the config-reloaders read the Secret's volume, as prometheus-operator's do (a change 60 to 90 s later, when the kubelet syncs it), and report nothing: ConfigApplied Unknown, NotReported"),
		mapped("enableFeatures", "--enable-feature"),
		mapped("additionalArgs", "after the rendered flags; one the controller renders is refused, as prometheus-operator fails on it"),
		mapped("terminationGracePeriodSeconds", "default 120"),
		mapped("hostUsers", asIs),
	}
}

// fromAlertmanager returns what keeps am from being taken over: the paths
// of the refused fields it sets (takeover.RefusedFields), a version that
// is not one or that prometheus-operator refuses, an additional flag the
// controller renders; sorted. None means it can be.
func fromAlertmanager(am *monitoringv1.Alertmanager) []string {
	unsupported := takeover.RefusedFields(am.Spec, operatorFields())
	_, version, ok := image(am, nil)
	switch {
	case !ok:
		unsupported = append(unsupported, "version: not a version")
	case !supported(version):
		// prometheus-operator's words, and the version as the spec says it.
		unsupported = append(unsupported, fmt.Sprintf("version: unsupported Alertmanager version %q (prometheus-operator renders v0.15.0 and later v0 releases)", cmp.Or(am.Spec.Version, defaultVersion)))
	}
	if ok && supported(version) && !since(version, sinceMatchers) && (am.Spec.AlertmanagerConfigSelector != nil || am.Spec.AlertmanagerConfiguration != nil) {
		unsupported = append(unsupported, "version: "+beforeMatchers)
	}
	rendered := args(&monitoringv1.Alertmanager{ObjectMeta: am.ObjectMeta, Spec: *am.Spec.DeepCopy()}, version)
	for _, x := range am.Spec.AdditionalArgs {
		name := "--" + x.Name
		if slices.ContainsFunc(rendered[:len(rendered)-len(am.Spec.AdditionalArgs)], func(a string) bool {
			return a == name || len(a) > len(name) && a[:len(name)+1] == name+"="
		}) {
			unsupported = append(unsupported, "additionalArgs: "+x.Name+" is rendered by the controller")
		}
	}
	slices.Sort(unsupported)
	return slices.Compact(unsupported)
}
