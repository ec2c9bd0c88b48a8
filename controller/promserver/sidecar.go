package promserver

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/configsecret"
	"github.com/podreload/podreload/controller/sidecar"
	"github.com/podreload/podreload/controller/webconfig"
)

// reloadArgs are the flags that tell the config-reloader sidecar
// (sidecar.Containers) how it reloads Prometheus, over HTTPS with the
// verification of web when Prometheus serves HTTPS.
func reloadArgs(spec v1alpha1.PrometheusServerSpec, web webconfig.Pod) []string {
	var args []string
	local := web.Scheme + "://" + web.Host + ":" + strconv.Itoa(WebPort)
	switch {
	// The flag's default is http://127.0.0.1:9090/...
	case spec.Reloader.ReloadMethod == "signal" && (spec.RoutePrefix != "" || WebTLS(spec)):
		args = append(args, "--reload-method=signal", "--runtimeinfo-url="+local+WebPath(spec, "/api/v1/status/runtimeinfo"))
	case spec.Reloader.ReloadMethod == "signal":
		args = append(args, "--reload-method=signal")
	default:
		args = append(args, "--reload-url="+local+WebPath(spec, "/-/reload"))
	}
	return append(args, web.ReloaderArgs...)
}

// podSource is what the source of server's reloaders (sidecar.Source)
// puts into its pods: the API server, with its config Secret and the rule
// ConfigMaps labelled ruleFilesLabels; or the volumes of its config
// Secret, of the padded set of rule ConfigMaps for shards of them
// (RuleVolumes) and of the part Secrets of a split configuration, parts
// of them. The volume source reserves configsecret.PartSlots of the
// parts, so that the pods change only when the count of parts crosses a
// multiple of RuleVolumeStep (the first split included). The reloaders'
// state outlives the pod: on a claim, in a DaemonSet's pods (names of
// their own, unknown before they are) and without a token, on the data
// volume, storage (stateInSecrets); else in Secrets.
func podSource(server Target, shards, parts int, configOut string, storage corev1.VolumeMount) sidecar.Pod {
	src := sidecar.Source{
		API: APISource(server), Namespace: server.Namespace, ConfigSecret: ConfigSecretOf(server), ConfigKey: ConfigSecretKey,
		ConfigDir: ConfigMountPath, ConfigOutDir: ConfigOutMountPath, ConfigOut: configOut, RulesDir: RulesMountPath,
		RuleLabels: ruleFilesLabels(server), RuleConfigMapsDir: RuleConfigMapsMountPath, PartsDir: configPartsMountPath,
	}
	if !stateInSecrets(server) {
		src.StateDir, src.StateMount = ReloaderStateDir, storage
	}
	if !src.API {
		for i := range RuleVolumes(shards) {
			src.RuleConfigMaps = append(src.RuleConfigMaps, RuleShardName(server, i))
		}
		src.Parts = configsecret.PartNames(ConfigSecretOf(server), configsecret.PartSlots(parts, RuleVolumeStep))
	}
	return src.Pod()
}
