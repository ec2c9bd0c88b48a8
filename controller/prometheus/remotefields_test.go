package prometheus

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/store"
)

// renderSpec converts testPrometheus with the YAML spec merged in and
// renders it with the Secrets secrets (by name, in its namespace, their
// keys and values), as the takeover does.
func renderSpec(t *testing.T, spec string, secrets map[string]map[string]string) (*promserver.Objects, error) {
	t.Helper()
	server, unsupported := convert(t, spec)
	require.Empty(t, unsupported)
	in := promserver.Inputs{
		Server: server.PrometheusServer, Layout: server.Layout,
		Namespaces: map[string]labels.Set{"monitoring": {}}, Secrets: map[string]*corev1.Secret{},
	}
	for name, data := range secrets {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: name}, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		in.Secrets["monitoring/"+name] = s
	}
	return promserver.Render(in, testOptions(), nil)
}

// TestRenderRefusesRemoteFields: a field this file's rows map, set to
// something prometheus-operator refuses, or Prometheus would, or
// referencing a Secret that is missing or lacks the key, refuses the spec
// with the field and the cause (Sync makes any error of Render
// InvalidSpec: the last configuration stays); the Secrets looked up are in
// the error, so that creating or fixing one renders the spec again.
func TestRenderRefusesRemoteFields(t *testing.T) {
	aws := map[string]map[string]string{"aws": {"access": "AKIA"}}
	for _, c := range []struct {
		name, spec string
		secrets    map[string]map[string]string
		err        string
		refs       []string
	}{
		{"remote write sigv4 key missing", `remoteWrite: [{url: 'https://a', sigv4: {accessKey: {name: aws, key: access}, secretKey: {name: aws, key: secret}}}]`, aws,
			`render config: spec.remoteWrite[0].sigv4.secretKey: secret "monitoring/aws" has no key "secret"`, []string{"aws"}},
		{"remote write sigv4 Secret missing", `remoteWrite: [{url: 'https://a', sigv4: {accessKey: {name: nope, key: access}, secretKey: {name: nope, key: secret}}}]`, nil,
			`render config: spec.remoteWrite[0].sigv4.accessKey: secret "monitoring/nope" not found (looking for key "access")`, []string{"nope"}},
		{"remote write sigv4 half the keys", `remoteWrite: [{url: 'https://a', sigv4: {accessKey: {name: aws, key: access}}}]`, aws,
			`render config: spec.remoteWrite[0].sigv4: accessKey and secretKey must be set together`, nil},
		{"remote write sigv4 and basic auth", `remoteWrite: [{url: 'https://a', sigv4: {}, basicAuth: {username: {name: aws, key: access}}}]`, aws,
			`render config: spec.remoteWrite[0]: basicAuth and sigv4 are mutually exclusive`, nil},
		{"remote write azure secret missing", `remoteWrite: [{url: 'https://a', azureAd: {oauth: {clientId: 00000000-0000-0000-0000-000000000001, tenantId: t, clientSecret: {name: azure, key: secret}}}}]`, nil,
			`render config: spec.remoteWrite[0].azureAd.oauth.clientSecret: secret "monitoring/azure" not found (looking for key "secret")`, []string{"azure"}},
		{"remote write azure oauth before 2.48", `{version: v2.47.0, remoteWrite: [{url: 'https://a', azureAd: {oauth: {clientId: 00000000-0000-0000-0000-000000000001, tenantId: t, clientSecret: {name: azure, key: secret}}}}]}`, nil,
			`render config: spec.remoteWrite[0].azureAd: oauth: requires Prometheus 2.48 or later`, nil},
		{"remote write azure client id", `remoteWrite: [{url: 'https://a', azureAd: {oauth: {clientId: me, tenantId: t, clientSecret: {name: azure, key: secret}}}}]`, nil,
			`render config: spec.remoteWrite[0].azureAd: oauth.clientId: "me" is not a UUID`, nil},
		{"remote write azure two ways", `remoteWrite: [{url: 'https://a', azureAd: {managedIdentity: {clientId: x}, sdk: {}}}]`, nil,
			`render config: spec.remoteWrite[0].azureAd: managedIdentity and sdk are mutually exclusive`, nil},
		{"remote write azure no way", `remoteWrite: [{url: 'https://a', azureAd: {cloud: AzurePublic}}]`, nil,
			`render config: spec.remoteWrite[0].azureAd: one of managedIdentity, oauth, sdk and workloadIdentity must be set`, nil},
		{"remote write azure managed identity without client id before 3.5", `{version: v3.4.0, remoteWrite: [{url: 'https://a', azureAd: {managedIdentity: {clientId: ""}}}]}`, nil,
			`render config: spec.remoteWrite[0].azureAd: managedIdentity.clientId: must be set before Prometheus 3.5`, nil},
		{"remote write authorization before 2.26", `{version: v2.25.0, remoteWrite: [{url: 'https://a', authorization: {credentialsFile: /t}}]}`, nil,
			`render config: spec.remoteWrite[0].authorization: requires Prometheus 2.26 or later`, nil},
		{"alertmanager sigv4 key missing", `alerting: {alertmanagers: [{name: am, port: web, sigv4: {accessKey: {name: aws, key: other}, secretKey: {name: aws, key: access}}}]}`, aws,
			`render config: spec.alerting.alertmanagers[0].sigv4.accessKey: secret "monitoring/aws" has no key "other"`, []string{"aws"}},
		{"alertmanager sigv4 and authorization", `alerting: {alertmanagers: [{name: am, port: web, sigv4: {}, authorization: {credentials: {name: aws, key: access}}}]}`, aws,
			`render config: spec.alerting.alertmanagers[0]: authorization and sigv4 are mutually exclusive`, nil},
		{"remote read basic auth Secret missing", `remoteRead: [{url: 'https://a', basicAuth: {username: {name: rr, key: user}, password: {name: rr, key: password}}}]`, nil,
			`render config: spec.remoteRead[0].basicAuth: secret "monitoring/rr" not found (looking for key "user")`, []string{"rr"}},
		{"remote read URL", `remoteRead: [{url: 'ftp://a'}]`, nil,
			`render config: spec.remoteRead[0].url: "ftp://a" is not an http or https URL`, nil},
		{"remote read name twice", `remoteRead: [{url: 'https://a', name: x}, {url: 'https://b', name: x}]`, nil,
			`render config: spec.remoteRead[1].name: "x" is used twice`, nil},
		{"remote read authorization before 2.26", `{version: v2.25.0, remoteRead: [{url: 'https://a', authorization: {credentials: {name: rr, key: t}}}]}`, nil,
			`render config: spec.remoteRead[0].authorization: requires Prometheus 2.26 or later`, nil},
		{"tracing CA Secret missing", `tracingConfig: {endpoint: 'otel:4317', tlsConfig: {ca: {secret: {name: otel, key: ca.crt}}}}`, nil,
			`render config: spec.tracingConfig.tlsConfig.ca: secret "monitoring/otel" not found (looking for key "ca.crt")`, []string{"otel"}},
		{"tracing sampling fraction", `tracingConfig: {endpoint: 'otel:4317', samplingFraction: "2"}`, nil,
			`render config: spec.tracingConfig.samplingFraction: 2 is not between 0 and 1`, nil},
		{"tracing compression", `tracingConfig: {endpoint: 'otel:4317', compression: zstd}`, nil,
			`render config: spec.tracingConfig.compression: "zstd" is not gzip`, nil},
		{"otlp before 2.55", `{version: v2.54.1, otlp: {promoteResourceAttributes: [a]}}`, nil,
			`render config: spec.otlp: requires Prometheus 2.55 or later`, nil},
		{"otlp translation and legacy names", `{nameValidationScheme: Legacy, otlp: {translationStrategy: NoUTF8EscapingWithSuffixes}}`, nil,
			`render config: spec.otlp.translationStrategy: NoUTF8EscapingWithSuffixes requires a nameValidationScheme other than Legacy`, nil},
		{"otlp ignored attributes", `otlp: {ignoreResourceAttributes: [a]}`, nil,
			`render config: spec.otlp.ignoreResourceAttributes: requires promoteAllResourceAttributes true`, nil},
		{"apiserver key missing", `apiserverConfig: {host: 'https://k8s:6443', basicAuth: {username: {name: aws, key: access}, password: {name: aws, key: password}}}`, aws,
			`render config: spec.apiserverConfig.basicAuth: secret "monitoring/aws" has no key "password"`, []string{"aws"}},
		{"apiserver host", `apiserverConfig: {host: 'k8s'}`, nil,
			`render config: spec.apiserverConfig.host: "k8s" is not a URL with a host`, nil},
		{"apiserver two ways", `apiserverConfig: {host: 'https://k8s:6443', bearerToken: t, bearerTokenFile: /t}`, nil,
			`render config: spec.apiserverConfig: bearerToken and bearerTokenFile are mutually exclusive`, nil},
		{"tsdb stale series threshold", `tsdb: {staleSeriesCompactionThreshold: "1.5"}`, nil,
			`render config: spec.tsdb.staleSeriesCompactionThreshold: 1500m is not between 0 and 1`, nil},
		{"tsdb Xor chunks with st-storage", `{enableFeatures: [st-storage], tsdb: {chunkEncoding: {floats: Xor}}}`, nil,
			`render config: spec.tsdb.chunkEncoding.floats: Xor is incompatible with the st-storage feature (XOR chunks do not store start timestamps)`, nil},
		{"pod target label empty", `podTargetLabels: [team, ""]`, nil,
			`render config: spec.podTargetLabels: empty label name`, nil},
		{"log-file volume twice", `{queryLogFile: query.log, volumes: [{name: log-file, emptyDir: {}}]}`, nil,
			`spec.volumes, spec.secrets (volume secret-<name>) and spec.configMaps (configmap-<name>): volume "log-file" is used twice in the pod (by these fields and the controller's own volumes)`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := renderSpec(t, c.spec, c.secrets)
			require.EqualError(t, err, c.err)
			if c.refs == nil {
				return
			}
			var specErr *promserver.SpecError
			require.True(t, errors.As(err, &specErr), "%T: without the Secrets looked up", err)
			for _, name := range c.refs {
				require.True(t, slices.Contains(specErr.SecretRefs, store.Ref{Kind: store.Secret, Namespace: "monitoring", Name: name}),
					"%s is not watched: %v", name, specErr.SecretRefs)
			}
		})
	}
}

// TestRenderLogFileVolume: a query or scrape failure log file without a
// directory gets the log-file emptyDir at /var/log/prometheus, as
// prometheus-operator mounts it: for a query log file, only when no
// scrape failure log file is set.
func TestRenderLogFileVolume(t *testing.T) {
	for _, c := range []struct {
		spec string
		want bool
	}{
		{"queryLogFile: query.log", true},
		{"scrapeFailureLogFile: failures.log", true},
		{"{queryLogFile: query.log, scrapeFailureLogFile: failures.log}", true},
		{"{queryLogFile: query.log, scrapeFailureLogFile: /prometheus/failures.log}", false},
		{"queryLogFile: /prometheus/query.log", false},
		{"{}", false},
	} {
		t.Run(c.spec, func(t *testing.T) {
			server, unsupported := convert(t, c.spec)
			require.Empty(t, unsupported)
			_, sts := promserver.RenderWorkload(server, testPodOptions())
			pod := sts.Spec.Template.Spec
			volume := slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool {
				return v.Name == "log-file" && v.EmptyDir != nil
			})
			mount := slices.ContainsFunc(pod.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool {
				return m.Name == "log-file" && m.MountPath == "/var/log/prometheus" && !m.ReadOnly
			})
			require.Equal(t, c.want, volume, "volume")
			require.Equal(t, c.want, mount, "mount")
		})
	}
}
