package rulefiles

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/podreload/podreload/controller/configsecret"
	"github.com/podreload/podreload/internal/testenv/goldenfile"
	"github.com/podreload/podreload/internal/testenv/promfixture"
)

// loadRule reads a PrometheusRule fixture from testdata/rules.
func loadRule(t testing.TB, name string) *monitoringv1.PrometheusRule {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "rules", name))
	require.NoError(t, err)
	var r monitoringv1.PrometheusRule
	require.NoError(t, yaml.UnmarshalStrict(b, &r))
	return &r
}

// sizedRule is a valid PrometheusRule whose rule file is size bytes,
// padded with a label of a recording rule (an alert's would be parsed as a
// template, slowly).
func sizedRule(t testing.TB, name string, size int) *monitoringv1.PrometheusRule {
	t.Helper()
	pad := func(n int) *monitoringv1.PrometheusRule {
		return &monitoringv1.PrometheusRule{
			ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, UID: types.UID("uid-" + name)},
			Spec: monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{
				Name: name,
				Rules: []monitoringv1.Rule{{
					Record: "padded",
					Expr:   intstr.FromString("up == 0"),
					Labels: map[string]string{"pad": strings.Repeat("x", n)},
				}},
			}}},
		}
	}
	small, err := newRuleChecker().file(pad(1))
	require.NoError(t, err)
	n := size - len(small) + 1
	require.Positive(t, n, "%s: %d bytes is too small", name, size)
	return pad(n)
}

// shardFiles lists the file names of each shard, as a config-reloader
// writes them.
func shardFiles(t testing.TB, shards []*corev1.ConfigMap) [][]string {
	t.Helper()
	var files [][]string
	for _, cm := range shards {
		files = append(files, slices.Sorted(maps.Keys(promfixture.ShardRules(t, cm))))
	}
	return files
}

// TestRenderRulesTooLarge checks the reasons a rule file too large is
// rejected for: gzipped, more than a shard holds; gunzipped, more than a
// config-reloader renders. The others are kept.
func TestRenderRulesTooLarge(t *testing.T) {
	noisy := promfixture.NoisyRule("noisy", 700<<10)
	content, err := newRuleChecker().file(noisy)
	require.NoError(t, err)
	gz, _ := gzipRuleFile(nil, content)
	require.Greater(t, len(gz), maxShardBytes)
	huge := sizedRule(t, "huge", configsecret.MaxConfigBytes+1)
	small := sizedRule(t, "small", 1000)

	shards, rejected := new(Cache).render(testShards(), []*monitoringv1.PrometheusRule{noisy, huge, small})
	require.Equal(t, []Rejected{
		{Namespace: "apps", Name: "huge", Reason: "rule file is 16777217 bytes, more than the 16777216 bytes a config-reloader renders (--config-max-size)"},
		{Namespace: "apps", Name: "noisy", Reason: fmt.Sprintf("rule file is %d bytes, %d gzipped, more than the 524288 bytes a ConfigMap shard holds", len(content), len(gz))},
	}, rejected)
	require.Equal(t, [][]string{{"apps-small-uid-small.yaml"}}, shardFiles(t, shards))
	promfixture.CheckRules(t, shards)
}

// TestGzipRuleFile checks that a rule file gzips to the same bytes every
// time, with a header naming no file and no time, through a new writer
// or a reused one.
func TestGzipRuleFile(t *testing.T) {
	content, err := newRuleChecker().file(loadRule(t, "valid.yaml"))
	require.NoError(t, err)
	first, zw := gzipRuleFile(nil, content)
	other, _ := gzipRuleFile(nil, "groups: []\n")
	again, _ := gzipRuleFile(zw, content)
	require.Equal(t, first, again)
	require.NotEqual(t, first, other)
	zr, err := gzip.NewReader(bytes.NewReader(first))
	require.NoError(t, err)
	require.Equal(t, gzip.Header{OS: 255}, zr.Header)
	b, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.Equal(t, content, string(b))
}

func TestRenderRulesConfigMap(t *testing.T) {
	r := loadRule(t, "valid.yaml")
	content, err := newRuleChecker().file(r)
	require.NoError(t, err)
	gz, _ := gzipRuleFile(nil, content)
	shards, rejected := new(Cache).render(testShards(), []*monitoringv1.PrometheusRule{r})
	require.Empty(t, rejected)
	require.Equal(t, []*corev1.ConfigMap{{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "monitoring",
			Name:      "main-rulefiles-0",
			Labels: map[string]string{
				"app.kubernetes.io/name":     "prometheus",
				"app.kubernetes.io/instance": "main",
				"podreload.dev/rulefiles":    "main",
			},
		},
		BinaryData: map[string][]byte{"apps-api-6f1c1e0e-1b7a-4c55-9d1e-3a2b4c5d6e7f.yaml.gz": gz},
	}}, shards)
	golden(t, filepath.Join("testdata", "rules", "valid.golden"), []byte(content))
	promfixture.CheckRules(t, shards)
}

func TestRenderRulesDeterministic(t *testing.T) {
	var rules []*monitoringv1.PrometheusRule
	for i := range 20 {
		r := promfixture.NoisyRule(fmt.Sprintf("r%02d", i), 40000+(i*7919)%(80<<10))
		r.ResourceVersion = "1"
		rules = append(rules, r)
	}
	rules = append(rules, loadRule(t, "invalid-promql.yaml"), loadRule(t, "bad-duration.yaml"))
	want, wantRejected := new(Cache).render(testShards(), rules)
	require.Greater(t, len(want), 2, "enough rules for several shards")
	require.Len(t, wantRejected, 2)

	// The sorting and packing are checked on many orders, rendering (slow
	// under -race) from scratch on one.
	var cache Cache
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 10 {
		shuffled := slices.Clone(rules)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		require.NotEqual(t, rules, shuffled)
		c := &cache
		if i == 0 {
			c = new(Cache)
		}
		got, rejected := c.render(testShards(), shuffled)
		// Not cmp.Diff: it walks the gzipped bytes one by one through
		// reflection, 200 s for this test under -race.
		require.Equal(t, want, got)
		require.Empty(t, cmp.Diff(wantRejected, rejected))
	}
	promfixture.CheckRules(t, want)
}

func TestRenderRulesRejects(t *testing.T) {
	for _, tc := range []struct {
		fixture, reason string
	}{
		{
			fixture: "invalid-promql.yaml",
			reason:  `invalid rules: group "broken", rule 1, "Broken": could not parse expression: 1:34: parse error: unclosed left parenthesis`,
		},
		{
			fixture: "duplicate-group.yaml",
			reason:  `invalid rules: groupname: "same" is repeated in the same file`,
		},
		{
			fixture: "empty-expr.yaml",
			reason:  `invalid rules: group "empty", rule 1, "Empty": field 'expr' must be set in rule`,
		},
		{
			fixture: "bad-duration.yaml",
			reason:  `invalid rules: group "slow", rule 1, "Slow": for: unknown unit "x" in duration "5x"; group "slow": interval: unknown unit " minute" in duration "1 minute"`,
		},
		{
			fixture: "record-and-alert.yaml",
			reason:  `invalid rules: group "both", rule 1, "JobUp": only one of 'record' and 'alert' must be set`,
		},
		{
			fixture: "bad-template.yaml",
			reason:  `invalid rules: group "templates", rule 1, "Unclosed": annotation "summary": template: __alert_Unclosed:1: unclosed action`,
		},
		{
			fixture: "recording-annotations.yaml",
			reason: `invalid rules: group "records", rule 1, "job:up{bad}": braces present in the recording rule name; should it be in expr?: job:up{bad}; ` +
				`group "records", rule 1, "job:up{bad}": invalid field 'annotations' in recording rule; ` +
				`group "records", rule 1, "job:up{bad}": invalid field 'for' in recording rule`,
		},
		{
			fixture: "bad-group.yaml",
			reason:  `invalid rules: Groupname must not be empty; invalid label name: __name__`,
		},
		{
			fixture: "bad-labels.yaml",
			reason: `invalid rules: group "labels", rule 1, "Named": invalid annotation name: ; ` +
				`group "labels", rule 1, "Named": invalid label name: __name__; ` +
				`group "labels", rule 1, "Named": label "severity": template: __alert_Named:1: unclosed action; ` +
				`group "labels", rule 2, "job:up": invalid field 'keep_firing_for' in recording rule; ` +
				`group "labels", rule 2, "job:up": invalid label name: __name__`,
		},
		{
			fixture: "template-name.yaml",
			reason:  `invalid rules: group "templates", rule 2, "Self": annotation "summary": template: __alert_Self:1: template: multiple definition of template "__alert_Self"`,
		},
		{
			fixture: "many-errors.yaml",
			reason: `invalid rules: group "many", rule 1, "E1": could not parse expression: 1:6: parse error: unexpected end of input; ` +
				`group "many", rule 2, "E2": could not parse expression: 1:6: parse error: unexpected end of input; ` +
				`group "many", rule 3, "E3": could not parse expression: 1:6: parse error: unexpected end of input; ` +
				`group "many", rule 4, "E4": could not parse expression: 1:6: parse error: unexpected end of input; ` +
				`group "many", rule 5, "E5": could not parse expression: 1:6: parse error: unexpected end of input; ` +
				`and 2 more`,
		},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			valid, bad := loadRule(t, "valid.yaml"), loadRule(t, tc.fixture)
			shards, rejected := new(Cache).render(testShards(), []*monitoringv1.PrometheusRule{bad, valid})
			require.Equal(t, []Rejected{{Namespace: bad.Namespace, Name: bad.Name, Reason: tc.reason}}, rejected)
			require.Equal(t, [][]string{{"apps-api-6f1c1e0e-1b7a-4c55-9d1e-3a2b4c5d6e7f.yaml"}}, shardFiles(t, shards))
			promfixture.CheckRules(t, shards)
		})
	}
}

// TestRenderRulesVerbatim checks that the rule file says exactly what the
// PrometheusRule says, for strings YAML could read back differently.
func TestRenderRulesVerbatim(t *testing.T) {
	for _, v := range []string{
		"yes", "no", "null", "~", "1e3", "0x1F", "010", "2024-01-01", "true", "",
		"a: b", "# not a comment", "- item", "[x]", "{x}", "*alias", "&anchor", "!tag", "%directive", "@at", "`tick`",
		" leading space", "trailing space ", "\ttab", "line\nbreak", "trailing newline\n", "\n\nleading newlines",
		"quote ' and \" quotes", "back\\slash", "ünïcødé ✓", "line\u2028separator", "---", "...",
	} {
		t.Run(v, func(t *testing.T) {
			expr := "up == 0 # " + strings.ReplaceAll(v, "\n", "\n# ")
			r := &monitoringv1.PrometheusRule{
				ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "verbatim", UID: "uid"},
				Spec: monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{
					Name:   v + "group",
					Labels: map[string]string{"g": v},
					Rules: []monitoringv1.Rule{{
						Alert:       "A" + v,
						Expr:        intstr.FromString(expr),
						Labels:      map[string]string{"l": v},
						Annotations: map[string]string{"a": v},
					}},
				}}},
			}
			content, err := newRuleChecker().file(r)
			require.NoError(t, err)
			groups, errs := rulefmt.Parse([]byte(content), false, model.UTF8Validation)
			require.Empty(t, errs)
			g := groups.Groups[0]
			require.Equal(t, v+"group", g.Name)
			require.Equal(t, map[string]string{"g": v}, g.Labels)
			require.Equal(t, "A"+v, g.Rules[0].Alert)
			require.Equal(t, expr, g.Rules[0].Expr)
			require.Equal(t, map[string]string{"l": v}, g.Rules[0].Labels)
			require.Equal(t, map[string]string{"a": v}, g.Rules[0].Annotations)
		})
	}
}

func TestRuleCache(t *testing.T) {
	server := testShards()
	versioned := func(name, version string) *monitoringv1.PrometheusRule {
		r := loadRule(t, name)
		r.UID, r.ResourceVersion = types.UID("uid-"+r.Name), version
		return r
	}
	valid, invalid := versioned("valid.yaml", "1"), versioned("invalid-promql.yaml", "1")
	unversioned := sizedRule(t, "unversioned", 1000)
	validFile, unversionedFile := FileName(valid), FileName(unversioned)
	all := []*monitoringv1.PrometheusRule{valid, invalid, unversioned}

	var cache Cache
	want, wantRejected := new(Cache).render(server, all)
	got, rejected := cache.render(server, all)
	require.Empty(t, cmp.Diff(want, got))
	require.Empty(t, cmp.Diff(wantRejected, rejected))
	require.Len(t, rejected, 1)
	require.Len(t, cache.entries, 2, "objects without a resourceVersion are not cached")

	// The same resourceVersion is trusted to mean the same content, so a
	// spec changed under it shows that the cached file is served; an object
	// without a resourceVersion is rendered again.
	valid.Spec.Groups[0].Rules[1].Expr = intstr.FromString("vector(1) == 0")
	unversioned.Spec.Groups[0].Rules[0].Expr = intstr.FromString("vector(2) == 0")
	got, rejected = cache.render(server, all)
	require.Equal(t, promfixture.ShardRules(t, want[0])[validFile], promfixture.ShardRules(t, got[0])[validFile])
	require.Contains(t, promfixture.ShardRules(t, got[0])[unversionedFile], "vector(2) == 0")
	require.Equal(t, wantRejected, rejected)

	// A new resourceVersion is rendered and validated again.
	valid.ResourceVersion = "2"
	got, _ = cache.render(server, all)
	require.Contains(t, promfixture.ShardRules(t, got[0])[validFile], "vector(1) == 0")
	valid.ResourceVersion, valid.Spec.Groups[0].Rules[1].Expr = "3", intstr.FromString("vector(")
	_, rejected = cache.render(server, all)
	require.Len(t, rejected, 2)
	require.Equal(t, "api", rejected[0].Name)

	// Only the objects of the last render are kept.
	cache.render(server, []*monitoringv1.PrometheusRule{invalid})
	require.Equal(t, map[ruleKey]ruleResult{{uid: "uid-invalid-promql", resourceVersion: "1"}: {reason: wantRejected[0].Reason}}, cache.entries)
	promfixture.CheckRules(t, got)
}

func TestRuleFileName(t *testing.T) {
	long := strings.Repeat("n", 253)
	for _, tc := range []struct {
		namespace, name, uid, want string
	}{
		{"apps", "api", "6f1c", "apps-api-6f1c.yaml"},
		{"apps", "api", "", "apps-api-.yaml"},
		{
			strings.Repeat("s", 63), long, "6f1c1e0e-1b7a-4c55-9d1e-3a2b4c5d6e7f",
			strings.Repeat("s", 63) + "-" + long[:253-63-36-len("--.yaml.gz")] + "-6f1c1e0e-1b7a-4c55-9d1e-3a2b4c5d6e7f.yaml",
		},
	} {
		got := FileName(&monitoringv1.PrometheusRule{ObjectMeta: metav1.ObjectMeta{Namespace: tc.namespace, Name: tc.name, UID: types.UID(tc.uid)}})
		require.Equal(t, tc.want, got)
		require.LessOrEqual(t, len(got+".gz"), 253, "a ConfigMap key, gzipped")
	}
}

// BenchmarkRenderRules renders 1,000 PrometheusRules of 10 rules each:
// from scratch, and through a Cache when one of them changed.
func BenchmarkRenderRules(b *testing.B) {
	rules := promfixture.BenchRules(1000)
	server := testShards()
	check := func(b *testing.B, shards []*corev1.ConfigMap, rejected []Rejected) {
		if len(rejected) > 0 || len(shards) == 0 {
			b.Fatalf("%d shards, rejected %v", len(shards), rejected)
		}
	}

	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			shards, rejected := new(Cache).render(server, rules)
			check(b, shards, rejected)
		}
	})
	version := 1 // across runs of the sub-benchmark, so that every change is new
	b.Run("one-changed", func(b *testing.B) {
		var cache Cache
		cache.render(server, rules)
		b.ReportAllocs()
		for b.Loop() {
			version++
			rules[version%len(rules)].ResourceVersion = strconv.Itoa(version)
			shards, rejected := cache.render(server, rules)
			check(b, shards, rejected)
		}
	})
}

// testShards are the rule file ConfigMaps of the PrometheusServer
// monitoring/main, with the API source.
func testShards() Shards {
	return Shards{Namespace: "monitoring", Prefix: "main-rulefiles-", Labels: map[string]string{
		"app.kubernetes.io/name": "prometheus", "app.kubernetes.io/instance": "main", "podreload.dev/rulefiles": "main",
	}}
}

// render renders rules, with no label enforced.
func (c *Cache) render(s Shards, rules []*monitoringv1.PrometheusRule) ([]*corev1.ConfigMap, []Rejected) {
	in := make([]Rule, len(rules))
	for i, r := range rules {
		in[i].Rule = r
	}
	return c.Render(s, in)
}

func TestMain(m *testing.M) {
	// Read through flag.Lookup by golden, so that no package variable holds it.
	flag.Bool("update", false, "rewrite the golden files in testdata/")
	goleak.VerifyTestMain(m)
}

// golden compares got with the file path, or rewrites the file with -update.
func golden(t *testing.T, path string, got []byte) { goldenfile.Check(t, path, got) }
