package prometheus

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/goldenfile"
)

// TestOperatorFieldsCoverTheSpec fails when a field of the pinned
// PrometheusSpec has no row (an upgrade of the types added one), when a
// row names a field that does not exist (or one under a row that covers
// it), or when a row is malformed.
func TestOperatorFieldsCoverTheSpec(t *testing.T) {
	require.NoError(t, takeover.CheckTable(reflect.TypeFor[monitoringv1.PrometheusSpec](), operatorFields()))
}

// TestOperatorFieldMatrix checks docs/prometheus-operator.md is the
// rendering of the table (-update rewrites it).
func TestOperatorFieldMatrix(t *testing.T) {
	goldenfile.Check(t, "../../docs/prometheus-operator.md", []byte(fieldMatrix()))
}

// fieldMatrix renders docs/prometheus-operator.md from operatorFields.
func fieldMatrix() string {
	var b strings.Builder
	b.WriteString(`# prometheus-operator's Prometheus fields in a takeover

<!-- Generated from controller/prometheus/operatorfields.go by
     go test ./controller/prometheus/ -run TestOperatorFieldMatrix -update -->

What podreload does with each field of a ` + "`monitoring.coreos.com/v1` `Prometheus`" + `
(prometheus-operator's types at v0.95.2, go.mod) when it takes the object
over ([takeover.md](takeover.md); the ` + "`Alertmanager`" + ` fields are in
[prometheus-operator-alertmanager.md](prometheus-operator-alertmanager.md)):

` + takeover.Legend + `
A path with ` + "`[]`" + ` classifies the items of a list field by field; a row
covers the field and everything under it. A test walks the Go types and
fails when a field has no row, so a new field of the next version cannot
be dropped unnoticed.

One refusal is not of one field: a ` + "`version`" + ` that is not a version
(prometheus-operator parses it tolerantly, as ` + "`v3.5`" + ` for ` + "`v3.5.0`" + `, and
fails on anything else).

An object whose ` + "`serviceMonitorSelector`, `podMonitorSelector`, `probeSelector`" + `
and ` + "`scrapeConfigSelector`" + ` are all unset is taken over with its configuration
Secret left to the user, as prometheus-operator leaves it: the controller
never writes ` + "`prometheus-<name>`" + `, renders the rest, and the config-reloader
reads the user's ` + "`prometheus.yaml.gz`" + ` from it; a missing Secret or key is an
` + "`InvalidSpec`" + ` naming it, with what was written last kept.

`)
	b.WriteString(takeover.Matrix(operatorFields()))
	return b.String()
}

// acceptedValues are values of refused fields that are taken over.
func acceptedValues() map[string][]string {
	return map[string][]string{
		"shardingStrategy":             {`{}`, `{"mode": "Address"}`},
		"web.tlsConfig.clientAuthType": {`"NoClientCert"`, `"RequestClientCert"`, `"VerifyClientCertIfGiven"`},
		"containers": {`[{"name": "kube-rbac-proxy", "image": "quay.io/brancz/kube-rbac-proxy:v0.19.0"}]`,
			`[{"name": "prometheus", "env": [{"name": "GOMEMLIMIT", "value": "1GiB"}]}]`,
			`[{"name": "config-reloader", "resources": {"limits": {"memory": "50Mi"}}}]`},
		"initContainers": {`[{"name": "setup", "image": "busybox"}]`, `[{"name": "init-config-reloader", "env": [{"name": "A", "value": "1"}]}]`},
	}
}

// refusedValues are values that refuse a field where the generic filler's
// would be accepted.
func refusedValues() map[string]string {
	return map[string]string{
		"containers":     `[{"name": "config-reloader", "args": ["--reload-url=http://127.0.0.1:9090/-/reload"]}]`,
		"initContainers": `[{"name": "init-config-reloader", "image": "quay.io/prometheus-operator/prometheus-config-reloader:v0.93.1"}]`,
	}
}

// TestConvertRefusedFields: a Prometheus setting one refused field lists
// exactly its path; one setting it to an accepted value lists nothing.
func TestConvertRefusedFields(t *testing.T) {
	for _, f := range operatorFields() {
		if f.Class != takeover.ClassRefused && f.Class != takeover.ClassLimited {
			continue
		}
		t.Run(f.Path, func(t *testing.T) {
			p := testPrometheus()
			require.NoError(t, takeover.SetPath(reflect.ValueOf(&p.Spec), f.Path, refusedValues()[f.Path]))
			_, unsupported := FromPrometheus(p)
			require.Equal(t, []string{f.Path}, unsupported)

			ok := acceptedValues()[f.Path]
			require.Equal(t, f.Accepts != nil, len(ok) > 0, "a field with accepted values has an example of each, and only those")
			for _, v := range ok {
				p := testPrometheus()
				require.NoError(t, takeover.SetPath(reflect.ValueOf(&p.Spec), f.Path, v))
				_, unsupported := FromPrometheus(p)
				require.Empty(t, unsupported, v)
			}
		})
	}
	for path := range acceptedValues() {
		require.True(t, slices.ContainsFunc(operatorFields(), func(f takeover.Field) bool { return f.Path == path && f.Accepts != nil }), path)
	}
}

// TestConvertUnsupportedSorted: several refused fields, some in several
// list items, are listed sorted, each once; zero values are not listed.
func TestConvertUnsupportedSorted(t *testing.T) {
	_, unsupported := convert(t, `
thanos: {}
shardingStrategy: {mode: Topology}
retentionPercentage: 50
serviceName: mine
containers:
- {name: config-reloader, args: [--a]}
- {name: config-reloader, image: x}
web: {tlsConfig: {keyFile: /k, certFile: /c}}
remoteWrite: [{url: 'http://a', sigv4: {}, roundRobinDNS: false}]
listenLocal: false
secrets: []
hostAliases: []
disableCompaction: true
`)
	require.Equal(t, []string{
		"containers",
		"shardingStrategy",
		"web.tlsConfig.keyFile",
	}, unsupported)
}
