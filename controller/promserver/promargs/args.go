// Package promargs renders the command line of the Prometheus container
// of prometheus-operator's layouts as prometheus-operator writes it
// (server/statefulset.go buildServerArgs, agent/statefulset.go
// buildAgentArgs, promcfg.go BuildCommonPrometheusArgs at v0.93.1), from
// the model (a PrometheusServerSpec), for each Prometheus version, and the
// flags podreload's own layout shares with it (Query, Receiver,
// Compaction). It is pure: package promserver puts the flags into the
// pods.
package promargs

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	yaml "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/promcfg"
	"github.com/podreload/podreload/controller/promserver/thanos"
	"github.com/podreload/podreload/controller/webconfig"
)

// Where the Prometheus container of either layout finds its files, and
// prometheus-operator's defaults.
const (
	// ConfigOutDir is the emptyDir where the reloaders write the expanded
	// configuration Prometheus reads.
	ConfigOutDir = "/etc/prometheus/config_out"
	// ConfigEnvsubstFile is the name of the expanded configuration.
	ConfigEnvsubstFile = "prometheus.env.yaml"
	// StorageDir is the TSDB's (or the agent's WAL's) directory.
	StorageDir = "/prometheus"
	// WebConfigDir is where the web config Secret is mounted.
	WebConfigDir = "/etc/prometheus/web_config"
	// WebPort is Prometheus' port.
	WebPort = 9090
	// DefaultVersion is the Prometheus version of a Prometheus that sets
	// none (pkg/operator/defaults.go DefaultPrometheusVersion).
	DefaultVersion = "v3.13.1"
	// DefaultRetention applies when neither retention nor retentionSize
	// is set (pkg/prometheus/common.go DefaultRetention).
	DefaultRetention = "24h"
)

// Operator are the flags prometheus-operator sets on
// Prometheus, in its order (server/statefulset.go buildServerArgs,
// promcfg.go BuildCommonPrometheusArgs), for the fields a PrometheusServer
// has. From Prometheus 3.11 the retention is in the configuration
// (retentionSettings), not in flags.
func Operator(spec v1alpha1.PrometheusServerSpec, isAgent bool) []monitoringv1.Argument {
	if isAgent {
		return agent(spec)
	}
	v := Version(spec)
	args := common(spec, v)
	if !RetentionInConfig(spec) {
		args = append(args, retention(spec, v)...)
	}
	args = append(args, monitoringv1.Argument{Name: "storage.tsdb.path", Value: StorageDir})
	args = append(args, Query(spec, v)...)
	if spec.AllowOverlappingBlocks && v.AtLeast(2, 11) && !v.AtLeast(2, 39) {
		args = append(args, monitoringv1.Argument{Name: "storage.tsdb.allow-overlapping-blocks"})
	}
	if spec.WALCompression != nil && v.AtLeast(2, 11) {
		name := "storage.tsdb.wal-compression"
		if !*spec.WALCompression {
			name = "no-" + name
		}
		args = append(args, monitoringv1.Argument{Name: name})
	}
	if v.AtLeast(2, 24) {
		args = append(args, monitoringv1.Argument{Name: "web.config.file", Value: WebConfigDir + "/" + webconfig.SecretKey})
	}
	return append(args, Compaction(spec, v)...)
}

// retention are the retention flags of Prometheus v before 3.11: before
// 2.7, --storage.tsdb.retention, spec.retention or the default whatever
// retentionSize says, and no size; from 2.7, the time (Retention) and the
// size.
func retention(spec v1alpha1.PrometheusServerSpec, v promcfg.Version) []monitoringv1.Argument {
	if !v.AtLeast(2, 7) {
		return []monitoringv1.Argument{{Name: "storage.tsdb.retention", Value: string(cmp.Or(spec.Retention, DefaultRetention))}}
	}
	var args []monitoringv1.Argument
	if t := Retention(spec); t != "" {
		args = append(args, monitoringv1.Argument{Name: "storage.tsdb.retention.time", Value: t})
	}
	if spec.RetentionSize != "" {
		args = append(args, monitoringv1.Argument{Name: "storage.tsdb.retention.size", Value: string(spec.RetentionSize)})
	}
	return args
}

// common are the flags prometheus-operator sets on a server
// and an agent alike, in its order (promcfg.go BuildCommonPrometheusArgs),
// for Prometheus version v.
func common(spec v1alpha1.PrometheusServerSpec, v promcfg.Version) []monitoringv1.Argument {
	args := []monitoringv1.Argument{{Name: "config.file", Value: ConfigOutDir + "/" + ConfigEnvsubstFile}}
	if v[0] == 2 {
		args = append(args,
			monitoringv1.Argument{Name: "web.console.templates", Value: "/etc/prometheus/consoles"},
			monitoringv1.Argument{Name: "web.console.libraries", Value: "/etc/prometheus/console_libraries"})
	}
	if spec.Reloader.ReloadMethod != "signal" {
		args = append(args, monitoringv1.Argument{Name: "web.enable-lifecycle"})
	}
	if spec.Web != nil && spec.Web.PageTitle != nil && v.AtLeast(2, 6) {
		args = append(args, monitoringv1.Argument{Name: "web.page-title", Value: *spec.Web.PageTitle})
	}
	if spec.Web != nil && spec.Web.MaxConnections != nil {
		args = append(args, monitoringv1.Argument{Name: "web.max-connections", Value: strconv.Itoa(int(*spec.Web.MaxConnections))})
	}
	args = append(args, Receiver(spec, v)...)
	// gated reports whether a flag of Prometheus major.minor on is
	// passed. A remote write of the 2.0 message to a Prometheus before
	// 2.54 turns every such flag after it off, as it does in
	// prometheus-operator (BuildCommonPrometheusArgs goes on with the
	// generator it gated on 2.54 for it).
	v2Message := slices.ContainsFunc(spec.RemoteWrite, func(rw v1alpha1.RemoteWriteSpec) bool {
		return ptr.Deref(rw.MessageVersion, monitoringv1.RemoteWriteMessageVersion1_0) == monitoringv1.RemoteWriteMessageVersion2_0
	})
	off := v2Message && !v.AtLeast(2, 54)
	gated := func(major, minor int) bool { return !off && v.AtLeast(major, minor) }
	if v2Message && gated(2, 54) && !v.AtLeast(3, 4) {
		// Turned on by prometheus-operator for the 2.0 message (off by
		// default from Prometheus 3.4).
		args = append(args, monitoringv1.Argument{Name: "enable-feature", Value: "metadata-wal-records"})
	}
	args = append(args, otlpReceiver(spec, v, off)...)
	if len(spec.EnableFeatures) > 0 && gated(2, 25) {
		features := make([]string, len(spec.EnableFeatures))
		for i, f := range spec.EnableFeatures {
			features[i] = string(f)
		}
		args = append(args, monitoringv1.Argument{Name: "enable-feature", Value: strings.Join(features, ",")})
	}
	if xor2Floats(spec) && gated(3, 13) {
		args = append(args, monitoringv1.Argument{Name: "enable-feature", Value: "xor2-encoding"})
	}
	if spec.ExternalURL != "" {
		args = append(args, monitoringv1.Argument{Name: "web.external-url", Value: spec.ExternalURL})
	}
	args = append(args, monitoringv1.Argument{Name: "web.route-prefix", Value: cmp.Or(spec.RoutePrefix, "/")})
	if spec.LogLevel != "" && spec.LogLevel != "info" {
		args = append(args, monitoringv1.Argument{Name: "log.level", Value: spec.LogLevel})
	}
	if spec.LogFormat != "" && spec.LogFormat != "logfmt" && gated(2, 6) {
		args = append(args, monitoringv1.Argument{Name: "log.format", Value: spec.LogFormat})
	}
	if spec.ListenLocal {
		args = append(args, monitoringv1.Argument{Name: "web.listen-address", Value: "127.0.0.1:" + strconv.Itoa(WebPort)})
	}
	return args
}

// xor2Floats reports whether spec's TSDB encodes floats as xor2 without
// enabling the feature itself, which prometheus-operator then enables.
func xor2Floats(spec v1alpha1.PrometheusServerSpec) bool {
	if spec.TSDB == nil || spec.TSDB.ChunkEncoding == nil || spec.TSDB.ChunkEncoding.Floats == nil {
		return false
	}
	return *spec.TSDB.ChunkEncoding.Floats == monitoringv1.ChunkEncodingFloatsXor2 &&
		!slices.Contains(spec.EnableFeatures, "xor2-encoding")
}

// agent are the flags prometheus-operator sets on an agent, in
// its order (agent/statefulset.go buildAgentArgs): the common ones, agent
// mode (a feature before Prometheus 3), the WAL's path and compression,
// and the web configuration file.
func agent(spec v1alpha1.PrometheusServerSpec) []monitoringv1.Argument {
	v := Version(spec)
	args := common(spec, v)
	switch v[0] {
	case 2:
		args = append(args, monitoringv1.Argument{Name: "enable-feature", Value: "agent"})
	case 3:
		args = append(args, monitoringv1.Argument{Name: "agent"})
	}
	args = append(args, monitoringv1.Argument{Name: "storage.agent.path", Value: StorageDir})
	if spec.WALCompression != nil {
		name := "storage.agent.wal-compression"
		if !*spec.WALCompression {
			name = "no-" + name
		}
		args = append(args, monitoringv1.Argument{Name: name})
	}
	if v.AtLeast(2, 24) {
		args = append(args, monitoringv1.Argument{Name: "web.config.file", Value: WebConfigDir + "/" + webconfig.SecretKey})
	}
	return args
}

// Retention is spec.retention, or prometheus-operator's default
// when neither retention nor retentionSize is set
// (common.go RetentionTimeOrDefault).
func Retention(spec v1alpha1.PrometheusServerSpec) string {
	if spec.Retention == "" && spec.RetentionSize == "" {
		return DefaultRetention
	}
	return string(spec.Retention)
}

// RetentionInConfig reports whether the retention goes into the
// configuration file: from Prometheus 3.11 (promcfg.go
// appendStorageSettingsConfig).
func RetentionInConfig(spec v1alpha1.PrometheusServerSpec) bool {
	return Version(spec).AtLeast(3, 11)
}

// Version is the Prometheus version of spec in prometheus-operator's
// layout, spec.version or DefaultVersion (promcfg.ParseVersion).
func Version(spec v1alpha1.PrometheusServerSpec) promcfg.Version {
	return promcfg.ParseVersion(cmp.Or(spec.Version, DefaultVersion))
}

// VersionLabel is the value of labelVersion: the version without its v.
func VersionLabel(spec v1alpha1.PrometheusServerSpec) string {
	return strings.TrimPrefix(cmp.Or(spec.Version, DefaultVersion), "v")
}

// Query are the flags of spec.enableAdminAPI, spec.rules and
// spec.query for Prometheus v, as prometheus-operator renders them (the
// rules' flags from 2.4, maxSamples from 2.5; a maxSamples or
// maxConcurrency of 0 or less renders nothing).
func Query(spec v1alpha1.PrometheusServerSpec, v promcfg.Version) []monitoringv1.Argument {
	var args []monitoringv1.Argument
	if spec.EnableAdminAPI {
		args = append(args, monitoringv1.Argument{Name: "web.enable-admin-api"})
	}
	for _, f := range []struct{ name, value string }{
		{"rules.alert.for-outage-tolerance", spec.Rules.Alert.ForOutageTolerance},
		{"rules.alert.for-grace-period", spec.Rules.Alert.ForGracePeriod},
		{"rules.alert.resend-delay", spec.Rules.Alert.ResendDelay},
	} {
		if f.value != "" && v.AtLeast(2, 4) {
			args = append(args, monitoringv1.Argument{Name: f.name, Value: f.value})
		}
	}
	q := spec.Query
	if q == nil {
		return args
	}
	if q.LookbackDelta != nil {
		args = append(args, monitoringv1.Argument{Name: "query.lookback-delta", Value: *q.LookbackDelta})
	}
	if n := ptr.Deref(q.MaxSamples, 0); n > 0 && v.AtLeast(2, 5) {
		args = append(args, monitoringv1.Argument{Name: "query.max-samples", Value: strconv.Itoa(int(n))})
	}
	if n := ptr.Deref(q.MaxConcurrency, 0); n > 0 {
		args = append(args, monitoringv1.Argument{Name: "query.max-concurrency", Value: strconv.Itoa(int(n))})
	}
	if q.Timeout != nil {
		args = append(args, monitoringv1.Argument{Name: "query.timeout", Value: string(*q.Timeout)})
	}
	return args
}

// Receiver are the flags of spec's remote write receiver for
// Prometheus v, as prometheus-operator renders them
// (BuildCommonPrometheusArgs): the receiver from 2.33, the messages it
// accepts from 2.54.
func Receiver(spec v1alpha1.PrometheusServerSpec, v promcfg.Version) []monitoringv1.Argument {
	if !spec.EnableRemoteWriteReceiver || !v.AtLeast(2, 33) {
		return nil
	}
	args := []monitoringv1.Argument{{Name: "web.enable-remote-write-receiver"}}
	if len(spec.RemoteWriteReceiverMessageVersions) > 0 && v.AtLeast(2, 54) {
		messages := make([]string, len(spec.RemoteWriteReceiverMessageVersions))
		for i, m := range spec.RemoteWriteReceiverMessageVersions {
			messages[i] = "prometheus.WriteRequest"
			if m == monitoringv1.RemoteWriteMessageVersion2_0 {
				messages[i] = "io.prometheus.write.v2.Request"
			}
		}
		args = append(args, monitoringv1.Argument{Name: "web.remote-write-receiver.accepted-protobuf-messages", Value: strings.Join(messages, ",")})
	}
	return args
}

// otlpReceiver is the flag of spec's OTLP receiver for Prometheus v, as
// prometheus-operator renders it (BuildCommonPrometheusArgs): on with
// enableOTLPReceiver true, or unset with an otlp section; from Prometheus
// 3 --web.enable-otlp-receiver, before it the feature otlp-write-receiver
// from 2.47 (a flag of its own beside enableFeatures', which Prometheus
// adds up), unless off (common's gated).
func otlpReceiver(spec v1alpha1.PrometheusServerSpec, v promcfg.Version, off bool) []monitoringv1.Argument {
	if !ptr.Deref(spec.EnableOTLPReceiver, spec.OTLP != nil) {
		return nil
	}
	switch {
	case v[0] >= 3:
		return []monitoringv1.Argument{{Name: "web.enable-otlp-receiver"}}
	case !off && v.AtLeast(2, 47):
		return []monitoringv1.Argument{{Name: "enable-feature", Value: "otlp-write-receiver"}}
	}
	return nil
}

// Compaction are the flags of spec.disableCompaction and of the Thanos
// sidecar's uploads (spec.thanos) for Prometheus v, as
// prometheus-operator renders them (server/statefulset.go,
// thanos.PrometheusArgs): blocks never compacted (of 2h without a
// sidecar), or compacted once uploaded; with an out-of-order window, no
// overlapping compaction either (from 2.55).
func Compaction(spec v1alpha1.PrometheusServerSpec, v promcfg.Version) []monitoringv1.Argument {
	return thanos.PrometheusArgs(thanos.Inputs{
		Spec: spec.Thanos, Prometheus: v, DisableCompaction: spec.DisableCompaction,
		OutOfOrder: spec.TSDB != nil && spec.TSDB.OutOfOrderTimeWindow != nil,
		Storage:    corev1.VolumeMount{MountPath: StorageDir},
	})
}

// RetentionSettings are the storage.tsdb.retention settings of the configuration, which hold
// the retention from Prometheus 3.11 on, in prometheus-operator's layout
// (promcfg.go appendStorageSettingsConfig): the time, which a
// retentionPercentage above 0 stands for the default of, as a size does;
// the size; the percentage, even 0.
func RetentionSettings(spec v1alpha1.PrometheusServerSpec) yaml.MapSlice {
	var retention yaml.MapSlice
	t := Retention(spec)
	if spec.Retention == "" && RetentionPercentageSet(spec) {
		t = ""
	}
	if t != "" {
		retention = append(retention, yaml.MapItem{Key: "time", Value: t})
	}
	if spec.RetentionSize != "" {
		retention = append(retention, yaml.MapItem{Key: "size", Value: string(spec.RetentionSize)})
	}
	if p := spec.RetentionPercentage; p != nil {
		retention = append(retention, yaml.MapItem{Key: "percentage", Value: p.AsApproximateFloat64()})
	}
	return retention
}

// RetentionPercentageSet tells whether spec's retentionPercentage is set
// above 0 (0 turns percentage-based retention off).
func RetentionPercentageSet(spec v1alpha1.PrometheusServerSpec) bool {
	return spec.RetentionPercentage != nil && !spec.RetentionPercentage.IsZero()
}

// ValidateRetentionPercentage refuses a retentionPercentage outside 0 to
// 100, as prometheus-operator's generator does, whatever the version.
func ValidateRetentionPercentage(spec v1alpha1.PrometheusServerSpec) error {
	if p := spec.RetentionPercentage; p != nil {
		if v := p.AsApproximateFloat64(); v < 0 || v > 100 {
			return fmt.Errorf("spec.retentionPercentage: must be between 0 and 100, not %s", p)
		}
	}
	return nil
}
