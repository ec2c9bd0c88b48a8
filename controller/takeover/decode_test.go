package takeover

import (
	"os"
	"path/filepath"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// TestDecode: decoded as the API server decodes, the last of duplicate
// keys wins, a field differing from one by case alone is dropped, and the
// fields of spec the types do not know are found by path (not those of
// status).
func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       Decoded
		replicas   int32
		url        string
	}{
		{name: "duplicate key", data: `{"spec":{"replicas":1,"replicas":3}}`, replicas: 3},
		{name: "case", data: `{"spec":{"externalURL":"x","replicas":1}}`, replicas: 1, want: Decoded{Dropped: []string{"spec.externalURL"}}},
		{name: "case in a list", data: `{"spec":{"replicas":1,"containers":[{"name":"a","Image":"x"}]}}`, replicas: 1, want: Decoded{Dropped: []string{"spec.containers[0].Image"}}},
		{name: "exact", data: `{"spec":{"externalUrl":"x","replicas":2}}`, replicas: 2, url: "x"},
		{name: "unknown", data: `{"spec":{"replicas":1,"futureField":true,"web":{"tlsConfig":{"futureTLS":1}},"containers":[{"name":"a","futureContainer":1}]},"status":{"futureStatus":1}}`,
			replicas: 1, want: Decoded{Unknown: []string{"spec.containers[0].futureContainer", "spec.futureField", "spec.web.tlsConfig.futureTLS"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p monitoringv1.Prometheus
			d, err := Decode([]byte(tc.data), &p)
			require.NoError(t, err)
			require.Equal(t, tc.want, d)
			require.Equal(t, tc.replicas, ptr.Deref(p.Spec.Replicas, 0))
			require.Equal(t, tc.url, p.Spec.ExternalURL)
		})
	}
	_, err := Decode([]byte(`{"spec":{"replicas":"two"}}`), &monitoringv1.Prometheus{})
	require.EqualError(t, err, `json: cannot unmarshal string into Go struct field PrometheusSpec.spec.CommonPrometheusFields.replicas of type int32`)
	require.Equal(t, []string{"spec.x: a field of a newer prometheus-operator, not known to this release"}, UnknownFields(Decoded{Unknown: []string{"spec.x"}}))
}

// BenchmarkDecode measures what the controller adds to the reconcile of a
// Prometheus taken over once per generation, to find the fields its types
// do not know: the object read as stored (unstructured) marshalled and
// decoded strictly; a reconcile at a generation already read adds a map
// lookup alone.
func BenchmarkDecode(b *testing.B) {
	doc, err := os.ReadFile(filepath.Join("testdata", "prometheus.yaml"))
	require.NoError(b, err)
	data, err := yaml.YAMLToJSON(doc)
	require.NoError(b, err)
	u := &unstructured.Unstructured{}
	require.NoError(b, u.UnmarshalJSON(data))
	b.ReportAllocs()
	for b.Loop() {
		raw, err := u.MarshalJSON()
		if err != nil {
			b.Fatal(err)
		}
		d, err := Decode(raw, &monitoringv1.Prometheus{})
		if err != nil || len(d.Unknown) > 0 {
			b.Fatal(err, d)
		}
	}
}
