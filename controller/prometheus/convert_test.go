package prometheus

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/takeover"
)

// testPrometheus is a Prometheus whose configuration is managed: it
// sets serviceMonitorSelector (to {}), and nothing else.
func testPrometheus() *monitoringv1.Prometheus {
	return &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Name: "k8s", Namespace: "monitoring"},
		Spec: monitoringv1.PrometheusSpec{CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
			ServiceMonitorSelector: &metav1.LabelSelector{},
		}},
	}
}

// convert converts testPrometheus with the YAML spec merged in.
func convert(t *testing.T, spec string) (promserver.Target, []string) {
	t.Helper()
	p := testPrometheus()
	require.NoError(t, yaml.UnmarshalStrict([]byte(spec), &p.Spec))
	return FromPrometheus(p)
}

// TestConvertMappedFields: each mapped field's value is in the converted
// spec, and every mapped row has a case.
func TestConvertMappedFields(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	all := &metav1.LabelSelector{}
	cases := []struct {
		path string
		spec string
		got  func(s v1alpha1.PrometheusServerSpec) any
		want any
	}{
		{"podMetadata", "podMetadata: {labels: {a: b}}", func(s v1alpha1.PrometheusServerSpec) any { return s.PodMetadata },
			&monitoringv1.EmbeddedObjectMetadata{Labels: map[string]string{"a": "b"}}},
		{"serviceMonitorSelector", "serviceMonitorSelector: {matchLabels: {team: a}}", func(s v1alpha1.PrometheusServerSpec) any { return s.ServiceMonitorSelector }, sel},
		{"serviceMonitorNamespaceSelector", "serviceMonitorNamespaceSelector: {}", func(s v1alpha1.PrometheusServerSpec) any { return s.ServiceMonitorNamespaceSelector }, all},
		{"podMonitorSelector", "podMonitorSelector: {matchLabels: {team: a}}", func(s v1alpha1.PrometheusServerSpec) any { return s.PodMonitorSelector }, sel},
		{"podMonitorNamespaceSelector", "podMonitorNamespaceSelector: {}", func(s v1alpha1.PrometheusServerSpec) any { return s.PodMonitorNamespaceSelector }, all},
		{"probeSelector", "probeSelector: {matchLabels: {team: a}}", func(s v1alpha1.PrometheusServerSpec) any { return s.ProbeSelector }, sel},
		{"probeNamespaceSelector", "probeNamespaceSelector: {}", func(s v1alpha1.PrometheusServerSpec) any { return s.ProbeNamespaceSelector }, all},
		{"scrapeConfigSelector", "scrapeConfigSelector: {matchLabels: {team: a}}", func(s v1alpha1.PrometheusServerSpec) any { return s.ScrapeConfigSelector }, sel},
		{"scrapeConfigNamespaceSelector", "scrapeConfigNamespaceSelector: {}", func(s v1alpha1.PrometheusServerSpec) any { return s.ScrapeConfigNamespaceSelector }, all},
		{"ruleSelector", "ruleSelector: {matchLabels: {team: a}}", func(s v1alpha1.PrometheusServerSpec) any { return s.RuleSelector }, sel},
		{"ruleNamespaceSelector", "ruleNamespaceSelector: {}", func(s v1alpha1.PrometheusServerSpec) any { return s.RuleNamespaceSelector }, all},
		{"version", "version: v2.55.1", func(s v1alpha1.PrometheusServerSpec) any { return []string{s.Version, s.Image} },
			[]string{"v2.55.1", "quay.io/prometheus/prometheus:v2.55.1"}},
		{"paused", "paused: true", func(s v1alpha1.PrometheusServerSpec) any { return s.Paused }, true},
		{"image", "{image: reg.example/prom:x, version: v3.0.0}", func(s v1alpha1.PrometheusServerSpec) any { return s.Image }, "reg.example/prom:x"},
		{"imagePullPolicy", "imagePullPolicy: Always", func(s v1alpha1.PrometheusServerSpec) any { return s.ImagePullPolicy }, corev1.PullAlways},
		{"imagePullSecrets", "imagePullSecrets: [{name: pull}]", func(s v1alpha1.PrometheusServerSpec) any { return s.ImagePullSecrets },
			[]corev1.LocalObjectReference{{Name: "pull"}}},
		{"replicas", "replicas: 3", func(s v1alpha1.PrometheusServerSpec) any { return s.Replicas }, ptr.To[int32](3)},
		{"shards", "shards: 2", func(s v1alpha1.PrometheusServerSpec) any { return s.Shards }, ptr.To[int32](2)},
		{"logLevel", "logLevel: debug", func(s v1alpha1.PrometheusServerSpec) any { return s.LogLevel }, "debug"},
		{"logFormat", "logFormat: json", func(s v1alpha1.PrometheusServerSpec) any { return s.LogFormat }, "json"},
		{"scrapeInterval", "scrapeInterval: 15s", func(s v1alpha1.PrometheusServerSpec) any { return s.ScrapeInterval }, monitoringv1.Duration("15s")},
		{"scrapeTimeout", "scrapeTimeout: 5s", func(s v1alpha1.PrometheusServerSpec) any { return s.ScrapeTimeout }, monitoringv1.Duration("5s")},
		{"externalLabels", "externalLabels: {cluster: a}", func(s v1alpha1.PrometheusServerSpec) any { return s.ExternalLabels }, map[string]string{"cluster": "a"}},
		{"enableFeatures", "enableFeatures: [exemplar-storage]", func(s v1alpha1.PrometheusServerSpec) any { return s.EnableFeatures },
			[]monitoringv1.EnableFeature{"exemplar-storage"}},
		{"externalUrl", "externalUrl: http://prom.example/x", func(s v1alpha1.PrometheusServerSpec) any { return s.ExternalURL }, "http://prom.example/x"},
		{"routePrefix", "routePrefix: /x", func(s v1alpha1.PrometheusServerSpec) any { return s.RoutePrefix }, "/x"},
		{"storage.emptyDir", "storage: {emptyDir: {medium: Memory}}", func(s v1alpha1.PrometheusServerSpec) any { return s.Storage },
			&v1alpha1.StorageSpec{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		{"storage.volumeClaimTemplate.metadata", "storage: {volumeClaimTemplate: {metadata: {name: db}}}", func(s v1alpha1.PrometheusServerSpec) any { return s.Storage },
			&v1alpha1.StorageSpec{VolumeClaimTemplate: &monitoringv1.EmbeddedPersistentVolumeClaim{EmbeddedObjectMetadata: monitoringv1.EmbeddedObjectMetadata{Name: "db"}}}},
		{"storage.volumeClaimTemplate.spec", "storage: {volumeClaimTemplate: {spec: {storageClassName: fast}}}", func(s v1alpha1.PrometheusServerSpec) any { return s.Storage },
			&v1alpha1.StorageSpec{VolumeClaimTemplate: &monitoringv1.EmbeddedPersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("fast")}}}},
		{"web.tlsConfig.cert", "web: {tlsConfig: {cert: {secret: {name: tls, key: crt}}}}", func(s v1alpha1.PrometheusServerSpec) any { return s.Web.TLSConfig.Cert.Secret.Name }, "tls"},
		{"web.tlsConfig.keySecret", "web: {tlsConfig: {keySecret: {name: tls, key: key}}}", func(s v1alpha1.PrometheusServerSpec) any { return s.Web.TLSConfig.KeySecret.Key }, "key"},
		{"web.tlsConfig.client_ca", "web: {tlsConfig: {client_ca: {configMap: {name: ca, key: ca}}}}", func(s v1alpha1.PrometheusServerSpec) any { return s.Web.TLSConfig.ClientCA.ConfigMap.Name }, "ca"},
		{"web.tlsConfig.minVersion", "web: {tlsConfig: {minVersion: TLS12}}", func(s v1alpha1.PrometheusServerSpec) any { return s.Web.TLSConfig.MinVersion }, ptr.To("TLS12")},
		{"web.tlsConfig.maxVersion", "web: {tlsConfig: {maxVersion: TLS13}}", func(s v1alpha1.PrometheusServerSpec) any { return s.Web.TLSConfig.MaxVersion }, ptr.To("TLS13")},
		{"web.tlsConfig.cipherSuites", "web: {tlsConfig: {cipherSuites: [TLS_AES_128_GCM_SHA256]}}", func(s v1alpha1.PrometheusServerSpec) any { return s.Web.TLSConfig.CipherSuites },
			[]string{"TLS_AES_128_GCM_SHA256"}},
		{"web.tlsConfig.preferServerCipherSuites", "web: {tlsConfig: {preferServerCipherSuites: true}}", func(s v1alpha1.PrometheusServerSpec) any { return s.Web.TLSConfig.PreferServerCipherSuites }, ptr.To(true)},
		{"web.tlsConfig.curvePreferences", "web: {tlsConfig: {curvePreferences: [X25519]}}", func(s v1alpha1.PrometheusServerSpec) any { return s.Web.TLSConfig.CurvePreferences }, []string{"X25519"}},
		{"web.httpConfig", "web: {httpConfig: {http2: false}}", func(s v1alpha1.PrometheusServerSpec) any { return s.Web.HTTPConfig.HTTP2 }, ptr.To(false)},
		{"web.pageTitle", "web: {pageTitle: P}", func(s v1alpha1.PrometheusServerSpec) any { return s.Web.PageTitle }, ptr.To("P")},
		{"web.maxConnections", "web: {maxConnections: 9}", func(s v1alpha1.PrometheusServerSpec) any { return s.Web.MaxConnections }, ptr.To[int32](9)},
		{"resources", "resources: {requests: {memory: 1Gi}}", func(s v1alpha1.PrometheusServerSpec) any { return s.Resources },
			corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}},
		{"nodeSelector", "nodeSelector: {disk: ssd}", func(s v1alpha1.PrometheusServerSpec) any { return s.NodeSelector }, map[string]string{"disk": "ssd"}},
		{"serviceAccountName", "serviceAccountName: prom", func(s v1alpha1.PrometheusServerSpec) any { return s.ServiceAccountName }, "prom"},
		{"affinity", "affinity: {nodeAffinity: {}}", func(s v1alpha1.PrometheusServerSpec) any { return s.Affinity }, &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}},
		{"tolerations", "tolerations: [{key: k, operator: Exists}]", func(s v1alpha1.PrometheusServerSpec) any { return s.Tolerations },
			[]corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}},
		{"topologySpreadConstraints", "topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]",
			func(s v1alpha1.PrometheusServerSpec) any { return s.TopologySpreadConstraints[0].TopologyKey }, "zone"},
		{"remoteWrite[].url", "remoteWrite: [{url: 'http://rw.example/api'}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite },
			[]v1alpha1.RemoteWriteSpec{{URL: "http://rw.example/api"}}},
		{"remoteWrite[].name", "remoteWrite: [{url: 'http://a', name: q}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].Name }, "q"},
		{"remoteWrite[].basicAuth", "remoteWrite: [{url: 'http://a', basicAuth: {username: {name: s, key: u}}}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].BasicAuth.Username.Key }, "u"},
		{"remoteWrite[].authorization", "remoteWrite: [{url: 'http://a', authorization: {credentialsFile: /f}}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].Authorization.CredentialsFile }, "/f"},
		{"remoteWrite[].remoteTimeout", "remoteWrite: [{url: 'http://a', remoteTimeout: 1m}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].RemoteTimeout }, ptr.To(monitoringv1.Duration("1m"))},
		{"remoteWrite[].headers", "remoteWrite: [{url: 'http://a', headers: {a: b}}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].Headers }, map[string]string{"a": "b"}},
		{"remoteWrite[].sendExemplars", "remoteWrite: [{url: 'http://a', sendExemplars: true}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].SendExemplars }, ptr.To(true)},
		{"remoteWrite[].sendNativeHistograms", "remoteWrite: [{url: 'http://a', sendNativeHistograms: true}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].SendNativeHistograms }, ptr.To(true)},
		{"remoteWrite[].writeRelabelConfigs", "remoteWrite: [{url: 'http://a', writeRelabelConfigs: [{action: labeldrop, regex: x}]}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].WriteRelabelConfigs },
			[]monitoringv1.RelabelConfig{{Action: "labeldrop", Regex: "x"}}},
		{"remoteWrite[].queueConfig", "remoteWrite: [{url: 'http://a', queueConfig: {capacity: 5}}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].QueueConfig }, &monitoringv1.QueueConfig{Capacity: 5}},
		{"remoteWrite[].metadataConfig", "remoteWrite: [{url: 'http://a', metadataConfig: {send: true}}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].MetadataConfig }, &monitoringv1.MetadataConfig{Send: true}},
		{"prometheusExternalLabelName", `prometheusExternalLabelName: ""`, func(s v1alpha1.PrometheusServerSpec) any { return s.PrometheusExternalLabelName }, ptr.To("")},
		{"replicaExternalLabelName", "replicaExternalLabelName: replica", func(s v1alpha1.PrometheusServerSpec) any { return s.ReplicaExternalLabelName }, ptr.To("replica")},
		{"additionalAlertManagerConfigs", "additionalAlertManagerConfigs: {name: extra, key: am.yaml}", func(s v1alpha1.PrometheusServerSpec) any { return s.AdditionalAlertManagerConfigs.Key }, "am.yaml"},
		{"additionalAlertRelabelConfigs", "additionalAlertRelabelConfigs: {name: extra, key: rl.yaml}", func(s v1alpha1.PrometheusServerSpec) any { return s.AdditionalAlertRelabelConfigs.Key }, "rl.yaml"},
		{"tsdb.outOfOrderTimeWindow", "tsdb: {outOfOrderTimeWindow: 10m}", func(s v1alpha1.PrometheusServerSpec) any { return s.TSDB },
			&v1alpha1.TSDBSpec{OutOfOrderTimeWindow: ptr.To(monitoringv1.Duration("10m"))}},
		{"exemplars", "exemplars: {maxSize: 100000}", func(s v1alpha1.PrometheusServerSpec) any { return s.Exemplars }, &monitoringv1.Exemplars{MaxSize: ptr.To[int64](100000)}},
		{"ruleQueryOffset", "ruleQueryOffset: 1m", func(s v1alpha1.PrometheusServerSpec) any { return s.RuleQueryOffset }, ptr.To(monitoringv1.Duration("1m"))},
		{"remoteWrite[].oauth2", "remoteWrite: [{url: 'http://a', oauth2: {tokenUrl: 'http://t', clientId: {secret: {name: s, key: i}}, clientSecret: {name: s, key: c}}}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].OAuth2.TokenURL }, monitoringv1.URL("http://t")},
		{"remoteWrite[].tlsConfig", "remoteWrite: [{url: 'http://a', tlsConfig: {serverName: a}}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].TLSConfig.ServerName }, ptr.To("a")},
		{"remoteWrite[].proxyUrl", "remoteWrite: [{url: 'http://a', proxyUrl: 'http://p'}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].ProxyURL }, ptr.To("http://p")},
		{"remoteWrite[].noProxy", "remoteWrite: [{url: 'http://a', noProxy: local}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].NoProxy }, ptr.To("local")},
		{"remoteWrite[].proxyFromEnvironment", "remoteWrite: [{url: 'http://a', proxyFromEnvironment: true}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].ProxyFromEnvironment }, ptr.To(true)},
		{"remoteWrite[].proxyConnectHeader", "remoteWrite: [{url: 'http://a', proxyConnectHeader: {X-A: [{name: s, key: h}]}}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].ProxyConnectHeader["X-A"][0].Key }, "h"},
		{"remoteWrite[].followRedirects", "remoteWrite: [{url: 'http://a', followRedirects: false}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].FollowRedirects }, ptr.To(false)},
		{"remoteWrite[].enableHTTP2", "remoteWrite: [{url: 'http://a', enableHTTP2: false}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].EnableHttp2 }, ptr.To(false)},
		{"securityContext", "securityContext: {runAsUser: 1000}", func(s v1alpha1.PrometheusServerSpec) any { return s.SecurityContext },
			&corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}},
		{"additionalScrapeConfigs", "additionalScrapeConfigs: {name: extra, key: a.yaml}", func(s v1alpha1.PrometheusServerSpec) any { return s.AdditionalScrapeConfigs.Key }, "a.yaml"},
		{"priorityClassName", "priorityClassName: high", func(s v1alpha1.PrometheusServerSpec) any { return s.PriorityClassName }, "high"},
		{"portName", "portName: http-web", func(s v1alpha1.PrometheusServerSpec) any { return s.PortName }, "http-web"},
		{"enforcedNamespaceLabel", "enforcedNamespaceLabel: namespace", func(s v1alpha1.PrometheusServerSpec) any { return s.EnforcedNamespaceLabel }, "namespace"},
		{"additionalArgs", "additionalArgs: [{name: query.max-samples, value: '100'}]", func(s v1alpha1.PrometheusServerSpec) any { return s.AdditionalArgs },
			[]monitoringv1.Argument{{Name: "query.max-samples", Value: "100"}}},
		{"walCompression", "walCompression: false", func(s v1alpha1.PrometheusServerSpec) any { return s.WALCompression }, ptr.To(false)},
		{"excludedFromEnforcement", "excludedFromEnforcement: [{resource: servicemonitors, namespace: a}]", func(s v1alpha1.PrometheusServerSpec) any { return s.ExcludedFromEnforcement },
			[]monitoringv1.ObjectReference{{Resource: "servicemonitors", Namespace: "a"}}},
		{"reloadStrategy", "reloadStrategy: ProcessSignal", func(s v1alpha1.PrometheusServerSpec) any { return s.Reloader.ReloadMethod }, "signal"},
		{"scrapeClasses", "scrapeClasses: [{name: c, default: true}]", func(s v1alpha1.PrometheusServerSpec) any { return s.ScrapeClasses },
			[]monitoringv1.ScrapeClass{{Name: "c", Default: ptr.To(true)}}},
		{"baseImage", "{baseImage: reg.example/prom, version: '3.1'}", func(s v1alpha1.PrometheusServerSpec) any { return s.Image }, "reg.example/prom:v3.1.0"},
		{"tag", "{baseImage: reg.example/prom, tag: custom}", func(s v1alpha1.PrometheusServerSpec) any { return s.Image }, "reg.example/prom:custom"},
		{"sha", "{tag: custom, sha: abc}", func(s v1alpha1.PrometheusServerSpec) any { return s.Image }, "quay.io/prometheus/prometheus@sha256:abc"},
		{"retention", "retention: 90d", func(s v1alpha1.PrometheusServerSpec) any { return s.Retention }, monitoringv1.Duration("90d")},
		{"retentionSize", "retentionSize: 10GB", func(s v1alpha1.PrometheusServerSpec) any {
			return []string{string(s.Retention), string(s.RetentionSize)}
		},
			[]string{"", "10GB"}}, // No retention flag, as prometheus-operator: Prometheus' own 15d.
		{"retentionPercentage", "retentionPercentage: 50", func(s v1alpha1.PrometheusServerSpec) any {
			return []string{string(s.Retention), s.RetentionPercentage.String()}
		},
			[]string{"", "50"}}, // Above 0, no default time, as a retentionSize.
		{"prometheusRulesExcludedFromEnforce", "{excludedFromEnforcement: [{resource: podmonitors, namespace: a}], prometheusRulesExcludedFromEnforce: [{ruleNamespace: b, ruleName: r}]}",
			func(s v1alpha1.PrometheusServerSpec) any { return s.ExcludedFromEnforcement },
			[]monitoringv1.ObjectReference{
				{Resource: "podmonitors", Namespace: "a"},
				{Group: "monitoring.coreos.com", Resource: "prometheusrules", Namespace: "b", Name: "r"},
			}},
		{"alerting.alertmanagers[].namespace", "alerting: {alertmanagers: [{name: am, port: web, namespace: ns}]}", func(s v1alpha1.PrometheusServerSpec) any { return s.Alerting.Alertmanagers[0].Namespace }, "ns"},
		{"alerting.alertmanagers[].name", "alerting: {alertmanagers: [{name: am, port: web}]}", func(s v1alpha1.PrometheusServerSpec) any { return s.Alerting },
			&v1alpha1.AlertingSpec{Alertmanagers: []v1alpha1.AlertmanagerEndpoint{{Name: "am", Port: intstr.FromString("web")}}}},
		{"alerting.alertmanagers[].port", "alerting: {alertmanagers: [{name: am, port: 9093}]}", func(s v1alpha1.PrometheusServerSpec) any { return s.Alerting.Alertmanagers[0].Port }, intstr.FromInt32(9093)},
		{"alerting.alertmanagers[].scheme", "alerting: {alertmanagers: [{name: am, port: web, scheme: HTTPS}]}", func(s v1alpha1.PrometheusServerSpec) any { return s.Alerting.Alertmanagers[0].Scheme }, "https"},
		{"alerting.alertmanagers[].pathPrefix", "alerting: {alertmanagers: [{name: am, port: web, pathPrefix: /am}]}", func(s v1alpha1.PrometheusServerSpec) any { return s.Alerting.Alertmanagers[0].PathPrefix }, "/am"},
		{"alerting.alertmanagers[].apiVersion", "alerting: {alertmanagers: [{name: am, port: web, apiVersion: v2}]}", func(s v1alpha1.PrometheusServerSpec) any { return s.Alerting.Alertmanagers[0].APIVersion }, "v2"},
		{"schedulerName", "schedulerName: s", func(s v1alpha1.PrometheusServerSpec) any { return s.SchedulerName }, "s"},
		{"dnsPolicy", "dnsPolicy: None", func(s v1alpha1.PrometheusServerSpec) any { return s.DNSPolicy }, ptr.To(monitoringv1.DNSPolicy("None"))},
		{"dnsConfig", "dnsConfig: {nameservers: [1.1.1.1]}", func(s v1alpha1.PrometheusServerSpec) any { return s.DNSConfig },
			&monitoringv1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}}},
		{"hostAliases", "hostAliases: [{ip: 10.0.0.1, hostnames: [a]}]", func(s v1alpha1.PrometheusServerSpec) any { return s.HostAliases },
			[]monitoringv1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"a"}}}},
		{"enableServiceLinks", "enableServiceLinks: false", func(s v1alpha1.PrometheusServerSpec) any { return s.EnableServiceLinks }, ptr.To(false)},
		{"podManagementPolicy", "podManagementPolicy: OrderedReady", func(s v1alpha1.PrometheusServerSpec) any { return s.PodManagementPolicy },
			ptr.To(monitoringv1.OrderedReadyPodManagement)},
		{"updateStrategy", "updateStrategy: {type: OnDelete}", func(s v1alpha1.PrometheusServerSpec) any { return s.UpdateStrategy },
			&monitoringv1.StatefulSetUpdateStrategy{Type: monitoringv1.OnDeleteStatefulSetStrategyType}},
		{"hostNetwork", "hostNetwork: true", func(s v1alpha1.PrometheusServerSpec) any { return s.HostNetwork }, true},
		{"maximumStartupDurationSeconds", "maximumStartupDurationSeconds: 600", func(s v1alpha1.PrometheusServerSpec) any { return s.MaximumStartupDurationSeconds }, ptr.To[int32](600)},
		{"storage.disableMountSubPath", "storage: {disableMountSubPath: true, emptyDir: {}}", func(s v1alpha1.PrometheusServerSpec) any { return s.DisableMountSubPath }, true},
		{"storage.ephemeral", "storage: {ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce]}}}}", func(s v1alpha1.PrometheusServerSpec) any {
			return s.Ephemeral.VolumeClaimTemplate.Spec.AccessModes
		}, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
		{"minReadySeconds", "minReadySeconds: 5", func(s v1alpha1.PrometheusServerSpec) any { return s.MinReadySeconds }, ptr.To[int32](5)},
		{"persistentVolumeClaimRetentionPolicy", "persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete}", func(s v1alpha1.PrometheusServerSpec) any {
			return s.PersistentVolumeClaimRetentionPolicy
		}, &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType}},
		{"hostUsers", "hostUsers: false", func(s v1alpha1.PrometheusServerSpec) any { return s.HostUsers }, ptr.To(false)},
		{"terminationGracePeriodSeconds", "terminationGracePeriodSeconds: 60", func(s v1alpha1.PrometheusServerSpec) any { return s.TerminationGracePeriodSeconds }, ptr.To[int64](60)},
		{"secrets", "secrets: [etcd-certs]", func(s v1alpha1.PrometheusServerSpec) any { return s.Secrets }, []string{"etcd-certs"}},
		{"configMaps", "configMaps: [ca]", func(s v1alpha1.PrometheusServerSpec) any { return s.ConfigMaps }, []string{"ca"}},
		{"volumes", "volumes: [{name: extra, emptyDir: {}}]", func(s v1alpha1.PrometheusServerSpec) any { return s.Volumes },
			[]corev1.Volume{{Name: "extra", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
		{"volumeMounts", "volumeMounts: [{name: extra, mountPath: /extra}]", func(s v1alpha1.PrometheusServerSpec) any { return s.VolumeMounts },
			[]corev1.VolumeMount{{Name: "extra", MountPath: "/extra"}}},
		{"enableAdminAPI", "enableAdminAPI: true", func(s v1alpha1.PrometheusServerSpec) any { return s.EnableAdminAPI }, true},
		{"rules", "rules: {alert: {resendDelay: 2m}}", func(s v1alpha1.PrometheusServerSpec) any { return s.Rules },
			monitoringv1.Rules{Alert: monitoringv1.RulesAlert{ResendDelay: "2m"}}},
		{"query", "query: {maxSamples: 1000}", func(s v1alpha1.PrometheusServerSpec) any { return s.Query },
			&monitoringv1.QuerySpec{MaxSamples: ptr.To[int32](1000)}},
		{"alerting.alertmanagers[].timeout", "alerting: {alertmanagers: [{name: am, port: web, timeout: 10s}]}", func(s v1alpha1.PrometheusServerSpec) any { return s.Alerting.Alertmanagers[0].Timeout }, ptr.To(monitoringv1.Duration("10s"))},
		{"alerting.alertmanagers[].enableHttp2", "alerting: {alertmanagers: [{name: am, port: web, enableHttp2: false}]}", func(s v1alpha1.PrometheusServerSpec) any { return s.Alerting.Alertmanagers[0].EnableHttp2 }, ptr.To(false)},
		{"alerting.alertmanagers[].tlsConfig", "alerting: {alertmanagers: [{name: am, port: web, tlsConfig: {serverName: am}}]}", func(s v1alpha1.PrometheusServerSpec) any { return s.Alerting.Alertmanagers[0].TLSConfig.ServerName }, ptr.To("am")},
		{"alerting.alertmanagers[].basicAuth", "alerting: {alertmanagers: [{name: am, port: web, basicAuth: {username: {name: s, key: u}}}]}", func(s v1alpha1.PrometheusServerSpec) any { return s.Alerting.Alertmanagers[0].BasicAuth.Username.Key }, "u"},
		{"alerting.alertmanagers[].authorization", "alerting: {alertmanagers: [{name: am, port: web, authorization: {credentials: {name: s, key: t}}}]}", func(s v1alpha1.PrometheusServerSpec) any {
			return s.Alerting.Alertmanagers[0].Authorization.Credentials.Key
		}, "t"},
		{"alerting.alertmanagers[].proxyUrl", "alerting: {alertmanagers: [{name: am, port: web, proxyUrl: 'http://p:3128'}]}", func(s v1alpha1.PrometheusServerSpec) any { return s.Alerting.Alertmanagers[0].ProxyURL }, ptr.To("http://p:3128")},
		{"alerting.alertmanagers[].noProxy", "alerting: {alertmanagers: [{name: am, port: web, noProxy: local}]}", func(s v1alpha1.PrometheusServerSpec) any { return s.Alerting.Alertmanagers[0].NoProxy }, ptr.To("local")},
		{"alerting.alertmanagers[].proxyFromEnvironment", "alerting: {alertmanagers: [{name: am, port: web, proxyFromEnvironment: true}]}", func(s v1alpha1.PrometheusServerSpec) any { return s.Alerting.Alertmanagers[0].ProxyFromEnvironment }, ptr.To(true)},
		{"alerting.alertmanagers[].proxyConnectHeader", "alerting: {alertmanagers: [{name: am, port: web, proxyConnectHeader: {X-A: [{name: s, key: h}]}}]}", func(s v1alpha1.PrometheusServerSpec) any {
			return s.Alerting.Alertmanagers[0].ProxyConnectHeader["X-A"][0].Key
		}, "h"},
		{"alerting.alertmanagers[].relabelings", "alerting: {alertmanagers: [{name: am, port: web, relabelings: [{action: drop, regex: x, sourceLabels: [a]}]}]}", func(s v1alpha1.PrometheusServerSpec) any { return s.Alerting.Alertmanagers[0].RelabelConfigs },
			[]monitoringv1.RelabelConfig{{Action: "drop", Regex: "x", SourceLabels: []monitoringv1.LabelName{"a"}}}},
		{"alerting.alertmanagers[].alertRelabelings", "alerting: {alertmanagers: [{name: am, port: web, alertRelabelings: [{action: labeldrop, regex: x}]}]}", func(s v1alpha1.PrometheusServerSpec) any { return s.Alerting.Alertmanagers[0].AlertRelabelConfigs },
			[]monitoringv1.RelabelConfig{{Action: "labeldrop", Regex: "x"}}},
		{"evaluationInterval", "evaluationInterval: 1m", func(s v1alpha1.PrometheusServerSpec) any { return s.EvaluationInterval }, monitoringv1.Duration("1m")},
		{"serviceDiscoveryRole", "serviceDiscoveryRole: EndpointSlice", func(s v1alpha1.PrometheusServerSpec) any { return s.ServiceDiscoveryRole }, ptr.To(monitoringv1.EndpointSliceRole)},
		{"scrapeProtocols", "scrapeProtocols: [PrometheusProto]", func(s v1alpha1.PrometheusServerSpec) any { return s.ScrapeProtocols }, []monitoringv1.ScrapeProtocol{monitoringv1.PrometheusProto}},
		{"sampleLimit", "sampleLimit: 1", func(s v1alpha1.PrometheusServerSpec) any { return s.SampleLimit }, ptr.To[int64](1)},
		{"targetLimit", "targetLimit: 2", func(s v1alpha1.PrometheusServerSpec) any { return s.TargetLimit }, ptr.To[int64](2)},
		{"labelLimit", "labelLimit: 3", func(s v1alpha1.PrometheusServerSpec) any { return s.LabelLimit }, ptr.To[int64](3)},
		{"labelNameLengthLimit", "labelNameLengthLimit: 4", func(s v1alpha1.PrometheusServerSpec) any { return s.LabelNameLengthLimit }, ptr.To[int64](4)},
		{"labelValueLengthLimit", "labelValueLengthLimit: 5", func(s v1alpha1.PrometheusServerSpec) any { return s.LabelValueLengthLimit }, ptr.To[int64](5)},
		{"keepDroppedTargets", "keepDroppedTargets: 6", func(s v1alpha1.PrometheusServerSpec) any { return s.KeepDroppedTargets }, ptr.To[int64](6)},
		{"bodySizeLimit", "bodySizeLimit: 1MB", func(s v1alpha1.PrometheusServerSpec) any { return s.BodySizeLimit }, ptr.To(monitoringv1.ByteSize("1MB"))},
		{"enforcedSampleLimit", "enforcedSampleLimit: 1", func(s v1alpha1.PrometheusServerSpec) any { return s.EnforcedSampleLimit }, ptr.To[int64](1)},
		{"enforcedTargetLimit", "enforcedTargetLimit: 2", func(s v1alpha1.PrometheusServerSpec) any { return s.EnforcedTargetLimit }, ptr.To[int64](2)},
		{"enforcedLabelLimit", "enforcedLabelLimit: 3", func(s v1alpha1.PrometheusServerSpec) any { return s.EnforcedLabelLimit }, ptr.To[int64](3)},
		{"enforcedLabelNameLengthLimit", "enforcedLabelNameLengthLimit: 4", func(s v1alpha1.PrometheusServerSpec) any { return s.EnforcedLabelNameLengthLimit }, ptr.To[int64](4)},
		{"enforcedLabelValueLengthLimit", "enforcedLabelValueLengthLimit: 5", func(s v1alpha1.PrometheusServerSpec) any { return s.EnforcedLabelValueLengthLimit }, ptr.To[int64](5)},
		{"enforcedKeepDroppedTargets", "enforcedKeepDroppedTargets: 6", func(s v1alpha1.PrometheusServerSpec) any { return s.EnforcedKeepDroppedTargets }, ptr.To[int64](6)},
		{"enforcedBodySizeLimit", "enforcedBodySizeLimit: 2MB", func(s v1alpha1.PrometheusServerSpec) any { return s.EnforcedBodySizeLimit }, monitoringv1.ByteSize("2MB")},
		{"overrideHonorLabels", "overrideHonorLabels: true", func(s v1alpha1.PrometheusServerSpec) any { return s.OverrideHonorLabels }, true},
		{"overrideHonorTimestamps", "overrideHonorTimestamps: true", func(s v1alpha1.PrometheusServerSpec) any { return s.OverrideHonorTimestamps }, true},
		{"ignoreNamespaceSelectors", "ignoreNamespaceSelectors: true", func(s v1alpha1.PrometheusServerSpec) any { return s.IgnoreNamespaceSelectors }, true},
		{"nameValidationScheme", "nameValidationScheme: Legacy", func(s v1alpha1.PrometheusServerSpec) any { return s.NameValidationScheme }, ptr.To(monitoringv1.LegacyNameValidationScheme)},
		{"nameEscapingScheme", "nameEscapingScheme: Dots", func(s v1alpha1.PrometheusServerSpec) any { return s.NameEscapingScheme }, ptr.To(monitoringv1.DotsNameEscapingScheme)},
		{"convertClassicHistogramsToNHCB", "convertClassicHistogramsToNHCB: true", func(s v1alpha1.PrometheusServerSpec) any { return s.ConvertClassicHistogramsToNHCB }, ptr.To(true)},
		{"scrapeClassicHistograms", "scrapeClassicHistograms: false", func(s v1alpha1.PrometheusServerSpec) any { return s.ScrapeClassicHistograms }, ptr.To(false)},
		{"arbitraryFSAccessThroughSMs", "arbitraryFSAccessThroughSMs: {deny: true}", func(s v1alpha1.PrometheusServerSpec) any { return s.ArbitraryFSAccessThroughSMs.Deny }, true},
		{"alerting.alertmanagers[].bearerTokenFile", "alerting: {alertmanagers: [{name: am, port: web, bearerTokenFile: /t}]}", func(s v1alpha1.PrometheusServerSpec) any { return s.Alerting.Alertmanagers[0].BearerTokenFile }, "/t"},
		{"enableRemoteWriteReceiver", "enableRemoteWriteReceiver: true", func(s v1alpha1.PrometheusServerSpec) any { return s.EnableRemoteWriteReceiver }, true},
		{"remoteWriteReceiverMessageVersions", "{enableRemoteWriteReceiver: true, remoteWriteReceiverMessageVersions: [V2.0]}", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWriteReceiverMessageVersions },
			[]monitoringv1.RemoteWriteMessageVersion{monitoringv1.RemoteWriteMessageVersion2_0}},
		{"listenLocal", "listenLocal: true", func(s v1alpha1.PrometheusServerSpec) any { return s.ListenLocal }, true},
		{"disableCompaction", "disableCompaction: true", func(s v1alpha1.PrometheusServerSpec) any { return s.DisableCompaction }, true},
		{"scrapeNativeHistograms", "scrapeNativeHistograms: true", func(s v1alpha1.PrometheusServerSpec) any { return s.ScrapeNativeHistograms }, ptr.To(true)},
		{"remoteWrite[].messageVersion", "remoteWrite: [{url: 'http://a', messageVersion: V2.0}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].MessageVersion },
			ptr.To(monitoringv1.RemoteWriteMessageVersion2_0)},
		{"remoteWrite[].bearerTokenFile", "remoteWrite: [{url: 'http://a', bearerTokenFile: /t}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].BearerTokenFile }, "/t"},
		{"remoteWrite[].bearerToken", "remoteWrite: [{url: 'http://a', bearerToken: t}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].BearerToken }, "t"},
		{"remoteWrite[].sigv4", "remoteWrite: [{url: 'http://a', sigv4: {region: eu-west-1}}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].Sigv4 },
			&monitoringv1.Sigv4{Region: "eu-west-1"}},
		{"remoteWrite[].azureAd", "remoteWrite: [{url: 'http://a', azureAd: {cloud: AzurePublic}}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].AzureAD },
			&monitoringv1.AzureAD{Cloud: ptr.To("AzurePublic")}},
		{"remoteWrite[].roundRobinDNS", "remoteWrite: [{url: 'http://a', roundRobinDNS: true}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteWrite[0].RoundRobinDNS }, ptr.To(true)},
		{"alerting.alertmanagers[].sigv4", "alerting: {alertmanagers: [{name: am, port: web, sigv4: {profile: p}}]}", func(s v1alpha1.PrometheusServerSpec) any { return s.Alerting.Alertmanagers[0].Sigv4 },
			&monitoringv1.Sigv4{Profile: "p"}},
		{"remoteRead", "remoteRead: [{url: 'http://a', readRecent: true}]", func(s v1alpha1.PrometheusServerSpec) any { return s.RemoteRead },
			[]monitoringv1.RemoteReadSpec{{URL: "http://a", ReadRecent: true}}},
		{"tracingConfig", "tracingConfig: {endpoint: 'otel:4317'}", func(s v1alpha1.PrometheusServerSpec) any { return s.TracingConfig.Endpoint }, "otel:4317"},
		{"runtime", "runtime: {goGC: 50}", func(s v1alpha1.PrometheusServerSpec) any { return s.Runtime }, &monitoringv1.RuntimeConfig{GoGC: ptr.To[int32](50)}},
		{"otlp", "otlp: {promoteResourceAttributes: [a]}", func(s v1alpha1.PrometheusServerSpec) any { return s.OTLP },
			&monitoringv1.OTLPConfig{PromoteResourceAttributes: []string{"a"}}},
		{"queryLogFile", "queryLogFile: q.log", func(s v1alpha1.PrometheusServerSpec) any { return s.QueryLogFile }, "q.log"},
		{"scrapeFailureLogFile", "scrapeFailureLogFile: /f.log", func(s v1alpha1.PrometheusServerSpec) any { return s.ScrapeFailureLogFile }, ptr.To("/f.log")},
		{"podTargetLabels", "podTargetLabels: [team]", func(s v1alpha1.PrometheusServerSpec) any { return s.PodTargetLabels }, []string{"team"}},
		{"tsdb.staleSeriesCompactionThreshold", `tsdb: {staleSeriesCompactionThreshold: "0.5"}`, func(s v1alpha1.PrometheusServerSpec) any { return s.TSDB.StaleSeriesCompactionThreshold.String() }, "500m"},
		{"tsdb.chunkEncoding", "tsdb: {chunkEncoding: {floats: Xor2}}", func(s v1alpha1.PrometheusServerSpec) any { return s.TSDB.ChunkEncoding },
			&monitoringv1.ChunkEncodingSpec{Floats: ptr.To(monitoringv1.ChunkEncodingFloatsXor2)}},
		{"apiserverConfig", "apiserverConfig: {host: 'https://k8s:6443'}", func(s v1alpha1.PrometheusServerSpec) any { return s.APIServerConfig },
			&monitoringv1.APIServerConfig{Host: "https://k8s:6443"}},
		{"web.tlsConfig.certFile", "web: {tlsConfig: {certFile: /c, keySecret: {name: tls, key: key}}}", func(s v1alpha1.PrometheusServerSpec) any { return s.Web.TLSConfig.CertFile }, ptr.To("/c")},
		{"web.tlsConfig.clientCAFile", "web: {tlsConfig: {certFile: /c, keySecret: {name: tls, key: key}, clientCAFile: /ca}}", func(s v1alpha1.PrometheusServerSpec) any { return s.Web.TLSConfig.ClientCAFile }, ptr.To("/ca")},
		{"allowOverlappingBlocks", "allowOverlappingBlocks: true", func(s v1alpha1.PrometheusServerSpec) any { return s.AllowOverlappingBlocks }, true},
		{"enableOTLPReceiver", "enableOTLPReceiver: false", func(s v1alpha1.PrometheusServerSpec) any { return s.EnableOTLPReceiver }, ptr.To(false)},
		{"automountServiceAccountToken", "automountServiceAccountToken: false", func(s v1alpha1.PrometheusServerSpec) any {
			return []any{s.NoServiceAccountToken, s.Reloader.Source}
		}, []any{true, v1alpha1.SourceVolume}},
		{"serviceName", "serviceName: mine", func(s v1alpha1.PrometheusServerSpec) any { return s.ServiceName }, ptr.To("mine")},
		// The Thanos sidecar, as rendered (thanos_test.go).
		{"thanos.image", "thanos: {image: reg.example/thanos:x}", sidecarOf(func(c corev1.Container) any { return c.Image }), "reg.example/thanos:x"},
		{"thanos.version", "thanos: {version: v0.30.0}", sidecarOf(func(c corev1.Container) any { return c.Image }), "quay.io/thanos/thanos:v0.30.0"},
		{"thanos.baseImage", "thanos: {baseImage: reg.example/t, version: '0.40.0'}", sidecarOf(func(c corev1.Container) any { return c.Image }), "reg.example/t:0.40.0"},
		{"thanos.tag", "thanos: {baseImage: thanos, tag: x}", sidecarOf(func(c corev1.Container) any { return c.Image }), "docker.io/library/thanos:x"},
		{"thanos.sha", "thanos: {tag: x, sha: abc}", sidecarOf(func(c corev1.Container) any { return c.Image }), "quay.io/thanos/thanos@sha256:abc"},
		{"thanos.resources", "thanos: {resources: {limits: {cpu: '1'}}}", sidecarOf(func(c corev1.Container) any { return c.Resources.Limits.Cpu().String() }), "1"},
		{"thanos.objectStorageConfig", "thanos: {objectStorageConfig: {name: s, key: k}}", sidecarOf(func(c corev1.Container) any {
			return []any{withPrefix(c.Args, []string{"objstore", "tsdb"}), c.Env[0].ValueFrom.SecretKeyRef.Name, c.VolumeMounts[0].Name}
		}), []any{[]string{"--objstore.config=$(OBJSTORE_CONFIG)", "--tsdb.path=/prometheus"}, "s", "prometheus-k8s-db"}},
		{"thanos.objectStorageConfigFile", "thanos: {objectStorageConfigFile: /f}", sidecarArgs("objstore"), []string{"--objstore.config-file=/f"}},
		{"thanos.listenLocal", "thanos: {listenLocal: true}", sidecarArgs("grpc-address", "http-address"), []string{"--grpc-address=127.0.0.1:10901", "--http-address=127.0.0.1:10902"}},
		{"thanos.grpcListenLocal", "thanos: {grpcListenLocal: true}", sidecarArgs("grpc-address", "http-address"), []string{"--grpc-address=127.0.0.1:10901", "--http-address=:10902"}},
		{"thanos.httpListenLocal", "thanos: {httpListenLocal: true}", sidecarArgs("grpc-address", "http-address"), []string{"--grpc-address=:10901", "--http-address=127.0.0.1:10902"}},
		{"thanos.tracingConfig", "thanos: {tracingConfig: {name: t, key: k}}", sidecarArgs("tracing"), []string{"--tracing.config=$(TRACING_CONFIG)"}},
		{"thanos.tracingConfigFile", "thanos: {tracingConfigFile: /t, tracingConfig: {name: t, key: k}}", sidecarArgs("tracing"), []string{"--tracing.config-file=/t"}},
		{"thanos.grpcServerTlsConfig.certFile", "thanos: {grpcServerTlsConfig: {certFile: /c}}", sidecarArgs("grpc-server"), []string{"--grpc-server-tls-cert=/c"}},
		{"thanos.grpcServerTlsConfig.keyFile", "thanos: {grpcServerTlsConfig: {keyFile: /k}}", sidecarArgs("grpc-server"), []string{"--grpc-server-tls-key=/k"}},
		{"thanos.grpcServerTlsConfig.caFile", "thanos: {grpcServerTlsConfig: {caFile: /ca}}", sidecarArgs("grpc-server"), []string{"--grpc-server-tls-client-ca=/ca"}},
		{"thanos.grpcServerTlsConfig.minVersion", "thanos: {grpcServerTlsConfig: {minVersion: TLS13}}", sidecarArgs("grpc-server"), []string{"--grpc-server-tls-min-version=1.3"}},
		{"thanos.grpcServerTlsConfig.cipherSuites", "thanos: {grpcServerTlsConfig: {cipherSuites: [a, b]}}", sidecarArgs("grpc-server"), []string{"--grpc-server-tls-ciphers=a", "--grpc-server-tls-ciphers=b"}},
		{"thanos.grpcServerTlsConfig.curves", "thanos: {grpcServerTlsConfig: {curves: [X25519]}}", sidecarArgs("grpc-server"), []string{"--grpc-server-tls-curves=X25519"}},
		{"thanos.logLevel", "{logLevel: warn, thanos: {logLevel: debug}}", sidecarArgs("log.level"), []string{"--log.level=debug"}},
		{"thanos.logFormat", "{thanos: {logFormat: json}}", sidecarArgs("log.format"), []string{"--log.format=json"}},
		{"thanos.minTime", "thanos: {minTime: -2h}", sidecarArgs("min-time"), []string{"--min-time=-2h"}},
		{"thanos.blockSize", "{version: v3.8.0, thanos: {blockSize: 4h, objectStorageConfig: {name: s, key: k}}}", func(s v1alpha1.PrometheusServerSpec) any {
			_, p := sidecar(s)
			return withPrefix(p.Args, []string{"storage.tsdb.m"})
		}, []string{"--storage.tsdb.max-block-duration=4h", "--storage.tsdb.min-block-duration=4h"}},
		{"thanos.readyTimeout", "thanos: {readyTimeout: 5m}", sidecarArgs("prometheus.ready"), []string{"--prometheus.ready_timeout=5m"}},
		{"thanos.getConfigInterval", "thanos: {getConfigInterval: 1m}", sidecarArgs("prometheus.get_config"), []string{"--prometheus.get_config_interval=1m"}},
		{"thanos.getConfigTimeout", "thanos: {getConfigTimeout: 10s}", sidecarArgs("prometheus.get_config"), []string{"--prometheus.get_config_timeout=10s"}},
		{"thanos.volumeMounts", "thanos: {volumeMounts: [{name: v, mountPath: /v, readOnly: true}]}", sidecarOf(func(c corev1.Container) any { return c.VolumeMounts[0] }),
			corev1.VolumeMount{Name: "v", MountPath: "/v"}},
		{"thanos.additionalArgs", "thanos: {additionalArgs: [{name: a, value: b}]}", sidecarArgs("a"), []string{"--a=b"}},
	}
	tested := map[string]bool{}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			tested[c.path] = true
			server, unsupported := convert(t, c.spec)
			require.Empty(t, unsupported)
			require.Equal(t, c.want, c.got(server.Spec))
		})
	}
	// Carried beside the spec: the StatefulSets' retention is not the
	// render's (promserver's retain.go).
	t.Run("shardRetentionPolicy", func(t *testing.T) {
		tested["shardRetentionPolicy"] = true
		server, unsupported := convert(t, "shardRetentionPolicy: {whenScaled: Retain, retain: {retentionPeriod: 3d}}")
		require.Empty(t, unsupported)
		require.Equal(t, &monitoringv1.ShardRetentionPolicy{
			WhenScaled: ptr.To(monitoringv1.RetainWhenScaledRetentionType), Retain: &monitoringv1.RetainConfig{RetentionPeriod: "3d"},
		}, server.ShardRetention)
	})
	for _, f := range operatorFields() {
		if f.Class == takeover.ClassMapped {
			require.True(t, tested[f.Path], "%s: a mapped field without a case", f.Path)
		} else {
			require.False(t, tested[f.Path], "%s: a case of a field that is not mapped", f.Path)
		}
	}
}

// TestConvertDefaults: prometheus-operator's defaults where they differ
// from podreload's.
func TestConvertDefaults(t *testing.T) {
	server, unsupported := convert(t, "{}")
	require.Empty(t, unsupported)
	require.True(t, server.Layout.Operator())
	want := v1alpha1.PrometheusServerSpec{
		ServiceMonitorSelector: &metav1.LabelSelector{},
		Image:                  "quay.io/prometheus/prometheus:v3.13.1",
		Replicas:               ptr.To[int32](1),
		Shards:                 ptr.To[int32](1),
		Retention:              "24h",
		ScrapeInterval:         "30s",
		EvaluationInterval:     "30s",
		Reloader:               v1alpha1.ReloaderSpec{ReloadMethod: "http"},
		// No version, image, tag nor sha: never older than what runs.
		TakenOver: v1alpha1.TakenOver{DefaultBase: "quay.io/prometheus/prometheus"},
	}
	require.Equal(t, want, server.Spec, "securityContext and storage stay nil")

	for spec, want := range map[string][2]int32{ // replicas, shards
		"replicas: -2": {1, 1}, "replicas: 0": {0, 1}, "shards: -1": {1, 1}, "shards: 0": {1, 1}, "shards: 3": {1, 3},
	} {
		server, _ := convert(t, spec)
		require.Equal(t, want, [2]int32{*server.Spec.Replicas, *server.Spec.Shards}, spec)
	}
}

// TestConvertUnmanagedConfiguration: a Prometheus whose four monitor
// selectors are unset is taken over, its configuration Secret the user's
// (promserver.UserConfigured); any one selector set makes it ours.
func TestConvertUnmanagedConfiguration(t *testing.T) {
	p := testPrometheus()
	p.Spec.ServiceMonitorSelector = nil
	p.Spec.RuleSelector = &metav1.LabelSelector{}
	target, unsupported := FromPrometheus(p)
	require.Empty(t, unsupported)
	require.True(t, promserver.UserConfigured(target))

	for _, set := range []func(s *monitoringv1.PrometheusSpec){
		func(s *monitoringv1.PrometheusSpec) { s.ServiceMonitorSelector = &metav1.LabelSelector{} },
		func(s *monitoringv1.PrometheusSpec) { s.PodMonitorSelector = &metav1.LabelSelector{} },
		func(s *monitoringv1.PrometheusSpec) { s.ProbeSelector = &metav1.LabelSelector{} },
		func(s *monitoringv1.PrometheusSpec) { s.ScrapeConfigSelector = &metav1.LabelSelector{} },
	} {
		p := testPrometheus()
		p.Spec.ServiceMonitorSelector = nil
		set(&p.Spec)
		target, unsupported := FromPrometheus(p)
		require.Empty(t, unsupported)
		require.False(t, promserver.UserConfigured(target))
	}
}

// TestOperatorMajorVersions: prometheus-operator renders Prometheus 2 and 3
// (from v2.0.0, however old) and refuses the others by name.
func TestOperatorMajorVersions(t *testing.T) {
	for v, want := range map[string][]string{
		"v2.0.0": nil, "v2.7.0": nil, "v2.22.2": nil, "v3.14.0": nil,
		"v1.7.1": {"spec.version: Prometheus v1.7.1, and prometheus-operator renders Prometheus 2 and 3 only"},
		"v4.0.0": {"spec.version: Prometheus v4.0.0, and prometheus-operator renders Prometheus 2 and 3 only"},
		"0.9":    {"spec.version: Prometheus v0.9.0, and prometheus-operator renders Prometheus 2 and 3 only"},
	} {
		_, unsupported := convert(t, "version: '"+v+"'")
		require.Equal(t, want, unsupported, v)
	}
}

// TestOperatorImage: the image is composed as BuildImagePath does.
func TestOperatorImage(t *testing.T) {
	for _, c := range []struct {
		spec  string
		image string
		ok    bool
	}{
		{"{}", "quay.io/prometheus/prometheus:v3.13.1", true},
		{"version: v3.5.0", "quay.io/prometheus/prometheus:v3.5.0", true},
		{"version: '3.5'", "quay.io/prometheus/prometheus:v3.5.0", true},
		{"version: v03.05.01", "quay.io/prometheus/prometheus:v3.5.1", true},
		{"version: v3.14.0-distroless", "quay.io/prometheus/prometheus:v3.14.0-distroless", true},
		{"{image: ' ', version: v3.1.0}", "quay.io/prometheus/prometheus:v3.1.0", true},
		{"{image: reg/p:1, version: v3.1.0}", "reg/p:1", true},
		{"{baseImage: 'localhost:5000/p', version: v3.1.0}", "localhost:5000/p:v3.1.0", true},
		{"{baseImage: 'reg/p:pinned', tag: t, version: v3.1.0}", "reg/p:pinned", true},
		{"{baseImage: 'reg/p@sha256:00', sha: ff}", "reg/p@sha256:00", true},
		{"{baseImage: reg/p, tag: t, sha: ff}", "reg/p@sha256:ff", true},
		{"{baseImage: reg/p, tag: t, version: v3.0.0}", "reg/p:t", true},
		{"version: latest", "", false},
		{"version: '3-rc'", "", false},
		{"{image: reg/p:1, version: banana}", "reg/p:1", false},
	} {
		server, unsupported := convert(t, c.spec)
		if !c.ok {
			require.Equal(t, []string{"version"}, unsupported, c.spec)
			continue
		}
		require.Empty(t, unsupported, c.spec)
		require.Equal(t, c.image, server.Spec.Image, c.spec)
	}
}
