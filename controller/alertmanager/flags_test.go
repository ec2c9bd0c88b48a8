package alertmanager

import (
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/controller/webconfig"
)

// gatedAlertmanager is testAlertmanager setting every field whose flag
// prometheus-operator gates on the version.
func gatedAlertmanager() *monitoringv1.Alertmanager {
	am := testAlertmanager("monitoring", "main", "podreload")
	am.Spec.EnableFeatures = []string{"receiver-name-in-metrics"}
	am.Spec.Web = &monitoringv1.AlertmanagerWebSpec{GetConcurrency: ptr.To[uint32](4), Timeout: ptr.To[uint32](30)}
	am.Spec.Limits = &monitoringv1.AlertmanagerLimitsSpec{MaxSilences: ptr.To[int32](100), MaxPerSilenceBytes: ptr.To(monitoringv1.ByteSize("1KB"))}
	am.Spec.MinReadySeconds = ptr.To[int32](10)
	am.Spec.LogFormat = "json"
	am.Spec.ClusterLabel = ptr.To("prod")
	am.Spec.ClusterTLS = peerTLS()
	return am
}

// peerTLS is mutual TLS between the peers, from a Secret and a ConfigMap.
func peerTLS() *monitoringv1.ClusterTLSConfig {
	cert := monitoringv1.SecretOrConfigMap{Secret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "peer-tls"}, Key: "tls.crt"}}
	key := corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "peer-tls"}, Key: "tls.key"}
	ca := monitoringv1.SecretOrConfigMap{ConfigMap: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "peer-ca"}, Key: "ca.crt"}}
	return &monitoringv1.ClusterTLSConfig{
		ServerTLS: monitoringv1.WebTLSConfig{Cert: cert, KeySecret: key, ClientCA: ca, ClientAuthType: ptr.To(monitoringv1.RequireAndVerifyClientCert)},
		ClientTLS: monitoringv1.SafeTLSConfig{Cert: cert, KeySecret: &key, CA: ca, ServerName: ptr.To("alertmanager")},
	}
}

// TestFlagGates: each flag prometheus-operator gates on the version is
// rendered from the version that brought it, not in the one before (nor
// in its pre-releases).
func TestFlagGates(t *testing.T) {
	for _, tc := range []struct {
		flags         []string
		before, since string
	}{
		{[]string{"--log.format=json"}, "0.15.3", "0.16.0"},
		{[]string{"--web.get-concurrency=4", "--web.timeout=30"}, "0.16.2", "0.17.0"},
		{[]string{"--web.config.file=/etc/alertmanager/web_config/web-config.yaml"}, "0.21.0", "0.22.0"},
		{[]string{"--cluster.tls-config=/etc/alertmanager/cluster_tls_config/cluster-tls-config.yaml"}, "0.23.0", "0.24.0"},
		{[]string{"--cluster.label=prod"}, "0.25.1", "0.26.0"},
		{[]string{"--enable-feature=receiver-name-in-metrics"}, "0.26.0", "0.27.0"},
		{[]string{"--silences.max-silences=100", "--silences.max-per-silence-bytes=1024"}, "0.27.0", "0.28.0"},
		{[]string{"--dispatch.start-delay=10s", "--cluster.peer-name=$(POD_NAME)"}, "0.30.0-rc.0", "0.30.0"},
	} {
		t.Run(tc.flags[0], func(t *testing.T) {
			before, after := args(gatedAlertmanager(), tc.before), args(gatedAlertmanager(), tc.since)
			for _, f := range tc.flags {
				require.NotContains(t, before, f, tc.before)
				require.Contains(t, after, f, tc.since)
			}
			// Nothing else moves at the gate.
			require.Equal(t, len(before)+len(tc.flags), len(after))
		})
	}
}

// TestFlagsOfOldVersions: the whole of Alertmanager's flags at the
// versions of a year-old kube-prometheus-stack (v0.28.1) and of older
// distributions (v0.25.0, v0.21.0), as prometheus-operator v0.94.1
// renders them.
func TestFlagsOfOldVersions(t *testing.T) {
	common := func(extra ...string) []string {
		return slices.Concat([]string{
			"--config.file=/etc/alertmanager/config_out/alertmanager.env.yaml",
			"--storage.path=/alertmanager",
			"--data.retention=120h",
			"--cluster.listen-address=[$(POD_IP)]:9094",
			"--web.listen-address=:9093",
			"--web.external-url=https://am.example",
		}, extra)
	}
	peers := []string{
		"--cluster.peer=alertmanager-main-0.alertmanager-operated:9094",
		"--cluster.peer=alertmanager-main-1.alertmanager-operated:9094",
		"--cluster.peer=alertmanager-main-2.alertmanager-operated:9094",
		"--cluster.peer=other-am.example:9094",
		"--cluster.reconnect-timeout=5m",
	}
	for version, want := range map[string][]string{
		"0.28.1": common(slices.Concat([]string{
			"--enable-feature=receiver-name-in-metrics",
			"--web.route-prefix=/",
			"--web.get-concurrency=4", "--web.timeout=30",
			"--silences.max-silences=100", "--silences.max-per-silence-bytes=1024",
			"--log.level=debug", "--log.format=json",
			"--cluster.label=prod",
		}, peers, []string{"--web.config.file=/etc/alertmanager/web_config/web-config.yaml", "--cluster.tls-config=/etc/alertmanager/cluster_tls_config/cluster-tls-config.yaml"})...),
		"0.25.0": common(slices.Concat([]string{
			"--web.route-prefix=/",
			"--web.get-concurrency=4", "--web.timeout=30",
			"--log.level=debug", "--log.format=json",
		}, peers, []string{"--web.config.file=/etc/alertmanager/web_config/web-config.yaml", "--cluster.tls-config=/etc/alertmanager/cluster_tls_config/cluster-tls-config.yaml"})...),
		"0.21.0": common(slices.Concat([]string{
			"--web.route-prefix=/",
			"--web.get-concurrency=4", "--web.timeout=30",
			"--log.level=debug", "--log.format=json",
		}, peers)...),
	} {
		t.Run(version, func(t *testing.T) {
			am := gatedAlertmanager()
			am.Spec.Version = "v" + version
			require.Empty(t, fromAlertmanager(am))
			require.Equal(t, want, args(am, version))
		})
	}
}

// TestWebBeforeItsFile: before Alertmanager 0.22 nothing of spec.web's
// configuration file is in the pods (no mount, no hash to roll them on),
// and the probes and the reload are over HTTP whatever tlsConfig says;
// from 0.22, over HTTPS.
func TestWebBeforeItsFile(t *testing.T) {
	am := testAlertmanager("monitoring", "main", "podreload")
	am.Spec.Web = &monitoringv1.AlertmanagerWebSpec{WebConfigFileFields: monitoringv1.WebConfigFileFields{TLSConfig: &monitoringv1.WebTLSConfig{
		Cert:      monitoringv1.SecretOrConfigMap{Secret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "tls"}, Key: "tls.crt"}},
		KeySecret: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "tls"}, Key: "tls.key"},
	}}}
	pod := func(version string) corev1.PodTemplateSpec {
		am.Spec.Version = version
		objs, err := render(inputs{am: am, config: []byte("x"), web: webconfig.Rendered{File: []byte("tls_server_config: {}\n")}})
		require.NoError(t, err)
		return objs.sts.Spec.Template
	}
	old := pod("v0.21.0")
	require.NotContains(t, old.Annotations, annotationWebConfig)
	require.False(t, slices.ContainsFunc(old.Spec.Volumes, func(v corev1.Volume) bool { return strings.HasPrefix(v.Name, "web-") }), "no web volume")
	require.Equal(t, corev1.URISchemeHTTP, old.Spec.Containers[0].LivenessProbe.HTTPGet.Scheme)
	require.Equal(t, []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}, old.Spec.Containers[0].Env, "no POD_NAME before 0.30")
	require.Contains(t, old.Spec.Containers[1].Args, "--reload-url=http://127.0.0.1:9093/-/reload")

	cur := pod("v0.22.0")
	require.Contains(t, cur.Annotations, annotationWebConfig)
	require.True(t, slices.ContainsFunc(cur.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "web-config" }))
	require.Equal(t, corev1.URISchemeHTTPS, cur.Spec.Containers[0].LivenessProbe.HTTPGet.Scheme)
	require.Contains(t, cur.Spec.Containers[1].Args, "--reload-url=https://localhost:9093/-/reload")
	require.Len(t, pod("v0.30.0").Spec.Containers[0].Env, 2, "POD_NAME from 0.30")
}

// TestDefaultVersion: without spec.version, prometheus-operator v0.94.1's
// default, or the version the StatefulSet runs when it is newer (a
// takeover never downgrades); spec.version wins over both.
func TestDefaultVersion(t *testing.T) {
	running := func(image string) *appsv1.StatefulSet {
		sts := operatorStatefulSet(testAlertmanager("monitoring", "main", "podreload"))
		sts.Spec.Template.Spec.Containers[0].Image = image
		return sts
	}
	for _, tc := range []struct {
		version string
		live    *appsv1.StatefulSet
		want    string
	}{
		{"", nil, "v0.34.0"},
		{"", running("quay.io/prometheus/alertmanager:v0.33.1"), "v0.34.0"},
		{"", running("quay.io/prometheus/alertmanager:v0.35.0"), "v0.35.0"},
		{"", running("mirror.example:5000/alertmanager:v0.35.1@sha256:abcd"), "v0.35.1"},
		{"v0.28.1", running("quay.io/prometheus/alertmanager:v0.35.0"), "v0.28.1"},
	} {
		am := testAlertmanager("monitoring", "main", "podreload")
		am.Spec.Version = tc.version
		objs, err := render(inputs{am: am, live: tc.live, config: []byte("x")})
		require.NoError(t, err)
		pod := objs.sts.Spec.Template
		require.Equal(t, "quay.io/prometheus/alertmanager:"+tc.want, pod.Spec.Containers[0].Image, tc)
		require.Equal(t, tc.want[1:], pod.Labels[labelVersion])
	}
}

// TestZeroDurations: retention and the cluster's durations set to zero are
// dropped rather than passed as flags (retention back to its default), and
// the Reconciled condition says which, in prometheus-operator v0.94.1's
// words; a duration that is not zero is passed as it is.
func TestZeroDurations(t *testing.T) {
	am := testAlertmanager("monitoring", "main", "podreload")
	require.Equal(t, metav1.Condition{Type: conditionReconciled, Status: metav1.ConditionTrue, Reason: "Reconciled", Message: "the objects match the spec"}, reconciled(am))
	am.Spec.Retention = "0s"
	am.Spec.ClusterGossipInterval = "0"
	am.Spec.ClusterPushpullInterval = "1m"
	am.Spec.ClusterPeerTimeout = "0ms"
	a := args(am, "0.34.0")
	require.Contains(t, a, "--data.retention=120h")
	require.Contains(t, a, "--cluster.pushpull-interval=1m")
	for _, f := range []string{"--cluster.gossip-interval", "--cluster.peer-timeout"} {
		require.False(t, slices.ContainsFunc(a, func(s string) bool { return strings.HasPrefix(s, f) }), f)
	}
	require.Equal(t, metav1.Condition{
		Type: conditionReconciled, Status: metav1.ConditionTrue, Reason: "IgnoredFields",
		Message: "The following fields were ignored: retention (zero value not supported), clusterGossipInterval (zero value not supported), clusterPeerTimeout (zero value not supported)",
	}, reconciled(am))
	am.Spec.Retention = "24h"
	require.Contains(t, args(am, "0.34.0"), "--data.retention=24h")
}
