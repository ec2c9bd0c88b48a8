package prometheusserver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/promcfg"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/selector"
	"github.com/podreload/podreload/controller/store"
	"github.com/podreload/podreload/internal/testenv/promfixture"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// renderCases returns the inputs under testdata/render: <case>.yaml, with
// the expected output in <case>.golden.
//
// A case named error-* must fail, reject* must leave objects out, any
// other must render every object it selects, whatever its golden file
// says.
func renderCases(t *testing.T) []string {
	t.Helper()
	return promfixture.Cases(t, "render")
}

// TestRender renders each case, compares the result with its golden file,
// checks the objects against each other and against the functions Render
// ties together, and checks the configuration and every rule file with
// the real promtool.
func TestRender(t *testing.T) {
	promtool, err := toolbin.Path("promtool")
	require.NoError(t, err)
	for _, path := range renderCases(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in := loadInputs(t, path)
			out, err := promserver.Render(in, testOptions(), nil)
			switch {
			case strings.HasPrefix(name, "error-"):
				require.Error(t, err)
				require.Nil(t, out)
			case strings.HasPrefix(name, "reject"):
				require.NoError(t, err)
				require.NotEmpty(t, out.Rejected)
			default:
				require.NoError(t, err)
				require.Empty(t, out.Rejected)
			}

			// golden, and -update, are in golden_test.go.
			golden(t, strings.TrimSuffix(path, ".yaml")+".golden", renderGolden(t, out, err))

			if err == nil {
				config := checkObjects(t, in, testOptions(), out)
				promfixture.CheckConfig(t, promtool, config)
				promfixture.CheckRules(t, out.RuleShards)
				checkWeb(t, promtool, in, out)
			}
		})
	}
}

// renderGolden is the content of a golden file: the error, or the counts
// of selected objects, the rejections, the rule shards with their file
// names, the Role with its rules and the RoleBinding with its subjects,
// and the config Secret with its keys as comments, followed by the
// configuration, gunzipped.
func renderGolden(t *testing.T, out *promserver.Objects, err error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err != nil {
		fmt.Fprintf(&b, "# error: %v\n", err)
		return b.Bytes()
	}
	fmt.Fprintf(&b, "# selected: %d ServiceMonitors, %d PodMonitors, %d PrometheusRules\n",
		out.Selected[monitoringv1.ServiceMonitorsKind], out.Selected[monitoringv1.PodMonitorsKind], out.Selected[promserver.KindPrometheusRule])
	if out.Selected[monitoringv1.ProbesKind] > 0 || out.Selected[monitoringv1alpha1.ScrapeConfigsKind] > 0 {
		fmt.Fprintf(&b, "# selected: %d Probes, %d ScrapeConfigs\n", out.Selected[monitoringv1.ProbesKind], out.Selected[monitoringv1alpha1.ScrapeConfigsKind])
	}
	for _, r := range out.Rejected {
		fmt.Fprintf(&b, "# rejected %s %s/%s: %s\n", r.Kind, r.Namespace, r.Name, r.Reason)
	}
	if len(out.RuleShards) == 0 {
		fmt.Fprintf(&b, "# rule shards: none\n")
	}
	for _, cm := range out.RuleShards {
		fmt.Fprintf(&b, "# configmap %s/%s: %s\n", cm.Namespace, cm.Name, strings.Join(slices.Sorted(maps.Keys(cm.BinaryData)), ", "))
	}
	if out.Role == nil {
		fmt.Fprintf(&b, "# role: none\n")
	} else {
		var rules []string
		for _, rule := range out.Role.Rules {
			rules = append(rules, strings.TrimSpace(strings.Join(rule.Verbs, ",")+" "+strings.Join(rule.Resources, ",")+" "+strings.Join(rule.ResourceNames, ",")))
		}
		fmt.Fprintf(&b, "# role %s/%s: %s\n", out.Role.Namespace, out.Role.Name, strings.Join(rules, "; "))
		rb := out.RoleBinding
		for _, sub := range rb.Subjects {
			fmt.Fprintf(&b, "# rolebinding %s/%s: %s %s to %s %s/%s\n", rb.Namespace, rb.Name, rb.RoleRef.Kind, rb.RoleRef.Name, sub.Kind, sub.Namespace, sub.Name)
		}
	}
	if len(out.StateSecrets) > 0 {
		var names []string
		for _, s := range out.StateSecrets {
			names = append(names, s.Name)
		}
		fmt.Fprintf(&b, "# reloader state secrets, empty, labelled %s: %s\n", labels.Set(out.StateSecrets[0].Labels), strings.Join(names, ", "))
	}
	if len(out.StatefulSets) > 1 {
		var names []string
		for _, sts := range out.StatefulSets {
			names = append(names, sts.Name)
		}
		fmt.Fprintf(&b, "# statefulsets: %s\n", strings.Join(names, ", "))
	}
	webGolden(&b, out)
	s := out.ConfigSecret
	fmt.Fprintf(&b, "# secret %s/%s: %s\n", s.Namespace, s.Name, strings.Join(slices.Sorted(maps.Keys(s.Data)), ", "))
	b.Write(promfixture.Gunzip(t, s.Data[promserver.ConfigSecretKey]))
	return b.Bytes()
}

// checkObjects checks out, rendered from in and opts, for what the golden
// file does not show, and returns the configuration it holds.
func checkObjects(t *testing.T, in promserver.Inputs, opts promserver.WorkloadOptions, out *promserver.Objects) []byte {
	t.Helper()
	server := promserver.Target{PrometheusServer: in.Server, Layout: in.Layout}
	spec := &server.Spec

	// The selection, as selector.Selects makes it.
	sms := selectedIn(t, server.PrometheusServer, spec.ServiceMonitorSelector, spec.ServiceMonitorNamespaceSelector, in.ServiceMonitors, in.Namespaces)
	pms := selectedIn(t, server.PrometheusServer, spec.PodMonitorSelector, spec.PodMonitorNamespaceSelector, in.PodMonitors, in.Namespaces)
	probes := selectedIn(t, server.PrometheusServer, spec.ProbeSelector, spec.ProbeNamespaceSelector, in.Probes, in.Namespaces)
	scs := selectedIn(t, server.PrometheusServer, spec.ScrapeConfigSelector, spec.ScrapeConfigNamespaceSelector, in.ScrapeConfigs, in.Namespaces)
	rules := selectedIn(t, server.PrometheusServer, spec.RuleSelector, spec.RuleNamespaceSelector, in.Rules, in.Namespaces)
	require.Equal(t, map[string]int{monitoringv1.ServiceMonitorsKind: len(sms), monitoringv1.PodMonitorsKind: len(pms), monitoringv1.ProbesKind: len(probes),
		monitoringv1alpha1.ScrapeConfigsKind: len(scs), promserver.KindPrometheusRule: len(rules)}, out.Selected)

	// The rules, as a new ruleCache renders them.
	shards, rejectedRules := new(promserver.RuleCache).Render(server, rules)
	require.Empty(t, cmp.Diff(shards, out.RuleShards))

	// The configuration, as renderConfig renders it, in the Secret.
	want, rejectedMonitors, err := renderConfig(server, promserver.Selected{ServiceMonitors: sms, PodMonitors: pms, Probes: probes, ScrapeConfigs: scs},
		in.Secrets, promserver.RuleFilesGlobs(server, len(shards)))
	require.NoError(t, err)
	require.ElementsMatch(t, slices.Concat(rejectedRules, rejectedMonitors), out.Rejected)
	require.True(t, slices.IsSortedFunc(out.Rejected, func(a, b promcfg.Rejection) int {
		return strings.Compare(a.Kind+"\x00"+a.Namespace+"\x00"+a.Name, b.Kind+"\x00"+b.Namespace+"\x00"+b.Name)
	}), "rejections sorted by kind, namespace and name")
	s := out.ConfigSecret
	require.Equal(t, metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, s.TypeMeta)
	require.Equal(t, promserver.ConfigSecretOf(server), s.Name)
	require.Equal(t, server.Namespace, s.Namespace)
	require.Equal(t, server.Name, s.Labels[promserver.LabelConfig])
	require.Equal(t, corev1.SecretTypeOpaque, s.Type)
	require.Equal(t, []string{"prometheus.yaml.gz"}, slices.Collect(maps.Keys(s.Data)))
	require.Empty(t, s.StringData)
	config := promfixture.Gunzip(t, s.Data[promserver.ConfigSecretKey])
	require.Equal(t, string(want), string(config))
	sum := sha256.Sum256(config)
	require.Equal(t, hex.EncodeToString(sum[:]), out.ConfigHash)

	// The workload, as renderWorkload and renderShard render it for as
	// many rule shards, a StatefulSet per shard, and reading the Secret:
	// through the API server, or mounting it.
	web, err := promserver.RenderWeb(in)
	require.NoError(t, err)
	require.Equal(t, web.Secret, out.WebConfigSecret)
	require.Subset(t, out.SecretRefs, web.Refs)
	pods := promserver.PodOptions{WorkloadOptions: opts, RuleShards: len(shards), Reload: web.Reload}
	if server.Layout.Operator() { // The pods roll on the web configuration's hash.
		sum := sha256.Sum256(web.Secret.Data[promserver.WebConfigSecretKey])
		pods.WebConfigHash = hex.EncodeToString(sum[:])
	}
	svc, sts := promserver.RenderWorkload(server, pods)
	require.Equal(t, svc, out.Service)
	require.Len(t, out.StatefulSets, promserver.ShardCount(server))
	require.Equal(t, sts, out.StatefulSets[0])
	for i, sts := range out.StatefulSets {
		require.Equal(t, promserver.RenderShard(server, pods, i), sts)
	}
	role, binding := promserver.RenderAccess(server, 0)
	require.Equal(t, role, out.Role)
	require.Equal(t, binding, out.RoleBinding)
	if promserver.APISource(server) {
		require.Contains(t, out.StatefulSets[0].Spec.Template.Spec.Containers[1].Args, "--config-secret="+s.Namespace+"/"+s.Name)
	} else {
		require.Contains(t, out.StatefulSets[0].Spec.Template.Spec.Volumes, corev1.Volume{
			Name:         "config",
			VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s.Name}},
		})
	}
	return config
}

// selectedIn returns the objects of objs that Selected selects.
func selectedIn[T metav1.Object](t *testing.T, server *v1alpha1.PrometheusServer, sel, nsSelector *metav1.LabelSelector, objs []T, namespaces map[string]labels.Set) []T {
	t.Helper()
	var selected []T
	for _, o := range objs {
		ok, err := selector.Selects(server.Namespace, sel, nsSelector, o, namespaces)
		require.NoError(t, err)
		if ok {
			selected = append(selected, o)
		}
	}
	return selected
}

// TestRenderDeterministic renders each case, and many objects, again with
// the candidates shuffled, through a new ruleCache and through one that
// rendered them before, and checks that the objects are the same, to the
// byte of the gzipped configuration, and that the input is left untouched.
func TestRenderDeterministic(t *testing.T) {
	cases := map[string]func(*testing.T) promserver.Inputs{"many": func(*testing.T) promserver.Inputs { return benchInputs(60, 60) }}
	for _, path := range renderCases(t) {
		if name := strings.TrimSuffix(filepath.Base(path), ".yaml"); !strings.HasPrefix(name, "error-") {
			cases[name] = func(t *testing.T) promserver.Inputs { return loadInputs(t, path) }
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for name, load := range cases {
		t.Run(name, func(t *testing.T) {
			in := load(t)
			want, err := promserver.Render(in, testOptions(), nil)
			require.NoError(t, err)
			var cache promserver.RuleCache
			for i := range 4 {
				shuffled := in
				shuffled.ServiceMonitors = promfixture.Shuffle(rng, in.ServiceMonitors)
				shuffled.PodMonitors = promfixture.Shuffle(rng, in.PodMonitors)
				shuffled.Probes = promfixture.Shuffle(rng, in.Probes)
				shuffled.ScrapeConfigs = promfixture.Shuffle(rng, in.ScrapeConfigs)
				shuffled.Rules = promfixture.Shuffle(rng, in.Rules)
				got, err := promserver.Render(shuffled, testOptions(), &cache)
				require.NoError(t, err)
				require.Empty(t, cmp.Diff(want, got), "render %d", i)
			}
			require.Empty(t, cmp.Diff(load(t), in), "render changed its input")
		})
	}
}

// TestRenderRollsPodsOnlyForThePods changes one input at a time and checks
// what changes: a change of the monitors or of the server's scrape settings
// reaches the configuration, its hash and its Secret but not the pods'
// input hash (the config-reloader applies it); a change of the rules
// reaches the rule shards only; a change of the pods rolls them and leaves
// the configuration alone.
func TestRenderRollsPodsOnlyForThePods(t *testing.T) {
	path := filepath.Join("testdata", "render", "basic.yaml")
	base, err := promserver.Render(loadInputs(t, path), testOptions(), nil)
	require.NoError(t, err)

	for _, tc := range []struct {
		name                string
		change              func(*promserver.Inputs, *promserver.WorkloadOptions)
		config, rules, pods bool
	}{
		{name: "nothing", change: func(*promserver.Inputs, *promserver.WorkloadOptions) {}},
		{name: "service monitor interval", config: true, change: func(in *promserver.Inputs, _ *promserver.WorkloadOptions) {
			find(t, in.ServiceMonitors, "monitoring", "node-exporter").Spec.Endpoints[0].Interval = "10s"
		}},
		{name: "service monitor selected", config: true, change: func(in *promserver.Inputs, _ *promserver.WorkloadOptions) {
			find(t, in.ServiceMonitors, "monitoring", "unlabelled").Labels = map[string]string{"team": "platform"}
		}},
		{name: "service monitor not selected", change: func(in *promserver.Inputs, _ *promserver.WorkloadOptions) {
			find(t, in.ServiceMonitors, "apps", "api").Spec.Endpoints[0].Port = "web"
		}},
		{name: "credentials in a Secret", config: true, change: func(in *promserver.Inputs, _ *promserver.WorkloadOptions) {
			in.Secrets["monitoring/scrape-creds"].Data["password"] = []byte("rotated")
		}},
		{name: "server scrape interval", config: true, change: func(in *promserver.Inputs, _ *promserver.WorkloadOptions) {
			in.Server.Spec.ScrapeInterval = "30s"
		}},
		{name: "server external labels", config: true, change: func(in *promserver.Inputs, _ *promserver.WorkloadOptions) {
			in.Server.Spec.ExternalLabels["region"] = "eu"
		}},
		{name: "rule expression", rules: true, change: func(in *promserver.Inputs, _ *promserver.WorkloadOptions) {
			find(t, in.Rules, "apps", "api").Spec.Groups[0].Rules[0].Expr = intstr.FromString("vector(1)")
		}},
		{name: "rule left out", rules: true, change: func(in *promserver.Inputs, _ *promserver.WorkloadOptions) {
			find(t, in.Rules, "apps", "api").Labels = map[string]string{"x": "y"}
			in.Server.Spec.RuleSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "x", Operator: metav1.LabelSelectorOpDoesNotExist}}}
		}},
		{name: "replicas", change: func(in *promserver.Inputs, _ *promserver.WorkloadOptions) {
			in.Server.Spec.Replicas = new(int32(3))
		}},
		{name: "prometheus image", pods: true, change: func(in *promserver.Inputs, _ *promserver.WorkloadOptions) {
			in.Server.Spec.Image = "quay.io/prometheus/prometheus:v3.11.0"
		}},
		{name: "default reloader image", pods: true, change: func(_ *promserver.Inputs, opts *promserver.WorkloadOptions) {
			opts.DefaultReloaderImage = "ghcr.io/podreload/config-reloader:v0.2.0"
		}},
		{name: "retention", pods: true, change: func(in *promserver.Inputs, _ *promserver.WorkloadOptions) {
			in.Server.Spec.Retention = "30d"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, opts := loadInputs(t, path), testOptions()
			tc.change(&in, &opts)
			got, err := promserver.Render(in, opts, nil)
			require.NoError(t, err)
			require.Empty(t, got.Rejected)

			require.Equal(t, tc.config, got.ConfigHash != base.ConfigHash, "config hash")
			require.Equal(t, tc.config, !bytes.Equal(base.ConfigSecret.Data[promserver.ConfigSecretKey], got.ConfigSecret.Data[promserver.ConfigSecretKey]), "config Secret")
			require.Equal(t, tc.rules, !slices.EqualFunc(base.RuleShards, got.RuleShards, func(a, b *corev1.ConfigMap) bool {
				return a.Name == b.Name && maps.EqualFunc(a.BinaryData, b.BinaryData, bytes.Equal)
			}), "rule shards")
			annotation := func(o *promserver.Objects) string {
				return o.StatefulSets[0].Spec.Template.Annotations[promserver.AnnotationInputHash]
			}
			require.Equal(t, tc.pods, annotation(got) != annotation(base), "input hash")
			if !tc.pods {
				require.Equal(t, base.StatefulSets[0].Spec.Template, got.StatefulSets[0].Spec.Template)
			}
		})
	}
}

// find returns the object of objs with that namespace and name.
func find[T metav1.Object](t *testing.T, objs []T, namespace, name string) T {
	t.Helper()
	i := slices.IndexFunc(objs, func(o T) bool { return o.GetNamespace() == namespace && o.GetName() == name })
	require.GreaterOrEqual(t, i, 0, "no %s/%s", namespace, name)
	return objs[i]
}

// TestRenderNil covers the errors no fixture can hold.
func TestRenderNil(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   func(*promserver.Inputs)
		want string
	}{
		{name: "server", in: func(in *promserver.Inputs) { in.Server = nil }, want: "render: no PrometheusServer"},
		{name: "service monitor", in: func(in *promserver.Inputs) { in.ServiceMonitors = append(in.ServiceMonitors, nil) }, want: "select ServiceMonitors: nil ServiceMonitor"},
		{name: "pod monitor", in: func(in *promserver.Inputs) { in.PodMonitors = append(in.PodMonitors, nil) }, want: "select PodMonitors: nil PodMonitor"},
		{name: "rule", in: func(in *promserver.Inputs) { in.Rules = append(in.Rules, nil) }, want: "select PrometheusRules: nil PrometheusRule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := loadInputs(t, filepath.Join("testdata", "render", "basic.yaml"))
			tc.in(&in)
			out, err := promserver.Render(in, testOptions(), nil)
			require.EqualError(t, err, tc.want)
			require.Nil(t, out)
		})
	}
}

// TestRenderSpecErrorSecretRefs checks that an error of the server's own
// configuration tells the Secrets looked up before it, so that the caller
// can read them and render again, or wait for them.
func TestRenderSpecErrorSecretRefs(t *testing.T) {
	ref := func(name, key string) corev1.SecretKeySelector {
		return corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
	}
	for _, tc := range []struct {
		name    string
		secrets map[string]*corev1.Secret
		want    string
	}{
		{
			name: "missing Secret",
			want: `render config: spec.remoteWrite[0].basicAuth: secret "monitoring/rw" not found (looking for key "user")`,
		},
		{
			name:    "missing key",
			secrets: map[string]*corev1.Secret{"monitoring/rw": {Data: map[string][]byte{"user": []byte("u")}}},
			want:    `render config: spec.remoteWrite[0].basicAuth: secret "monitoring/rw" has no key "password"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := loadInputs(t, filepath.Join("testdata", "render", "basic.yaml"))
			in.Server = in.Server.DeepCopy()
			in.Server.Spec.RemoteWrite = []v1alpha1.RemoteWriteSpec{{
				URL:       "https://metrics.example.com/api/v1/write",
				BasicAuth: &monitoringv1.BasicAuth{Username: ref("rw", "user"), Password: ref("rw", "password")},
			}}
			in.Secrets = tc.secrets
			out, err := promserver.Render(in, testOptions(), nil)
			require.Nil(t, out)
			require.EqualError(t, err, tc.want)
			var specErr *promserver.SpecError
			require.ErrorAs(t, err, &specErr)
			require.Equal(t, []store.Ref{{Kind: store.Secret, Namespace: "monitoring", Name: "rw"}}, specErr.SecretRefs)
		})
	}
}

// BenchmarkRender renders 1,000 ServiceMonitors of 3 endpoints each and
// 1,000 PrometheusRules of 10 rules each for one server, with a new
// ruleCache each time: everything is rendered and validated.
func BenchmarkRender(b *testing.B) {
	in := benchInputs(1000, 1000)
	opts := testOptions()
	var size int
	b.ReportAllocs()
	for b.Loop() {
		out, err := promserver.Render(in, opts, new(promserver.RuleCache))
		if err != nil {
			b.Fatal(err)
		}
		if len(out.Rejected) > 0 || !maps.Equal(out.Selected, map[string]int{monitoringv1.ServiceMonitorsKind: 1000, monitoringv1.PodMonitorsKind: 0,
			monitoringv1.ProbesKind: 0, monitoringv1alpha1.ScrapeConfigsKind: 0, promserver.KindPrometheusRule: 1000}) || len(out.RuleShards) == 0 {
			b.Fatalf("selected %+v, %d shards, rejected %v", out.Selected, len(out.RuleShards), out.Rejected)
		}
		size = len(out.ConfigSecret.Data[promserver.ConfigSecretKey])
	}
	b.ReportMetric(float64(size), "secret-bytes")
}

// benchInputs selects, from every namespace, the monitors of
// promfixture.BenchConfigInput (monitors ServiceMonitors of 3 endpoints) and rules
// PrometheusRules of promfixture.BenchRules.
func benchInputs(monitors, rules int) promserver.Inputs {
	cfg := promfixture.BenchConfigInput(monitors, 3)
	server := cfg.Server
	all := &metav1.LabelSelector{}
	server.Spec.ServiceMonitorSelector, server.Spec.ServiceMonitorNamespaceSelector = all, all
	server.Spec.RuleSelector, server.Spec.RuleNamespaceSelector = all, all
	in := promserver.Inputs{
		Server:          server,
		Namespaces:      map[string]labels.Set{},
		ServiceMonitors: cfg.ServiceMonitors,
		Rules:           promfixture.BenchRules(rules),
		Secrets:         cfg.Secrets,
	}
	for _, o := range in.ServiceMonitors {
		in.Namespaces[o.Namespace] = labels.Set{"kubernetes.io/metadata.name": o.Namespace}
	}
	for _, o := range in.Rules {
		in.Namespaces[o.Namespace] = labels.Set{"kubernetes.io/metadata.name": o.Namespace}
	}
	return in
}

// loadInputs reads a bundle of YAML documents: at most one
// PrometheusServer, Namespaces, ServiceMonitors, PodMonitors, Probes,
// ScrapeConfigs, PrometheusRules and Secrets. Unknown fields are errors, so a typo in a
// fixture cannot go unnoticed.
func loadInputs(t *testing.T, path string) promserver.Inputs {
	t.Helper()
	in := promserver.Inputs{Namespaces: map[string]labels.Set{}, Secrets: map[string]*corev1.Secret{}, ConfigMaps: map[string]*corev1.ConfigMap{}}
	promfixture.ReadDocuments(t, path, func(kind string, doc []byte) {
		switch kind {
		case v1alpha1.Kind:
			require.Nil(t, in.Server, "two PrometheusServers in %s", path)
			in.Server = promfixture.DecodeDocument[v1alpha1.PrometheusServer](t, doc)
			// A fixture in prometheus-operator's layout stands for a
			// Prometheus object converted; it says so with the annotation
			// the layout once was (annotationLayout).
			if in.Server.Annotations[promserver.AnnotationLayout] == "prometheus-operator" {
				in.Layout = promserver.OperatorsLayout
			}
		case "Namespace":
			ns := promfixture.DecodeDocument[corev1.Namespace](t, doc)
			in.Namespaces[ns.Name] = labels.Set(ns.Labels)
		case "Secret":
			s := promfixture.DecodeSecret(t, doc)
			in.Secrets[s.Namespace+"/"+s.Name] = s
		case "ConfigMap":
			cm := promfixture.DecodeDocument[corev1.ConfigMap](t, doc)
			in.ConfigMaps[cm.Namespace+"/"+cm.Name] = cm
		default:
			k, ok := promserver.SelectedKindOf(kind)
			require.True(t, ok, "unknown kind %q in %s", kind, path)
			obj := k.Object.DeepCopyObject().(client.Object)
			require.NoError(t, sigsyaml.UnmarshalStrict(doc, obj))
			k.Add(&in, obj)
		}
	})
	return in
}

// TestConfigGzipKept: a render of the same configuration reuses the
// gzipped bytes of the last one, without compressing again; another
// configuration is compressed.
func TestConfigGzipKept(t *testing.T) {
	cache := new(promserver.RuleCache)
	first, err := promserver.Render(benchInputs(3, 1), testOptions(), cache)
	require.NoError(t, err)
	again, err := promserver.Render(benchInputs(3, 1), testOptions(), cache)
	require.NoError(t, err)
	gz, kept := first.ConfigSecret.Data[promserver.ConfigSecretKey], again.ConfigSecret.Data[promserver.ConfigSecretKey]
	require.Same(t, &gz[0], &kept[0], "compressed again")
	other, err := promserver.Render(benchInputs(4, 1), testOptions(), cache)
	require.NoError(t, err)
	require.NotEqual(t, first.ConfigHash, other.ConfigHash)
	require.NotEqual(t, gz, other.ConfigSecret.Data[promserver.ConfigSecretKey])
	require.Contains(t, string(promfixture.Gunzip(t, other.ConfigSecret.Data[promserver.ConfigSecretKey])), "serviceMonitor/")
}
