package prometheusagent

import (
	"reflect"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/goldenfile"
)

// TestFieldsCoverTheSpec fails when a field of the pinned
// PrometheusAgentSpec has no row, or a row names no field.
func TestFieldsCoverTheSpec(t *testing.T) {
	require.NoError(t, takeover.CheckTable(reflect.TypeFor[monitoringv1alpha1.PrometheusAgentSpec](), fields()))
}

// TestFieldMatrix checks docs/prometheus-operator-agent.md is the
// rendering of the table (-update rewrites it).
func TestFieldMatrix(t *testing.T) {
	goldenfile.Check(t, "../../docs/prometheus-operator-agent.md", []byte(fieldMatrix()))
}

// fieldMatrix renders docs/prometheus-operator-agent.md from fields.
func fieldMatrix() string {
	var b strings.Builder
	b.WriteString(`# prometheus-operator's PrometheusAgent fields in a takeover

<!-- Generated from controller/prometheusagent/fields.go by
     go test ./controller/prometheusagent/ -run TestFieldMatrix -update -->

What podreload does with each field of a ` + "`monitoring.coreos.com/v1alpha1` `PrometheusAgent`" + `
(prometheus-operator's types at v0.95.2, go.mod) when it takes the object
over ([takeover.md](takeover.md)). An agent renders as prometheus-operator's
agent controller renders it: the StatefulSets ` + "`prom-agent-<name>`" + ` (and
` + "`-shard-<n>`" + `) under the governing Service ` + "`prometheus-agent-operated`" + `,
Prometheus in agent mode (` + "`--agent`, `--storage.agent.path`" + `), and the
configuration prometheus-operator's GenerateAgentConfiguration writes (no
rules, no alerting); with ` + "`mode: DaemonSet`" + `, one DaemonSet ` + "`prom-agent-<name>`" + `
instead, an agent per node scraping its node's pods, as prometheus-operator
renders it behind its ` + "`PrometheusAgentDaemonSet`" + ` feature gate (the ` + "`mode`" + ` row;
podreload needs no gate). The fields the agent shares with a ` + "`Prometheus`" + ` (its
CommonPrometheusFields) mean the same as in
[prometheus-operator.md](prometheus-operator.md):

` + takeover.Legend + `
A path with ` + "`[]`" + ` classifies the items of a list field by field; a row
covers the field and everything under it. A test walks the Go types and
fails when a field has no row. A ` + "`version`" + ` that is not a version is
refused too, as for a Prometheus.

`)
	b.WriteString(takeover.Matrix(fields()))
	return b.String()
}

// TestConvertRefused: a version that is not one is refused; either mode,
// set or not, is not.
func TestConvertRefused(t *testing.T) {
	for _, c := range []struct {
		mode    string
		version string
		want    []string
	}{
		{"", "", nil},
		{"StatefulSet", "v3.5", nil},
		{"DaemonSet", "", nil},
		{"DaemonSet", "latest", []string{"version"}},
	} {
		a := &monitoringv1alpha1.PrometheusAgent{}
		if c.mode != "" {
			a.Spec.Mode = (*monitoringv1alpha1.PrometheusAgentMode)(&c.mode)
		}
		a.Spec.Version = c.version
		_, unsupported := FromAgent(a)
		require.Equal(t, c.want, unsupported, "mode %q version %q", c.mode, c.version)
	}
}

// TestConvertMajorVersion: an agent of a Prometheus other than 2 or 3 is
// refused with its version, as prometheus-operator's generator refuses it.
func TestConvertMajorVersion(t *testing.T) {
	a := &monitoringv1alpha1.PrometheusAgent{}
	a.Spec.Version = "v1.8.2"
	_, unsupported := FromAgent(a)
	require.Equal(t, []string{"spec.version: Prometheus v1.8.2, and prometheus-operator renders Prometheus 2 and 3 only"}, unsupported)
	a.Spec.Version = "v2.32.0"
	_, unsupported = FromAgent(a)
	require.Empty(t, unsupported)
}

// TestDaemonSetRefused: each field prometheus-operator's CRD refuses in
// DaemonSet mode is refused by its path, with the CRD's message, in
// takeover-check (Check.Invalid) and as the spec error of a sync
// (invalidInDaemonSet, Kind.Invalid), and keeps nothing else from being
// taken over; in StatefulSet mode none is. The shards' rule refuses more
// than one shard only.
func TestDaemonSetRefused(t *testing.T) {
	sel := &metav1.LabelSelector{}
	for _, c := range []struct {
		path string
		set  func(s *monitoringv1alpha1.PrometheusAgentSpec)
	}{
		{"replicas", func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.Replicas = ptr.To[int32](1) }},
		{"storage", func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.Storage = &monitoringv1.StorageSpec{} }},
		{"shards", func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.Shards = ptr.To[int32](2) }},
		{"persistentVolumeClaimRetentionPolicy", func(s *monitoringv1alpha1.PrometheusAgentSpec) {
			s.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
		}},
		{"scrapeConfigSelector", func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.ScrapeConfigSelector = sel }},
		{"probeSelector", func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.ProbeSelector = sel }},
		{"scrapeConfigNamespaceSelector", func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.ScrapeConfigNamespaceSelector = sel }},
		{"probeNamespaceSelector", func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.ProbeNamespaceSelector = sel }},
		{"serviceMonitorSelector", func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.ServiceMonitorSelector = sel }},
		{"serviceMonitorNamespaceSelector", func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.ServiceMonitorNamespaceSelector = sel }},
		{"additionalScrapeConfigs", func(s *monitoringv1alpha1.PrometheusAgentSpec) {
			s.AdditionalScrapeConfigs = &corev1.SecretKeySelector{Key: "k"}
		}},
		{"shardingStrategy", func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.ShardingStrategy = &monitoringv1.ShardingStrategy{} }},
	} {
		msg := c.path + " cannot be set when mode is DaemonSet"
		if c.path == "shards" {
			msg = "shards cannot be greater than 1 when mode is DaemonSet"
		}
		a := daemonSetAgent("monitoring", "edge")
		c.set(&a.Spec)
		_, unsupported := FromAgent(a)
		require.Empty(t, unsupported, c.path)
		require.Equal(t, []string{c.path + ": " + msg}, invalidInDaemonSet(a), c.path)
		check, err := Checker().Check(a)
		require.NoError(t, err)
		require.Equal(t, []string{c.path + ": " + msg}, check.Invalid, "takeover-check: %s", c.path)
		require.Empty(t, check.Unsupported, c.path)
		require.Equal(t, "prom-agent-edge", check.DaemonSet, c.path)

		a.Spec.Mode = ptr.To(monitoringv1alpha1.StatefulSetPrometheusAgentMode)
		require.Empty(t, invalidInDaemonSet(a), "StatefulSet mode: %s", c.path)
	}
	a := daemonSetAgent("monitoring", "edge")
	a.Spec.Shards = ptr.To[int32](1)
	require.Empty(t, invalidInDaemonSet(a), "one shard")
	check, err := Checker().Check(a)
	require.NoError(t, err)
	require.Empty(t, check.Invalid)
	require.Empty(t, check.StatefulSets)
}
