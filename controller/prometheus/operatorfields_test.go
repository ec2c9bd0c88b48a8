package prometheus

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// specFields lists the fields of the struct type t by JSON path under
// prefix, inlined fields flattened, with their types.
func specFields(t reflect.Type, prefix string) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		switch {
		case tag == "-" || !sf.IsExported():
		case tag == "" && sf.Anonymous:
			for p, ft := range specFields(sf.Type, prefix) {
				out[p] = ft
			}
		default:
			out[prefix+tag] = sf.Type
		}
	}
	return out
}

// structOf is t without pointers, and the item type of a list: the
// struct whose fields rows below path classify.
func structOf(t reflect.Type) (reflect.Type, bool) {
	list := false
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		list = list || t.Kind() == reflect.Slice
		t = t.Elem()
	}
	return t, list
}

// TestOperatorFieldsCoverTheSpec fails when a field of the pinned
// PrometheusSpec has no row (an upgrade of the types added one), when a
// row names a field that does not exist, or when a row is under another.
func TestOperatorFieldsCoverTheSpec(t *testing.T) {
	rows := map[string]bool{}
	for _, f := range operatorFields() {
		require.False(t, rows[f.path], "%s: two rows", f.path)
		rows[f.path] = false
		require.NotEmpty(t, f.note, "%s: no note", f.path)
		require.Contains(t, []fieldClass{fieldMapped, fieldIgnored, fieldRefused}, f.class, f.path)
		require.True(t, f.accepts == nil || f.class == fieldRefused, "%s: accepts on a row that is not refused", f.path)
	}
	var missing []string
	var walk func(t reflect.Type, prefix string)
	walk = func(typ reflect.Type, prefix string) {
		for p, ft := range specFields(typ, prefix) {
			if _, ok := rows[p]; ok {
				rows[p] = true
				continue
			}
			st, list := structOf(ft)
			below := p + "."
			if list {
				below = p + "[]."
			}
			expanded := st.Kind() == reflect.Struct && slices.ContainsFunc(operatorFields(), func(f operatorField) bool {
				return strings.HasPrefix(f.path, below)
			})
			if !expanded {
				missing = append(missing, p)
				continue
			}
			walk(st, below)
		}
	}
	walk(reflect.TypeFor[monitoringv1.PrometheusSpec](), "")
	slices.Sort(missing)
	require.Empty(t, missing, "fields of monitoringv1.PrometheusSpec without a row in operatorFields: classify them")
	var unknown []string
	for p, seen := range rows {
		if !seen {
			unknown = append(unknown, p)
		}
	}
	slices.Sort(unknown)
	require.Empty(t, unknown, "rows of operatorFields naming no field of monitoringv1.PrometheusSpec (or under a row that covers them)")
}

// TestOperatorFieldsCoverageFails shows the coverage walk catches a field
// without a row: the walk of a spec with one more field reports it.
func TestOperatorFieldsCoverageFails(t *testing.T) {
	type grown struct {
		monitoringv1.PrometheusSpec `json:",inline"`
		NewField                    string `json:"newField,omitempty"`
	}
	fields := specFields(reflect.TypeFor[grown](), "")
	require.Contains(t, fields, "newField")
	require.Contains(t, fields, "scrapeInterval", "inlined fields are flattened")
	require.NotContains(t, fields, "", "the inlined struct is no field of its own")
}

// TestOperatorFieldMatrix checks docs/prometheus-operator.md is the
// rendering of the table (-update rewrites it).
func TestOperatorFieldMatrix(t *testing.T) {
	golden(t, "../../docs/prometheus-operator.md", []byte(fieldMatrix()))
}

// fieldMatrix renders docs/prometheus-operator.md from operatorFields.
func fieldMatrix() string {
	var b strings.Builder
	b.WriteString(`# prometheus-operator's Prometheus fields in a takeover

<!-- Generated from controller/prometheus/operatorfields.go by
     go test ./controller/prometheus/ -run TestOperatorFieldMatrix -update -->

What podreload does with each field of a ` + "`monitoring.coreos.com/v1` `Prometheus`" + `
(prometheus-operator's types at v0.94.1, go.mod) when it takes the object
over ([takeover.md](takeover.md)):

- **mapped**: carried into the PrometheusServer the object is rendered as,
  with prometheus-operator's meaning and defaults;
- **ignored**: accepted, and changes nothing podreload renders;
- **refused**: an object that sets the field (to a value other than those
  the reason accepts) is not taken over; the paths of every such field,
  sorted, are the ` + "`UnsupportedFields`" + ` message. A refused field is never
  silently dropped.

A path with ` + "`[]`" + ` classifies the items of a list field by field; a row
covers the field and everything under it. A test walks the Go types and
fails when a field has no row, so a new field of the next version cannot
be dropped unnoticed.

Two refusals are not of one field:

- a ` + "`version`" + ` that is not a version (prometheus-operator parses it
  tolerantly, as ` + "`v3.5`" + ` for ` + "`v3.5.0`" + `, and fails on anything else);
- an object whose ` + "`serviceMonitorSelector`, `podMonitorSelector`, `probeSelector`" + `
  and ` + "`scrapeConfigSelector`" + ` are all unset: prometheus-operator then
  leaves the configuration Secret to the user and never writes it; a
  takeover would overwrite it.

`)
	counts := map[fieldClass]int{}
	for _, f := range operatorFields() {
		counts[f.class]++
	}
	fmt.Fprintf(&b, "%d fields: %d mapped, %d ignored, %d refused.\n\n", len(operatorFields()), counts[fieldMapped], counts[fieldIgnored], counts[fieldRefused])
	b.WriteString("| field | class | maps to, or why |\n|---|---|---|\n")
	rows := operatorFields()
	slices.SortStableFunc(rows, func(a, b operatorField) int { return strings.Compare(a.path, b.path) })
	for _, f := range rows {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", f.path, f.class, f.note)
	}
	return b.String()
}

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
func convert(t *testing.T, spec string) (*v1alpha1.PrometheusServer, []string) {
	t.Helper()
	p := testPrometheus()
	require.NoError(t, yaml.UnmarshalStrict([]byte(spec), &p.Spec))
	return fromPrometheus(p)
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
		{"hostUsers", "hostUsers: false", func(s v1alpha1.PrometheusServerSpec) any { return s.HostUsers }, ptr.To(false)},
		{"terminationGracePeriodSeconds", "terminationGracePeriodSeconds: 60", func(s v1alpha1.PrometheusServerSpec) any { return s.TerminationGracePeriodSeconds }, ptr.To[int64](60)},
		{"secrets", "secrets: [etcd-certs]", func(s v1alpha1.PrometheusServerSpec) any { return s.Secrets }, []string{"etcd-certs"}},
		{"configMaps", "configMaps: [ca]", func(s v1alpha1.PrometheusServerSpec) any { return s.ConfigMaps }, []string{"ca"}},
		{"volumes", "volumes: [{name: extra, emptyDir: {}}]", func(s v1alpha1.PrometheusServerSpec) any { return s.Volumes },
			[]corev1.Volume{{Name: "extra", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
		{"volumeMounts", "volumeMounts: [{name: extra, mountPath: /extra}]", func(s v1alpha1.PrometheusServerSpec) any { return s.VolumeMounts },
			[]corev1.VolumeMount{{Name: "extra", MountPath: "/extra"}}},
		{"evaluationInterval", "evaluationInterval: 1m", func(s v1alpha1.PrometheusServerSpec) any { return s.EvaluationInterval }, monitoringv1.Duration("1m")},
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
	for _, f := range operatorFields() {
		if f.class == fieldMapped {
			require.True(t, tested[f.path], "%s: a mapped field without a case", f.path)
		} else {
			require.False(t, tested[f.path], "%s: a case of a field that is not mapped", f.path)
		}
	}
}

// TestConvertDefaults: prometheus-operator's defaults where they differ
// from podreload's.
func TestConvertDefaults(t *testing.T) {
	server, unsupported := convert(t, "{}")
	require.Empty(t, unsupported)
	require.True(t, operatorLayout(server))
	want := v1alpha1.PrometheusServerSpec{
		ServiceMonitorSelector: &metav1.LabelSelector{},
		Image:                  "quay.io/prometheus/prometheus:v3.13.1",
		Replicas:               ptr.To[int32](1),
		Shards:                 ptr.To[int32](1),
		Retention:              "24h",
		ScrapeInterval:         "30s",
		EvaluationInterval:     "30s",
		Reloader:               v1alpha1.ReloaderSpec{ReloadMethod: "http"},
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
// selectors are unset has a configuration prometheus-operator never
// writes: it is not taken over; any one selector set is enough.
func TestConvertUnmanagedConfiguration(t *testing.T) {
	p := testPrometheus()
	p.Spec.ServiceMonitorSelector = nil
	p.Spec.RuleSelector = &metav1.LabelSelector{}
	_, unsupported := fromPrometheus(p)
	require.Equal(t, []string{unmanagedConfiguration}, unsupported)

	p.Spec.Thanos = &monitoringv1.ThanosSpec{}
	_, unsupported = fromPrometheus(p)
	require.Equal(t, []string{unmanagedConfiguration, "thanos"}, unsupported, "sorted")

	for _, set := range []func(s *monitoringv1.PrometheusSpec){
		func(s *monitoringv1.PrometheusSpec) { s.ServiceMonitorSelector = &metav1.LabelSelector{} },
		func(s *monitoringv1.PrometheusSpec) { s.PodMonitorSelector = &metav1.LabelSelector{} },
		func(s *monitoringv1.PrometheusSpec) { s.ProbeSelector = &metav1.LabelSelector{} },
		func(s *monitoringv1.PrometheusSpec) { s.ScrapeConfigSelector = &metav1.LabelSelector{} },
	} {
		p := testPrometheus()
		p.Spec.ServiceMonitorSelector = nil
		set(&p.Spec)
		_, unsupported := fromPrometheus(p)
		require.Empty(t, unsupported)
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

// acceptedValues are values of refused fields that are taken over.
func acceptedValues() map[string][]string {
	return map[string][]string{
		"shardingStrategy":             {`{}`, `{"mode": "Address"}`},
		"replicaExternalLabelName":     {`"prometheus_replica"`},
		"prometheusExternalLabelName":  {`"prometheus"`},
		"enableOTLPReceiver":           {`false`},
		"storage.disableMountSubPath":  {`false`},
		"web.tlsConfig.clientAuthType": {`"NoClientCert"`, `"RequestClientCert"`, `"VerifyClientCertIfGiven"`},
		"automountServiceAccountToken": {`true`},
		"remoteWrite[].remoteTimeout":  {`"30s"`, `"30000ms"`},
		"listenLocal":                  {`false`},
		"podManagementPolicy":          {`"Parallel"`},
		"arbitraryFSAccessThroughSMs":  {`{"deny": false}`},
		"overrideHonorLabels":          {`false`},
		"overrideHonorTimestamps":      {`false`},
		"ignoreNamespaceSelectors":     {`false`},
		"minReadySeconds":              {`0`},
		"hostNetwork":                  {`false`},
		"serviceDiscoveryRole":         {`"Endpoints"`},
		"tsdb.outOfOrderTimeWindow":    {`"0s"`, `"0m"`},
		"shardRetentionPolicy":         {`{}`, `{"whenScaled": "Delete"}`},
		"disableCompaction":            {`false`},
		"allowOverlappingBlocks":       {`false`},
		"enableAdminAPI":               {`false`},
	}
}

// refusedValues are values that refuse a field where the generic filler's
// would be accepted.
func refusedValues() map[string]string {
	return map[string]string{
		"automountServiceAccountToken": `false`,
		"shardRetentionPolicy":         `{"whenScaled": "Retain"}`,
		"remoteWrite[].remoteTimeout":  `"1m"`,
		"tsdb.outOfOrderTimeWindow":    `"5m"`,
	}
}

// setPath sets the field at path in spec (a pointer to a PrometheusSpec)
// to value (JSON), or to a non-zero value of its type when value is
// empty; a list on the way gets one item.
func setPath(t *testing.T, spec reflect.Value, path, value string) {
	t.Helper()
	v := spec.Elem()
	segs := strings.Split(path, ".")
	for i, seg := range segs {
		f, ok := jsonField(v, strings.TrimSuffix(seg, "[]"))
		require.True(t, ok, "%s: no field %s", path, seg)
		if i == len(segs)-1 {
			if value != "" {
				require.NoError(t, json.Unmarshal([]byte(value), f.Addr().Interface()), path)
			} else {
				fill(f)
			}
			return
		}
		if strings.HasSuffix(seg, "[]") {
			if f.Len() == 0 {
				f.Set(reflect.Append(f, reflect.New(f.Type().Elem()).Elem()))
			}
			f = f.Index(0)
		}
		if f.Kind() == reflect.Pointer {
			if f.IsNil() {
				f.Set(reflect.New(f.Type().Elem()))
			}
			f = f.Elem()
		}
		v = f
	}
}

// fill sets v to a non-zero value of its type.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Slice:
		item := reflect.New(v.Type().Elem()).Elem()
		fill(item)
		v.Set(reflect.Append(reflect.MakeSlice(v.Type(), 0, 1), item))
	case reflect.Map:
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		v.Set(reflect.MakeMap(v.Type()))
		v.SetMapIndex(k, e)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
				return
			}
		}
	}
}

// TestConvertRefusedFields: a Prometheus setting one refused field lists
// exactly its path; one setting it to an accepted value lists nothing.
func TestConvertRefusedFields(t *testing.T) {
	for _, f := range operatorFields() {
		if f.class != fieldRefused {
			continue
		}
		t.Run(f.path, func(t *testing.T) {
			p := testPrometheus()
			setPath(t, reflect.ValueOf(&p.Spec), f.path, refusedValues()[f.path])
			_, unsupported := fromPrometheus(p)
			require.Equal(t, []string{f.path}, unsupported)

			ok := acceptedValues()[f.path]
			require.Equal(t, f.accepts != nil, len(ok) > 0, "a field with accepted values has an example of each, and only those")
			for _, v := range ok {
				p := testPrometheus()
				setPath(t, reflect.ValueOf(&p.Spec), f.path, v)
				_, unsupported := fromPrometheus(p)
				require.Empty(t, unsupported, v)
			}
		})
	}
	for path := range acceptedValues() {
		require.True(t, slices.ContainsFunc(operatorFields(), func(f operatorField) bool { return f.path == path && f.accepts != nil }), path)
	}
}

// TestConvertUnsupportedSorted: several refused fields, some in several
// list items, are listed sorted, each once; zero values are not listed.
func TestConvertUnsupportedSorted(t *testing.T) {
	_, unsupported := convert(t, `
thanos: {}
remoteWrite:
- {url: 'http://a', queueConfig: {capacity: 10}}
- {url: 'http://b', queueConfig: {capacity: 20}, headers: {a: b}}
- {url: 'http://c', sendExemplars: false}
alerting: {alertmanagers: [{name: am, port: web, timeout: 10s}]}
listenLocal: false
secrets: []
hostAliases: []
enableAdminAPI: true
`)
	require.Equal(t, []string{
		"alerting.alertmanagers[].timeout",
		"enableAdminAPI",
		"remoteWrite[].headers",
		"remoteWrite[].queueConfig",
		"remoteWrite[].sendExemplars",
		"thanos",
	}, unsupported)
}

// TestConvertKubePrometheusStack: kube-prometheus-stack's default
// Prometheus is taken over, with the values it sets.
func TestConvertKubePrometheusStack(t *testing.T) {
	data, err := os.ReadFile("testdata/operator/kube-prometheus-stack.yaml")
	require.NoError(t, err)
	p := &monitoringv1.Prometheus{}
	require.NoError(t, yaml.UnmarshalStrict(data, p))
	server, unsupported := fromPrometheus(p)
	require.Empty(t, unsupported)
	require.Equal(t, "kps-kube-prometheus-stack-prometheus", server.Name)
	require.Equal(t, "monitoring", server.Namespace)
	require.True(t, operatorLayout(server))

	release := &metav1.LabelSelector{MatchLabels: map[string]string{"release": "kps"}}
	want := v1alpha1.PrometheusServerSpec{
		Image:           "quay.io/prometheus/prometheus:v3.14.0-distroless",
		Version:         "v3.14.0-distroless",
		ImagePullPolicy: corev1.PullIfNotPresent,
		Replicas:        ptr.To[int32](1),
		Shards:          ptr.To[int32](1),
		Alerting: &v1alpha1.AlertingSpec{Alertmanagers: []v1alpha1.AlertmanagerEndpoint{{
			Namespace: "monitoring", Name: "kps-kube-prometheus-stack-alertmanager",
			Port: intstr.FromString("http-web"), PathPrefix: "/", APIVersion: "v2",
		}}},
		ExternalURL:                     "http://kps-kube-prometheus-stack-prometheus.monitoring:9090",
		LogLevel:                        "info",
		LogFormat:                       "logfmt",
		Retention:                       "10d",
		WALCompression:                  ptr.To(true),
		RoutePrefix:                     "/",
		ServiceAccountName:              "kps-kube-prometheus-stack-prometheus",
		ServiceMonitorSelector:          release,
		ServiceMonitorNamespaceSelector: &metav1.LabelSelector{},
		PodMonitorSelector:              release,
		PodMonitorNamespaceSelector:     &metav1.LabelSelector{},
		ProbeSelector:                   release,
		ProbeNamespaceSelector:          &metav1.LabelSelector{},
		ScrapeConfigSelector:            release,
		ScrapeConfigNamespaceSelector:   &metav1.LabelSelector{},
		RuleSelector:                    release,
		RuleNamespaceSelector:           &metav1.LabelSelector{},
		SecurityContext: &corev1.PodSecurityContext{
			FSGroup: ptr.To[int64](2000), RunAsGroup: ptr.To[int64](2000), RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100,
				PodAffinityTerm: corev1.PodAffinityTerm{
					TopologyKey: "kubernetes.io/hostname",
					LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: "app.kubernetes.io/name", Operator: metav1.LabelSelectorOpIn, Values: []string{"prometheus"}},
						{Key: "app.kubernetes.io/instance", Operator: metav1.LabelSelectorOpIn, Values: []string{"kps-kube-prometheus-stack-prometheus"}},
					}},
				},
			}},
		}},
		PortName:           "http-web",
		ScrapeInterval:     "30s",
		EvaluationInterval: "30s",
		Reloader:           v1alpha1.ReloaderSpec{ReloadMethod: "http"},
	}
	require.Equal(t, want, server.Spec)

	// And it renders: a configuration promtool accepts, the pods on port
	// http-web with kube-prometheus-stack's security context.
	promtool, err := toolbin.Path("promtool")
	require.NoError(t, err)
	in := inputs{Server: server, Namespaces: map[string]labels.Set{"monitoring": {}}}
	out, err := render(in, testOptions(), nil)
	require.NoError(t, err)
	checkConfig(t, promtool, checkObjects(t, in, testOptions(), out))
	pod := out.StatefulSets[0].Spec.Template.Spec
	require.Equal(t, want.SecurityContext, pod.SecurityContext)
	require.Equal(t, "http-web", pod.Containers[0].Ports[0].Name)
}

// TestOperatorWorkloadFields: the fields added for the takeover are
// rendered, and a taken-over object without a securityContext gets none
// (a PrometheusServer without one gets podreload's default).
func TestOperatorWorkloadFields(t *testing.T) {
	server := testServer()
	_, sts := renderWorkload(server, testOptions())
	require.Equal(t, podSecurity(), sts.Spec.Template.Spec.SecurityContext)

	p := testPrometheus()
	p.Spec.PortName = "http-web"
	p.Spec.ImagePullPolicy = corev1.PullIfNotPresent
	server, unsupported := fromPrometheus(p)
	require.Empty(t, unsupported)
	svc, sts := renderWorkload(server, testOptions())
	pod := sts.Spec.Template.Spec
	require.Nil(t, pod.SecurityContext)

	server.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}
	_, withSC := renderWorkload(server, testOptions())
	require.Equal(t, server.Spec.SecurityContext, withSC.Spec.Template.Spec.SecurityContext)

	require.Len(t, pod.InitContainers, 1)
	require.Len(t, pod.Containers, 2)
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
		require.Equal(t, corev1.PullIfNotPresent, c.ImagePullPolicy, c.Name)
	}
	prom := pod.Containers[0]
	require.Equal(t, "prometheus", prom.Name)
	require.Equal(t, []corev1.ContainerPort{{Name: "http-web", ContainerPort: webPort, Protocol: corev1.ProtocolTCP}}, prom.Ports)
	require.Equal(t, intstr.FromString("http-web"), prom.ReadinessProbe.HTTPGet.Port)
	require.Equal(t, intstr.FromString("http-web"), prom.LivenessProbe.HTTPGet.Port)
	require.Equal(t, "http-web", svc.Spec.Ports[0].Name)
	require.Equal(t, intstr.FromString("http-web"), svc.Spec.Ports[0].TargetPort)
}

// TestOperatorPodFields: the pod fields a takeover carries are rendered
// as prometheus-operator renders them.
func TestOperatorPodFields(t *testing.T) {
	server, unsupported := convert(t, `
schedulerName: sched
dnsPolicy: None
dnsConfig: {nameservers: [10.0.0.10], searches: [svc.local], options: [{name: ndots, value: "2"}]}
hostAliases: [{ip: 10.0.0.1, hostnames: [a, b]}]
enableServiceLinks: false
hostUsers: false
terminationGracePeriodSeconds: 60
secrets: [etcd-certs, Odd_Name]
configMaps: [ca]
volumes: [{name: extra, emptyDir: {}}]
volumeMounts: [{name: extra, mountPath: /extra}]
`)
	require.Empty(t, unsupported)
	_, sts := renderWorkload(server, testOptions())
	pod := sts.Spec.Template.Spec
	require.Equal(t, "sched", pod.SchedulerName)
	require.Equal(t, corev1.DNSNone, pod.DNSPolicy)
	require.Equal(t, &corev1.PodDNSConfig{
		Nameservers: []string{"10.0.0.10"}, Searches: []string{"svc.local"},
		Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}},
	}, pod.DNSConfig)
	require.Equal(t, []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"a", "b"}}}, pod.HostAliases)
	require.Equal(t, ptr.To(false), pod.EnableServiceLinks)
	require.Equal(t, ptr.To(false), pod.HostUsers)
	require.Equal(t, ptr.To[int64](60), pod.TerminationGracePeriodSeconds)

	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	require.Equal(t, corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}, volumes["extra"].VolumeSource)
	require.Equal(t, corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "etcd-certs"}}, volumes["secret-etcd-certs"].VolumeSource)
	require.Equal(t, corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "Odd_Name"}}, volumes["secret-odd-name"].VolumeSource)
	require.Equal(t, corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "ca"}}}, volumes["configmap-ca"].VolumeSource)
	prom := pod.Containers[0]
	require.Equal(t, "prometheus", prom.Name)
	require.Equal(t, []corev1.VolumeMount{
		{Name: "extra", MountPath: "/extra"},
		{Name: "secret-etcd-certs", ReadOnly: true, MountPath: "/etc/prometheus/secrets/etcd-certs"},
		{Name: "secret-odd-name", ReadOnly: true, MountPath: "/etc/prometheus/secrets/Odd_Name"},
		{Name: "configmap-ca", ReadOnly: true, MountPath: "/etc/prometheus/configmaps/ca"},
	}, prom.VolumeMounts[2:6], "after config-out and the data volume")
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers[1:]) {
		for _, m := range c.VolumeMounts {
			require.NotEqual(t, "extra", m.Name, "only Prometheus mounts them")
		}
	}

	// Unset, the defaults stay.
	server, _ = convert(t, "{}")
	_, sts = renderWorkload(server, testOptions())
	pod = sts.Spec.Template.Spec
	require.Equal(t, ptr.To[int64](600), pod.TerminationGracePeriodSeconds)
	require.Empty(t, pod.SchedulerName)
	require.Empty(t, pod.DNSPolicy)
	require.Nil(t, pod.DNSConfig)
	require.Nil(t, pod.HostAliases)
	require.Nil(t, pod.EnableServiceLinks)
	require.Nil(t, pod.HostUsers)
}

// TestRenderRefusesPodVolumes: a volume name used twice, a mount of a
// volume that does not exist, a path mounted twice, a Secret whose
// volume name cannot be a label: render refuses the spec with the field
// and the cause, as the API server would refuse the StatefulSet.
func TestRenderRefusesPodVolumes(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(s *v1alpha1.PrometheusServerSpec)
		err  string
	}{
		{"twice", func(s *v1alpha1.PrometheusServerSpec) {
			s.Secrets = []string{"a"}
			s.Volumes = []corev1.Volume{{Name: "secret-a", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}, `spec.volumes, spec.secrets (volume secret-<name>) and spec.configMaps (configmap-<name>): volume "secret-a" is used twice in the pod (by these fields and the controller's own volumes)`},
		{"controller's", func(s *v1alpha1.PrometheusServerSpec) {
			s.Volumes = []corev1.Volume{{Name: "config-out", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}, `spec.volumes, spec.secrets (volume secret-<name>) and spec.configMaps (configmap-<name>): volume "config-out" is used twice in the pod (by these fields and the controller's own volumes)`},
		{"no volume", func(s *v1alpha1.PrometheusServerSpec) {
			s.VolumeMounts = []corev1.VolumeMount{{Name: "nope", MountPath: "/x"}}
		}, `spec.volumeMounts: volume "nope" is no volume of the pod`},
		{"path twice", func(s *v1alpha1.PrometheusServerSpec) {
			s.Volumes = []corev1.Volume{{Name: "x", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			s.VolumeMounts = []corev1.VolumeMount{{Name: "x", MountPath: "/prometheus"}}
		}, `spec.volumeMounts: /prometheus is mounted twice in container prometheus`},
		{"not a label", func(s *v1alpha1.PrometheusServerSpec) {
			s.ConfigMaps = []string{strings.Repeat("a", 52) + ".b"} // Cut to 63 characters, the label ends with "-".
		}, `spec.volumes, spec.secrets (volume secret-<name>) and spec.configMaps (configmap-<name>): volume "configmap-` + strings.Repeat("a", 52) + `-": a lowercase RFC 1123 label must consist of`},
	} {
		t.Run(c.name, func(t *testing.T) {
			server := testServer()
			c.set(&server.Spec)
			_, err := render(inputs{Server: server}, testOptions(), nil)
			require.Error(t, err)
			require.True(t, strings.HasPrefix(err.Error(), c.err), "%v", err)
		})
	}
}
