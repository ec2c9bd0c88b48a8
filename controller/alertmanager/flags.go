package alertmanager

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/alecthomas/units"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/controller/webconfig"
)

// The Alertmanager versions prometheus-operator renders its flags for,
// each gated on the release that brought it (pkg/alertmanager/
// statefulset.go makeStatefulSetSpec at v0.94.1), as minor versions of 0.
const (
	// sinceLogFormat: --log.format.
	sinceLogFormat = 16
	// sinceWebFlags: --web.get-concurrency and --web.timeout.
	sinceWebFlags = 17
	// sinceWebConfig: --web.config.file, the web configuration mounted,
	// and the probes and the reload over HTTPS with spec.web.tlsConfig.
	sinceWebConfig = 22
	// sinceMatchers: the matchers of routes and inhibit rules, which the
	// generated configuration holds (fields.go beforeMatchers).
	sinceMatchers = 22
	// sinceClusterTLS: --cluster.tls-config.
	sinceClusterTLS = 24
	// sinceClusterLabel: --cluster.label.
	sinceClusterLabel = 26
	// sinceFeatures: --enable-feature.
	sinceFeatures = 27
	// sinceLimits: --silences.max-silences and
	// --silences.max-per-silence-bytes.
	sinceLimits = 28
	// sincePeerName: --cluster.peer-name, --dispatch.start-delay and the
	// POD_NAME variable the peer name is made of.
	sincePeerName = 30
)

// since reports whether version, as takeover.Image returns it, is
// 0.minor.0 or later (a pre-release of it is not, as semver orders it).
func since(version string, minor uint64) bool { return takeover.AtLeast(version, 0, minor) }

// supported reports whether prometheus-operator renders an Alertmanager
// of version (provisionAlertmanagerConfiguration): from v0.15.0, before
// v1.
func supported(version string) bool {
	major, _, _ := strings.Cut(version, ".")
	return major == "0" && since(version, 15)
}

// args are Alertmanager's flags for version, in prometheus-operator's
// order (makeStatefulSetSpec), each gated on the version as it gates
// them, then spec.additionalArgs.
func args(am *monitoringv1.Alertmanager, version string) []string {
	a := []string{
		"--config.file=" + configOutFile,
		"--storage.path=" + storageDir,
		"--data.retention=" + cmp.Or(nonZero(am.Spec.Retention), defaultRetention),
	}
	n := replicas(am)
	if n == 1 && !am.Spec.ForceEnableClusterMode {
		a = append(a, "--cluster.listen-address=")
	} else {
		a = append(a, "--cluster.listen-address=[$(POD_IP)]:9094")
	}
	if am.Spec.ListenLocal {
		a = append(a, "--web.listen-address=127.0.0.1:9093")
	} else {
		a = append(a, "--web.listen-address=:9093")
	}
	if am.Spec.ExternalURL != "" {
		a = append(a, "--web.external-url="+am.Spec.ExternalURL)
	}
	if since(version, sinceFeatures) && len(am.Spec.EnableFeatures) > 0 {
		features := make([]string, len(am.Spec.EnableFeatures))
		for i, f := range am.Spec.EnableFeatures {
			features[i] = string(f)
		}
		a = append(a, "--enable-feature="+strings.Join(features, ","))
	}
	a = append(a, "--web.route-prefix="+routePrefix(am))
	if web := am.Spec.Web; since(version, sinceWebFlags) && web != nil {
		if web.GetConcurrency != nil {
			a = append(a, fmt.Sprintf("--web.get-concurrency=%d", *web.GetConcurrency))
		}
		if web.Timeout != nil {
			a = append(a, fmt.Sprintf("--web.timeout=%d", *web.Timeout))
		}
	}
	if l := am.Spec.Limits; since(version, sinceLimits) && l != nil {
		if l.MaxSilences != nil {
			a = append(a, fmt.Sprintf("--silences.max-silences=%d", *l.MaxSilences))
		}
		if l.MaxPerSilenceBytes != nil && *l.MaxPerSilenceBytes != "" {
			b, _ := units.ParseBase2Bytes(string(*l.MaxPerSilenceBytes))
			a = append(a, fmt.Sprintf("--silences.max-per-silence-bytes=%d", int64(b)))
		}
	}
	if s := am.Spec.MinReadySeconds; since(version, sincePeerName) && s != nil && !additional(am, "dispatch.start-delay") {
		a = append(a, fmt.Sprintf("--dispatch.start-delay=%ds", *s))
	}
	if am.Spec.LogLevel != "" && am.Spec.LogLevel != "info" {
		a = append(a, "--log.level="+am.Spec.LogLevel)
	}
	if since(version, sinceLogFormat) && am.Spec.LogFormat != "" && am.Spec.LogFormat != "logfmt" {
		a = append(a, "--log.format="+am.Spec.LogFormat)
	}
	a = append(a, clusterArgs(am, version)...)
	a = append(a, "--cluster.reconnect-timeout=5m")
	if since(version, sinceWebConfig) {
		a = append(a, "--web.config.file="+webConfigDir+"/"+webconfig.SecretKey)
	}
	if since(version, sinceClusterTLS) && am.Spec.ClusterTLS != nil {
		a = append(a, "--cluster.tls-config="+clusterTLSFile)
	}
	for _, x := range am.Spec.AdditionalArgs {
		if x.Value == "" {
			a = append(a, "--"+x.Name)
		} else {
			a = append(a, "--"+x.Name+"="+x.Value)
		}
	}
	return a
}

// clusterArgs are the flags of the cluster's peers (args).
func clusterArgs(am *monitoringv1.Alertmanager, version string) []string {
	var a []string
	for _, f := range []struct{ name, value string }{
		{"cluster.advertise-address", am.Spec.ClusterAdvertiseAddress},
		{"cluster.gossip-interval", nonZero(am.Spec.ClusterGossipInterval)},
		{"cluster.pushpull-interval", nonZero(am.Spec.ClusterPushpullInterval)},
		{"cluster.peer-timeout", nonZero(am.Spec.ClusterPeerTimeout)},
	} {
		if f.value != "" {
			a = append(a, "--"+f.name+"="+f.value)
		}
	}
	if since(version, sincePeerName) {
		// The pod's name unless spec.clusterPeerName names the peer.
		a = append(a, "--cluster.peer-name="+cmp.Or(ptr.Deref(am.Spec.ClusterPeerName, ""), "$(POD_NAME)"))
	}
	if since(version, sinceClusterLabel) {
		a = append(a, "--cluster.label="+ptr.Deref(am.Spec.ClusterLabel, am.Namespace+"/"+am.Name))
	}
	// The peers by the DNS search path of the pods' namespace.
	for i := range replicas(am) {
		a = append(a, fmt.Sprintf("--cluster.peer=%s-%d.%s:9094", stsName(am.Name), i, serviceName(am)))
	}
	for _, p := range am.Spec.AdditionalPeers {
		a = append(a, "--cluster.peer="+p)
	}
	return a
}

// additional reports whether spec.additionalArgs sets the flag name.
func additional(am *monitoringv1.Alertmanager, name string) bool {
	for _, x := range am.Spec.AdditionalArgs {
		if strings.TrimPrefix(x.Name, "--") == name {
			return true
		}
	}
	return false
}

// nonZero is the duration d, "" when it is zero (or negative): prometheus-
// operator v0.94 drops such a duration rather than pass it as a flag
// (discardZeroDurations), and says so (ignoredFields).
func nonZero(d monitoringv1.GoDuration) string {
	if v, err := time.ParseDuration(string(d)); err == nil && v <= 0 {
		return ""
	}
	return string(d)
}

// ignoredFields are the fields of am nonZero drops, in prometheus-
// operator's words and order; none when it drops none.
func ignoredFields(am *monitoringv1.Alertmanager) []string {
	var out []string
	for _, f := range []struct {
		name  string
		value monitoringv1.GoDuration
	}{
		{"retention", am.Spec.Retention},
		{"clusterGossipInterval", am.Spec.ClusterGossipInterval},
		{"clusterPushpullInterval", am.Spec.ClusterPushpullInterval},
		{"clusterPeerTimeout", am.Spec.ClusterPeerTimeout},
	} {
		if f.value != "" && nonZero(f.value) == "" {
			out = append(out, f.name+" (zero value not supported)")
		}
	}
	return out
}

// reasonIgnoredFields is the Reconciled condition's reason when the
// objects match the spec but for fields dropped (ignoredFields), as
// prometheus-operator says it (pkg/operator IgnoredFieldsReason).
const reasonIgnoredFields = "IgnoredFields"

// reconciled is the Reconciled condition of am whose objects were written:
// True, with prometheus-operator's IgnoredFields reason and message when
// ignoredFields drops some.
func reconciled(am *monitoringv1.Alertmanager) metav1.Condition {
	c := metav1.Condition{Type: conditionReconciled, Status: metav1.ConditionTrue, Reason: "Reconciled", Message: "the objects match the spec"}
	if ignored := ignoredFields(am); len(ignored) > 0 {
		c.Reason, c.Message = reasonIgnoredFields, "The following fields were ignored: "+strings.Join(ignored, ", ")
	}
	return c
}
