package prometheus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/deploy/crds"
	"github.com/podreload/podreload/internal/testenv/configdiff"
	"github.com/podreload/podreload/internal/testenv/promfixture"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// operatorConfigKnown lists, by case, the differences TestOperatorConfig
// expects. A case listed here fails when its differences are not exactly
// these: when one disappears too, so that this table stays true. The
// cases not listed must give the same configuration as prometheus-operator.
func operatorConfigKnown() map[string]configdiff.Known {
	const (
		tlsFiles = "render inlines the TLS files' contents (ca, cert, key) where prometheus-operator names the files of its tls-assets Secret under /etc/prometheus/certs: the same bytes in another form"
	)
	known := map[string]configdiff.Known{
		"pm-tls":                    {Sections: []string{"job podMonitor/monitoring/app/0"}, Reason: tlsFiles},
		"probe-auth-tls":            {Sections: []string{"job probe/monitoring/web"}, Reason: tlsFiles},
		"sm-tls-secret":             {Sections: []string{"job serviceMonitor/monitoring/app/0"}, Reason: tlsFiles},
		"sm-tls-configmap-insecure": {Sections: []string{"job serviceMonitor/monitoring/app/0"}, Reason: tlsFiles},
		"alerting-options":          {Sections: []string{"alerting"}, Reason: tlsFiles},
	}
	return known
}

// TestOperatorConfig is the differential test of issue 26 item 6: for
// each case under testdata/operator/config (a multi-document YAML file:
// one Prometheus and what it selects), the configuration
// prometheus-operator generates for the Prometheus (bin/opconfig, which
// runs the pinned version's own generator) and the one we render for it
// (fromPrometheus, then render) are parsed with Prometheus' config
// package (bin/opconfig --parse, with the Prometheus bin/prometheus is
// built from) and compared section by section, scrape job by scrape job.
//
// Both sides get the objects as the API server returns them: with the
// defaults of their CRDs (deploy/crds) applied.
func TestOperatorConfig(t *testing.T) {
	opconfig, err := toolbin.Path("opconfig")
	require.NoError(t, err)
	cases, err := filepath.Glob(filepath.Join("testdata", "operator", "config", "*.yaml"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(cases), 50, "issue 26 promises at least 50 cases")
	known := operatorConfigKnown()
	for name := range known {
		require.FileExists(t, filepath.Join("testdata", "operator", "config", name+".yaml"), "operatorConfigKnown lists a case that does not exist")
	}
	schemas := crdSchemas(t)

	for _, path := range cases {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			stream, docs := defaultedDocuments(t, path, schemas)
			cmd := exec.CommandContext(t.Context(), opconfig)
			cmd.Stdin = bytes.NewReader(stream)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			want, err := cmd.Output()
			require.NoError(t, err, "%s %s:\n%s", opconfig, path, stderr.String())
			// The cases are valid: prometheus-operator skips none of their
			// objects (it logs why when it does).
			require.NotContains(t, stderr.String(), "skipping object", "prometheus-operator rejects an object of the case")

			configdiff.Check(t, name, known, diffConfigs(t, opconfig, want, ourConfig(t, docs)))
		})
	}
}

// crdSchemas returns the schemas of the CRDs of deploy/crds (their
// storage versions), by kind.
func crdSchemas(t *testing.T) map[string]*apiextensionsv1.JSONSchemaProps {
	t.Helper()
	schemas := map[string]*apiextensionsv1.JSONSchemaProps{}
	files, err := fs.Glob(crds.FS, "*.yaml")
	require.NoError(t, err)
	for _, f := range files {
		data, err := crds.FS.ReadFile(f)
		require.NoError(t, err)
		var crd apiextensionsv1.CustomResourceDefinition
		require.NoError(t, sigsyaml.Unmarshal(data, &crd))
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				schemas[crd.Spec.Names.Kind] = v.Schema.OpenAPIV3Schema
			}
		}
	}
	return schemas
}

// defaultedDocuments reads the documents of path and applies the defaults
// of their CRDs, as the API server does. It returns them as one stream and
// one by one, with their kinds.
func defaultedDocuments(t *testing.T, path string, schemas map[string]*apiextensionsv1.JSONSchemaProps) (stream []byte, docs []kindDocument) {
	t.Helper()
	promfixture.ReadDocuments(t, path, func(kind string, doc []byte) {
		if s, ok := schemas[kind]; ok {
			var obj map[string]any
			require.NoError(t, sigsyaml.Unmarshal(doc, &obj))
			applyDefaults(t, obj, s)
			var err error
			doc, err = sigsyaml.Marshal(obj)
			require.NoError(t, err)
		}
		docs = append(docs, kindDocument{kind: kind, doc: doc})
		stream = append(append(stream, "---\n"...), doc...)
	})
	return stream, docs
}

// applyDefaults sets, in v, the defaults of schema s for the fields it
// lacks, at every depth, as the API server's structural defaulting does
// for the objects of a CRD (its package is not linked here: it brings
// CEL). A default is itself defaulted.
func applyDefaults(t *testing.T, v any, s *apiextensionsv1.JSONSchemaProps) {
	switch v := v.(type) {
	case map[string]any:
		for name, prop := range s.Properties {
			if _, ok := v[name]; !ok && prop.Default != nil {
				var d any
				require.NoError(t, json.Unmarshal(prop.Default.Raw, &d))
				v[name] = d
			}
			if e, ok := v[name]; ok {
				applyDefaults(t, e, &prop)
			}
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			for name, e := range v {
				if _, ok := s.Properties[name]; !ok {
					applyDefaults(t, e, s.AdditionalProperties.Schema)
				}
			}
		}
	case []any:
		if s.Items != nil && s.Items.Schema != nil {
			for _, e := range v {
				applyDefaults(t, e, s.Items.Schema)
			}
		}
	}
}

// kindDocument is a YAML document with its kind.
type kindDocument struct {
	kind string
	doc  []byte
}

// ourConfig converts the Prometheus of docs with fromPrometheus and
// renders it with the other objects, as the takeover does, and returns
// the configuration, or, when the Prometheus is not taken over or cannot
// be rendered, why (diffConfigs reports it).
func ourConfig(t *testing.T, docs []kindDocument) ourResult {
	t.Helper()
	in := promserver.Inputs{Namespaces: map[string]labels.Set{}, Secrets: map[string]*corev1.Secret{}, ConfigMaps: map[string]*corev1.ConfigMap{}}
	var p *monitoringv1.Prometheus
	declared := map[string]bool{}
	for _, d := range docs {
		switch d.kind {
		case monitoringv1.PrometheusesKind:
			require.Nil(t, p, "two Prometheus objects")
			p = promfixture.DecodeDocument[monitoringv1.Prometheus](t, d.doc)
		case "Namespace":
			ns := promfixture.DecodeDocument[corev1.Namespace](t, d.doc)
			in.Namespaces[ns.Name] = labels.Set(ns.Labels)
			declared[ns.Name] = true
		case "Secret":
			s := promfixture.DecodeSecret(t, d.doc)
			in.Secrets[s.Namespace+"/"+s.Name] = s
		case "ConfigMap":
			cm := promfixture.DecodeDocument[corev1.ConfigMap](t, d.doc)
			in.ConfigMaps[cm.Namespace+"/"+cm.Name] = cm
		default:
			k, ok := promserver.SelectedKindOf(d.kind)
			require.True(t, ok, "unknown kind %q", d.kind)
			obj := k.Object.DeepCopyObject().(client.Object)
			require.NoError(t, sigsyaml.UnmarshalStrict(d.doc, obj))
			k.Add(&in, obj)
			if _, ok := in.Namespaces[obj.GetNamespace()]; !ok {
				// A namespace no Namespace document declares exists,
				// without labels, as bin/opconfig takes it.
				in.Namespaces[obj.GetNamespace()] = labels.Set{}
			}
		}
	}
	require.NotNil(t, p, "no Prometheus object")
	if _, ok := in.Namespaces[p.Namespace]; !ok {
		in.Namespaces[p.Namespace] = labels.Set{}
	}
	server, unsupported := FromPrometheus(p)
	if len(unsupported) > 0 {
		return ourResult{refused: "fromPrometheus refuses " + strings.Join(unsupported, ", ")}
	}
	in.Server, in.Layout = server.PrometheusServer, server.Layout
	objs, err := promserver.Render(in, promserver.WorkloadOptions{}, nil)
	switch {
	case err != nil:
		return ourResult{refused: "render: " + err.Error()}
	case objs.Oversized != nil:
		return ourResult{refused: "render: " + objs.Oversized.Error()}
	case len(objs.ConfigParts) > 0:
		return ourResult{refused: "render split the configuration into parts, which prometheus-operator's layout has not"}
	}
	var rejected []string
	for _, r := range objs.Rejected {
		rejected = append(rejected, fmt.Sprintf("%s %s/%s: %s", r.Kind, r.Namespace, r.Name, r.Reason))
	}
	return ourResult{config: promfixture.Gunzip(t, objs.ConfigSecret.Data[promserver.ConfigSecretKey]), rejected: rejected}
}

// ourResult is what ourConfig returns: the configuration, or why there is
// none.
type ourResult struct {
	config  []byte
	refused string
	// rejected lists the objects render left out, which
	// prometheus-operator keeps (every case is valid).
	rejected []string
}

// diffConfigs parses both configurations with Prometheus' config package
// (opconfig --parse, which fills in Prometheus' defaults: a job's
// scrape_interval from global, say, and shows the secrets) and returns
// their differences by section, in a fixed order: global, alerting,
// rule_files, remote_write, remote_read, the other top-level keys, then
// each scrape job by name. What Prometheus treats as a set is compared as
// one: the jobs (by name), rule_files, and the namespaces of a Kubernetes
// service discovery.
func diffConfigs(t *testing.T, opconfig string, want []byte, got ourResult) []configdiff.Diff {
	t.Helper()
	if got.refused != "" {
		return []configdiff.Diff{{Section: "refused", Diff: got.refused}}
	}
	var diffs []configdiff.Diff
	if len(got.rejected) > 0 {
		diffs = append(diffs, configdiff.Diff{Section: "rejected", Diff: "render leaves out objects prometheus-operator keeps:\n" + strings.Join(got.rejected, "\n")})
	}
	return append(diffs, configdiff.Sections(configSections(t, opconfig, "prometheus-operator's", want), configSections(t, opconfig, "podreload's", got.config), sectionOrder)...)
}

// sectionOrder is the key that sorts the sections as diffConfigs lists
// them.
func sectionOrder(name string) string {
	for i, s := range []string{"global", "alerting", "rule_files", "remote_write", "remote_read"} {
		if name == s {
			return fmt.Sprint(i)
		}
	}
	if strings.HasPrefix(name, "job ") {
		return "7" + name
	}
	return "6" + name
}

// configSections parses config (whose is whose it is, for the messages)
// with opconfig --parse and returns its sections, each marshalled back to
// YAML: every top-level key set, but scrape_configs, and "job <name>" for
// each scrape job.
func configSections(t *testing.T, opconfig, whose string, config []byte) map[string]string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), opconfig, "--parse")
	cmd.Stdin = bytes.NewReader(config)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	parsed, err := cmd.Output()
	require.NoError(t, err, "parse %s configuration: %s\n%s", whose, stderr.String(), config)
	var top yaml.MapSlice
	require.NoError(t, yaml.Unmarshal(parsed, &top))

	sections := map[string]string{}
	add := func(name string, v any) {
		sortSets(v)
		b, err := yaml.Marshal(v)
		require.NoError(t, err)
		if s := string(b); s != "{}\n" && s != "[]\n" && s != "null\n" {
			sections[name] = s
		}
	}
	for _, item := range top {
		switch key := fmt.Sprint(item.Key); key {
		case "scrape_configs":
			jobs, ok := item.Value.([]any)
			require.True(t, ok, "scrape_configs of %s configuration is no list", whose)
			for _, j := range jobs {
				var job yaml.MapSlice
				b, err := yaml.Marshal(j)
				require.NoError(t, err)
				require.NoError(t, yaml.Unmarshal(b, &job))
				name := ""
				for _, f := range job {
					if f.Key == "job_name" {
						name = fmt.Sprint(f.Value)
					}
				}
				_, dup := sections["job "+name]
				require.False(t, dup, "two jobs %s in %s configuration", name, whose)
				add("job "+name, withoutOneShard(job))
			}
		case "alerting":
			add(key, withoutRootPathPrefix(item.Value))
		case "rule_files":
			files, ok := item.Value.([]any)
			require.True(t, ok, "rule_files of %s configuration is no list", whose)
			slices.SortFunc(files, func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
			add(key, files)
		default:
			add(key, item.Value)
		}
	}
	return sections
}

// sortSets sorts in place the lists Prometheus treats as sets: the
// namespace names of a kubernetes_sd_configs entry. The mappings of v are
// yaml.MapSlices, as yaml.v2 decodes them into one.
func sortSets(v any) {
	switch v := v.(type) {
	case yaml.MapSlice:
		for _, item := range v {
			if ns, ok := item.Value.(yaml.MapSlice); ok && item.Key == "namespaces" {
				for _, f := range ns {
					if names, ok := f.Value.([]any); ok && f.Key == "names" {
						slices.SortFunc(names, func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
					}
				}
			}
			sortSets(item.Value)
		}
	case []any:
		for _, e := range v {
			sortSets(e)
		}
	}
}

// withoutRootPathPrefix returns the alerting section alerting with the
// path_prefix "/" of its Alertmanagers left out: Prometheus joins the
// prefix to "/" and the API path (notifier's postPath, path.Join), so "/"
// and no prefix post alerts to the same path.
func withoutRootPathPrefix(alerting any) any {
	section, ok := alerting.(yaml.MapSlice)
	if !ok {
		return alerting
	}
	section = slices.Clone(section)
	for i, f := range section {
		ams, ok := f.Value.([]any)
		if f.Key != "alertmanagers" || !ok {
			continue
		}
		out := make([]any, len(ams))
		for j, am := range ams {
			out[j] = am
			if m, ok := am.(yaml.MapSlice); ok {
				out[j] = slices.DeleteFunc(slices.Clone(m), func(item yaml.MapItem) bool {
					return item.Key == "path_prefix" && item.Value == "/"
				})
			}
		}
		section[i].Value = out
	}
	return section
}

// withoutOneShard returns job without the three relabelings that keep
// the targets of one shard when there is a single shard (modulus 1):
// prometheus-operator writes them with any number of shards, render only
// with two or more. With modulus 1 they keep every target: the hash of
// anything modulo 1 is 0, the shard's number, and the temporary labels they
// set are dropped after relabeling; so both configurations are equivalent.
// With two shards or more, both write them, and they are compared.
func withoutOneShard(job yaml.MapSlice) yaml.MapSlice {
	for i, f := range job {
		if f.Key != "relabel_configs" {
			continue
		}
		rules, ok := f.Value.([]any)
		if !ok || len(rules) < 3 {
			return job
		}
		tail, err := yaml.Marshal(rules[len(rules)-3:])
		if err != nil || !bytes.Equal(tail, oneShardRelabelings(rules[len(rules)-3])) {
			return job
		}
		job = slices.Clone(job)
		job[i].Value = rules[:len(rules)-3]
		return job
	}
	return job
}

// oneShardRelabelings is how the sharding relabelings of a single shard
// parse, on the label first, whose source is the first label of first
// (__address__, or __param_target for a Probe).
func oneShardRelabelings(first any) []byte {
	source := "__address__"
	if m, ok := first.(yaml.MapSlice); ok {
		for _, f := range m {
			if labels, ok := f.Value.([]any); ok && f.Key == "source_labels" && len(labels) == 2 {
				source = fmt.Sprint(labels[0])
			}
		}
	}
	return []byte(`- source_labels:
  - ` + source + `
  - __tmp_hash
  separator: ;
  regex: (.+);
  target_label: __tmp_hash
  replacement: $1
  action: replace
- source_labels:
  - __tmp_hash
  separator: ;
  modulus: 1
  target_label: __tmp_hash
  replacement: $1
  action: hashmod
- source_labels:
  - __tmp_hash
  - __tmp_disable_sharding
  separator: ;
  regex: $(SHARD);|.+;.+
  replacement: $1
  action: keep
`)
}

// TestOperatorConfigDiff checks the comparison of TestOperatorConfig:
// what Prometheus parses alike, or treats as a set, is equal; anything
// else is a difference, in its section.
func TestOperatorConfigDiff(t *testing.T) {
	opconfig, err := toolbin.Path("opconfig")
	require.NoError(t, err)
	const base = `global:
  scrape_interval: 30s
rule_files: [/a/*.yaml, /b/*.yaml]
scrape_configs:
- job_name: x
  kubernetes_sd_configs:
  - role: pod
    namespaces: {names: [a, b]}
  relabel_configs:
  - {source_labels: [a], target_label: b}
  - {source_labels: [c], target_label: d}
`
	shard := func(modulus int) string {
		return fmt.Sprintf(`  - {source_labels: [__address__, __tmp_hash], regex: (.+);, target_label: __tmp_hash, replacement: $1, action: replace}
  - {source_labels: [__tmp_hash], target_label: __tmp_hash, modulus: %d, action: hashmod}
  - {source_labels: [__tmp_hash, __tmp_disable_sharding], regex: $(SHARD);|.+;.+, action: keep}
`, modulus)
	}
	alerting := func(prefix string) string {
		return strings.Replace(base, "rule_files:", `alerting:
  alertmanagers:
  - path_prefix: `+prefix+`
    static_configs: [{targets: [am:9093]}]
rule_files:`, 1)
	}
	for _, tc := range []struct {
		name, base, got string
		refused         string
		want            []string
	}{
		{name: "the same", got: base},
		{name: "no Alertmanager path prefix", base: alerting(`""`), got: alerting("/")},
		{name: "defaults written out, sets in another order", got: `global:
  scrape_interval: 30s
  scrape_timeout: 10s
rule_files: [/b/*.yaml, /a/*.yaml]
scrape_configs:
- job_name: x
  scrape_interval: 30s
  metrics_path: /metrics
  kubernetes_sd_configs:
  - role: pod
    namespaces: {names: [b, a]}
  relabel_configs:
  - {source_labels: [a], target_label: b, action: replace}
  - {source_labels: [c], target_label: d}
`},
		{name: "the sharding relabelings of one shard", got: base + shard(1)},
		{name: "another Alertmanager path prefix", base: alerting(`""`), got: alerting("/am"), want: []string{"alerting"}},
		{name: "the sharding relabelings of two shards", got: base + shard(2), want: []string{"job x"}},
		{name: "relabelings in another order", got: strings.Replace(base,
			"  - {source_labels: [a], target_label: b}\n  - {source_labels: [c], target_label: d}\n",
			"  - {source_labels: [c], target_label: d}\n  - {source_labels: [a], target_label: b}\n", 1), want: []string{"job x"}},
		{name: "another interval, a job more, a rule file less", got: `global:
  scrape_interval: 1m
rule_files: [/a/*.yaml]
scrape_configs:
- job_name: x
  scrape_interval: 30s
  kubernetes_sd_configs:
  - role: pod
    namespaces: {names: [a, b]}
  relabel_configs:
  - {source_labels: [a], target_label: b}
  - {source_labels: [c], target_label: d}
- job_name: y
  static_configs: [{targets: [localhost:9090]}]
`, want: []string{"global", "rule_files", "job y"}},
		{name: "refused", refused: "fromPrometheus refuses spec.x", want: []string{"refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.base
			if want == "" {
				want = base
			}
			diffs := diffConfigs(t, opconfig, []byte(want), ourResult{config: []byte(tc.got), refused: tc.refused})
			var sections []string
			for _, d := range diffs {
				sections = append(sections, d.Section)
			}
			require.Equal(t, tc.want, sections, "%v", diffs)
		})
	}
}
