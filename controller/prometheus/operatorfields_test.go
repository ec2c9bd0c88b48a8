package prometheus

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
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

// uncoveredFields walks the struct type typ as operatorFields classifies
// it: missing are its fields without a row (nor rows under them that
// classify their sub-fields), unknown the rows naming no field of typ.
func uncoveredFields(typ reflect.Type, fields []operatorField) (missing, unknown []string) {
	rows := map[string]bool{}
	for _, f := range fields {
		rows[f.path] = false
	}
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for p, ft := range specFields(t, prefix) {
			if _, ok := rows[p]; ok {
				rows[p] = true
				continue
			}
			st, list := structOf(ft)
			below := p + "."
			if list {
				below = p + "[]."
			}
			expanded := st.Kind() == reflect.Struct && slices.ContainsFunc(fields, func(f operatorField) bool {
				return strings.HasPrefix(f.path, below)
			})
			if !expanded {
				missing = append(missing, p)
				continue
			}
			walk(st, below)
		}
	}
	walk(typ, "")
	for p, seen := range rows {
		if !seen {
			unknown = append(unknown, p)
		}
	}
	slices.Sort(missing)
	slices.Sort(unknown)
	return missing, unknown
}

// TestOperatorFieldsCoverTheSpec fails when a field of the pinned
// PrometheusSpec has no row (an upgrade of the types added one), when a
// row names a field that does not exist (or one under a row that covers
// it), or when a row is malformed.
func TestOperatorFieldsCoverTheSpec(t *testing.T) {
	paths := map[string]bool{}
	for _, f := range operatorFields() {
		require.False(t, paths[f.path], "%s: two rows", f.path)
		paths[f.path] = true
		require.NotEmpty(t, f.note, "%s: no note", f.path)
		require.Contains(t, []fieldClass{fieldMapped, fieldIgnored, fieldRefused}, f.class, f.path)
		require.True(t, f.accepts == nil || f.class == fieldRefused, "%s: accepts on a row that is not refused", f.path)
	}
	missing, unknown := uncoveredFields(reflect.TypeFor[monitoringv1.PrometheusSpec](), operatorFields())
	require.Empty(t, missing, "fields of monitoringv1.PrometheusSpec without a row in operatorFields: classify them")
	require.Empty(t, unknown, "rows of operatorFields naming no field of monitoringv1.PrometheusSpec (or under a row that covers them)")
}

// TestOperatorFieldsCoverageFails: the walk reports a field the table
// lacks, at the top and under a list classified item by item, and a row
// naming no field.
func TestOperatorFieldsCoverageFails(t *testing.T) {
	type item struct {
		A string `json:"a"`
		B string `json:"b,omitempty"`
	}
	type grown struct {
		monitoringv1.PrometheusSpec `json:",inline"`
		NewField                    string `json:"newField,omitempty"`
		Items                       []item `json:"items,omitempty"`
	}
	fields := slices.Concat(operatorFields(), []operatorField{
		{path: "items[].a", class: fieldMapped, note: "x"},
		{path: "gone", class: fieldMapped, note: "x"},
	})
	missing, unknown := uncoveredFields(reflect.TypeFor[grown](), fields)
	require.Equal(t, []string{"items[].b", "newField"}, missing)
	require.Equal(t, []string{"gone"}, unknown)
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

// acceptedValues are values of refused fields that are taken over.
func acceptedValues() map[string][]string {
	return map[string][]string{
		"shardingStrategy":             {`{}`, `{"mode": "Address"}`},
		"enableOTLPReceiver":           {`false`},
		"storage.disableMountSubPath":  {`false`},
		"web.tlsConfig.clientAuthType": {`"NoClientCert"`, `"RequestClientCert"`, `"VerifyClientCertIfGiven"`},
		"automountServiceAccountToken": {`true`},
		"listenLocal":                  {`false`},
		"podManagementPolicy":          {`"Parallel"`},
		"arbitraryFSAccessThroughSMs":  {`{"deny": false}`},
		"overrideHonorLabels":          {`false`},
		"overrideHonorTimestamps":      {`false`},
		"ignoreNamespaceSelectors":     {`false`},
		"minReadySeconds":              {`0`},
		"hostNetwork":                  {`false`},
		"serviceDiscoveryRole":         {`"Endpoints"`},
		"shardRetentionPolicy":         {`{}`, `{"whenScaled": "Delete"}`},
		"disableCompaction":            {`false`},
		"allowOverlappingBlocks":       {`false`},
	}
}

// refusedValues are values that refuse a field where the generic filler's
// would be accepted.
func refusedValues() map[string]string {
	return map[string]string{
		"automountServiceAccountToken": `false`,
		"shardRetentionPolicy":         `{"whenScaled": "Retain"}`,
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
- {url: 'http://a', sigv4: {}}
- {url: 'http://b', sigv4: {region: x}, messageVersion: V2.0}
- {url: 'http://c', roundRobinDNS: false}
alerting: {alertmanagers: [{name: am, port: web, sigv4: {}}]}
listenLocal: false
secrets: []
hostAliases: []
disableCompaction: true
`)
	require.Equal(t, []string{
		"alerting.alertmanagers[].sigv4",
		"disableCompaction",
		"remoteWrite[].messageVersion",
		"remoteWrite[].roundRobinDNS",
		"remoteWrite[].sigv4",
		"thanos",
	}, unsupported)
}
