package prometheusserver

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/controller/compat"
	"github.com/podreload/podreload/controller/configsecret"
	"github.com/podreload/podreload/controller/promcfg"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/promserver/promargs"
	"github.com/podreload/podreload/internal/testenv/promfixture"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// layoutCases returns the inputs under testdata/layout: servers in
// prometheus-operator's layout, <case>.yaml, with the expected objects in
// <case>.golden.
func layoutCases(t *testing.T) []string {
	t.Helper()
	cases, err := filepath.Glob(filepath.Join("testdata", "layout", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, cases)
	return cases
}

// TestRenderOperatorLayout renders each server of testdata/layout,
// compares every object with its golden file, checks them against what
// prometheus-operator v0.93.1 writes (docs/takeover.md; checkOperatorLayout)
// and has the real promtool check the configuration, the rule files and
// the web configuration.
func TestRenderOperatorLayout(t *testing.T) {
	promtool, err := toolbin.Path("promtool")
	require.NoError(t, err)
	for _, path := range layoutCases(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			in := loadInputs(t, path)
			require.True(t, in.Layout.Operator(), "%s: not in prometheus-operator's layout", path)
			out, err := promserver.Render(in, testOptions(), nil)
			require.NoError(t, err)
			require.Empty(t, out.Rejected)
			require.Nil(t, out.Oversized)

			golden(t, strings.TrimSuffix(path, ".yaml")+".golden", layoutGolden(t, out))

			config := checkOperatorLayout(t, promserver.Target{PrometheusServer: in.Server, Layout: in.Layout}, out)
			promfixture.CheckConfig(t, promtool, config)
			checkPlainRules(t, out.RuleShards)
			checkWeb(t, promtool, in, out)
		})
	}
}

// layoutGolden is the content of a layout golden file: the configuration
// gunzipped, then every object as YAML, the config Secret's data and the
// web config Secret's as text.
func layoutGolden(t *testing.T, out *promserver.Objects) []byte {
	t.Helper()
	var b bytes.Buffer
	doc := func(o any) {
		y, err := sigsyaml.Marshal(o)
		require.NoError(t, err)
		b.WriteString("---\n")
		b.Write(y)
	}
	fmt.Fprintf(&b, "# %s, gunzipped from the Secret %s/%s:\n", promserver.ConfigSecretKey, out.ConfigSecret.Namespace, out.ConfigSecret.Name)
	b.Write(promfixture.Gunzip(t, out.ConfigSecret.Data[promserver.ConfigSecretKey]))
	s := out.ConfigSecret.DeepCopy()
	s.Data, s.StringData = nil, map[string]string{promserver.ConfigSecretKey: "(the configuration above, gzipped)"}
	doc(s)
	w := out.WebConfigSecret.DeepCopy()
	w.Data, w.StringData = nil, map[string]string{promserver.WebConfigSecretKey: string(out.WebConfigSecret.Data[promserver.WebConfigSecretKey])}
	doc(w)
	for _, cm := range out.RuleShards {
		doc(cm)
	}
	doc(out.Role)
	doc(out.RoleBinding)
	doc(out.Service)
	for _, sts := range out.StatefulSets {
		doc(sts)
	}
	return b.Bytes()
}

// checkOperatorLayout checks out, rendered for server in
// prometheus-operator's layout, against prometheus-operator's names,
// labels, selectors, volumes and flags, and returns the configuration.
func checkOperatorLayout(t *testing.T, server promserver.Target, out *promserver.Objects) []byte {
	t.Helper()
	name, ns := server.Name, server.Namespace
	prefix := "prometheus-" + name
	managed := map[string]string{"managed-by": "prometheus-operator", "app.kubernetes.io/managed-by": "prometheus-operator"}

	// Names and labels of the Secrets and ConfigMaps.
	require.Equal(t, prefix, out.ConfigSecret.Name)
	require.Equal(t, []string{"prometheus.yaml.gz"}, slices.Collect(maps.Keys(out.ConfigSecret.Data)))
	require.Subset(t, out.ConfigSecret.Labels, managed)
	require.Empty(t, out.ConfigParts, "no config parts: prometheus-operator's pods cannot join them")
	require.Equal(t, prefix+"-web-config", out.WebConfigSecret.Name)
	require.Equal(t, []string{"web-config.yaml"}, slices.Collect(maps.Keys(out.WebConfigSecret.Data)))
	require.Subset(t, out.WebConfigSecret.Labels, managed)
	require.NotEmpty(t, out.RuleShards, "prometheus-operator writes a rule ConfigMap, empty when no rule is selected")
	files := map[string]string{}
	for i, cm := range out.RuleShards {
		require.Equal(t, prefix+"-rulefiles-"+strconv.Itoa(i), cm.Name)
		require.Equal(t, ns, cm.Namespace)
		require.Subset(t, cm.Labels, managed)
		require.Equal(t, name, cm.Labels["prometheus-name"])
		require.NotContains(t, cm.Labels, promserver.LabelRuleFiles, "another PrometheusServer's reloaders of the same name would select it")
		require.Empty(t, cm.BinaryData, "%s: rule files plain in data, as prometheus-operator's pods read them", cm.Name)
		size := 0
		for k, v := range cm.Data {
			require.Regexp(t, `^[a-z0-9-]+-[a-z0-9-]+-[0-9a-f-]{36}\.yaml$`, k, "<namespace>-<name>-<uid>.yaml")
			size += len(v)
			files[cm.Name+"/"+k] = v
		}
		require.LessOrEqual(t, size, 512<<10, "%s: at most half a Secret's size of values", cm.Name)
	}
	require.Equal(t, contract.Sum(out.ConfigSecret.Data[promserver.ConfigSecretKey], files), out.ContentHash, "the content hash covers the plain files")
	require.Equal(t, prefix+"-podreload", out.Role.Name)
	require.Equal(t, prefix+"-podreload", out.RoleBinding.Name)

	// The governing Service, shared by every Prometheus of the namespace.
	svc := out.Service
	require.Equal(t, "prometheus-operated", svc.Name)
	require.Equal(t, map[string]string{"operated-prometheus": "true", "managed-by": "prometheus-operator", "app.kubernetes.io/managed-by": "prometheus-operator"}, svc.Labels)
	require.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP)
	require.Equal(t, map[string]string{"app.kubernetes.io/name": "prometheus"}, svc.Spec.Selector)
	require.Equal(t, []corev1.ServicePort{{Name: "web", Port: 9090, TargetPort: intstr.FromString("web")}}, svc.Spec.Ports)

	config := promfixture.Gunzip(t, out.ConfigSecret.Data[promserver.ConfigSecretKey])
	var cfg struct {
		Global struct {
			ExternalLabels map[string]string `json:"external_labels"`
		} `json:"global"`
		RuleFiles []string       `json:"rule_files"`
		Storage   map[string]any `json:"storage"`
	}
	require.NoError(t, sigsyaml.Unmarshal(config, &cfg))
	require.Equal(t, ns+"/"+name, cfg.Global.ExternalLabels["prometheus"])
	require.Equal(t, "$(POD_NAME)", cfg.Global.ExternalLabels["prometheus_replica"])
	if server.Spec.RuleSelector == nil {
		require.Empty(t, cfg.RuleFiles, "no rule_files without a rule selector")
	} else {
		require.GreaterOrEqual(t, len(cfg.RuleFiles), max(3, len(out.RuleShards)))
		want := make([]string, len(cfg.RuleFiles))
		for i := range want {
			want[i] = "/etc/prometheus/rules/" + prefix + "-rulefiles-" + strconv.Itoa(i) + "/*.yaml"
		}
		require.ElementsMatch(t, want, cfg.RuleFiles)
	}
	if promargs.RetentionInConfig(server.Spec) {
		require.Contains(t, cfg.Storage, "tsdb")
	} else {
		require.Empty(t, cfg.Storage)
	}

	require.Len(t, out.StatefulSets, promserver.ShardCount(server))
	web := sha256.Sum256(out.WebConfigSecret.Data[promserver.WebConfigSecretKey])
	for shard, sts := range out.StatefulSets {
		checkOperatorStatefulSet(t, server, shard, sts, cfg.RuleFiles)
		require.Equal(t, hex.EncodeToString(web[:]), sts.Spec.Template.Annotations[promserver.AnnotationWebConfig], "the pods roll when the web configuration changes")
	}
	return config
}

// checkOperatorStatefulSet checks the StatefulSet of a shard of server in
// prometheus-operator's layout.
func checkOperatorStatefulSet(t *testing.T, server promserver.Target, shard int, sts *appsv1.StatefulSet, ruleFiles []string) {
	t.Helper()
	name := server.Name
	want := "prometheus-" + name
	if shard > 0 {
		want += "-shard-" + strconv.Itoa(shard)
	}
	require.Equal(t, want, sts.Name)
	require.Equal(t, "prometheus-operated", sts.Spec.ServiceName)
	selector := map[string]string{
		"app.kubernetes.io/managed-by": "prometheus-operator",
		"app.kubernetes.io/name":       "prometheus",
		"app.kubernetes.io/instance":   name,
		"operator.prometheus.io/name":  name,
		"prometheus":                   name,
		"operator.prometheus.io/shard": strconv.Itoa(shard),
	}
	require.Equal(t, selector, sts.Spec.Selector.MatchLabels)
	require.Subset(t, sts.Labels, selector)
	require.Subset(t, sts.Labels, map[string]string{"managed-by": "prometheus-operator", "operator.prometheus.io/mode": "server"})
	sel, err := labels.Parse("managed-by in (prometheus-operator),operator.prometheus.io/shard,operator.prometheus.io/name,operator.prometheus.io/mode in (server)")
	require.NoError(t, err)
	require.True(t, sel.Matches(labels.Set(sts.Labels)), "prometheus-operator's informer sees the StatefulSet")
	for k := range sts.Annotations {
		require.False(t, strings.HasPrefix(k, "kubectl.kubernetes.io/") || k == promserver.AnnotationLayout, "annotation %s on the StatefulSet", k)
	}
	for k, v := range server.Annotations {
		if !strings.HasPrefix(k, "kubectl.kubernetes.io/") && k != promserver.AnnotationLayout {
			require.Equal(t, v, sts.Annotations[k], k)
		}
	}
	tmpl := sts.Spec.Template
	require.Subset(t, tmpl.Labels, selector)
	require.Equal(t, strings.TrimPrefix(cmp.Or(server.Spec.Version, "v3.13.1"), "v"), tmpl.Labels["app.kubernetes.io/version"])
	require.Equal(t, "prometheus", tmpl.Annotations["kubectl.kubernetes.io/default-container"])
	require.NotEmpty(t, tmpl.Annotations[promserver.AnnotationInputHash], "the pods roll on the input hash")
	require.Equal(t, server.Spec.SecurityContext, tmpl.Spec.SecurityContext, "an unset securityContext stays unset")

	containers := map[string]corev1.Container{}
	for _, c := range slices.Concat(tmpl.Spec.InitContainers, tmpl.Spec.Containers) {
		containers[c.Name] = c
	}
	prometheus := containers["prometheus"]
	require.Equal(t, []corev1.ContainerPort{{Name: "web", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}}, prometheus.Ports)
	if tmpl.Spec.SecurityContext == nil {
		for _, r := range []string{"init-config-reloader", "config-reloader"} {
			sc := containers[r].SecurityContext
			require.Equal(t, []any{int64(65534), int64(65534)}, []any{*sc.RunAsUser, *sc.RunAsGroup}, "%s runs as Prometheus' user, which it signals", r)
		}
		require.Nil(t, prometheus.SecurityContext.RunAsUser, "Prometheus runs as its image's user")
	}
	prefix := cmp.Or(server.Spec.RoutePrefix, "/")
	require.Contains(t, prometheus.Args, "--web.route-prefix="+prefix)
	require.Contains(t, prometheus.Args, "--web.config.file=/etc/prometheus/web_config/web-config.yaml")
	require.Contains(t, prometheus.VolumeMounts, corev1.VolumeMount{Name: "web-config", MountPath: "/etc/prometheus/web_config/web-config.yaml", SubPath: "web-config.yaml", ReadOnly: true},
		"each generation of pods keeps its own web configuration during a roll")
	require.Contains(t, prometheus.Args, "--storage.tsdb.path=/prometheus")
	require.Equal(t, server.Spec.Reloader.ReloadMethod != "signal", slices.Contains(prometheus.Args, "--web.enable-lifecycle"))
	for _, p := range []struct {
		probe                    *corev1.Probe
		path                     string
		period, failure, timeout int32
	}{
		{prometheus.StartupProbe, "/-/ready", 15, 60, 3},
		{prometheus.ReadinessProbe, "/-/ready", 5, 3, 3},
		{prometheus.LivenessProbe, "/-/healthy", 5, 6, 3},
	} {
		require.NotNil(t, p.probe, p.path)
		require.Equal(t, promserver.WebPath(server.Spec, p.path), p.probe.HTTPGet.Path)
		require.Equal(t, intstr.FromString("web"), p.probe.HTTPGet.Port)
		require.Equal(t, []int32{p.period, p.failure, p.timeout}, []int32{p.probe.PeriodSeconds, p.probe.FailureThreshold, p.probe.TimeoutSeconds}, p.path)
	}

	// The data volume: prometheus-<name>-db or the claim template's name,
	// at /prometheus, with the sub-path prometheus-db whenever spec.storage
	// is set; the reloaders' state on the claim, in the same directory.
	db := "prometheus-" + name + "-db"
	if st := server.Spec.Storage; st != nil && st.VolumeClaimTemplate != nil && st.VolumeClaimTemplate.Name != "" {
		db = st.VolumeClaimTemplate.Name
	}
	mount := corev1.VolumeMount{Name: db, MountPath: "/prometheus"}
	if server.Spec.Storage != nil {
		mount.SubPath = "prometheus-db"
	}
	require.Contains(t, prometheus.VolumeMounts, mount)
	claim := server.Spec.Storage != nil && server.Spec.Storage.VolumeClaimTemplate != nil
	if claim {
		require.Len(t, sts.Spec.VolumeClaimTemplates, 1)
		c := sts.Spec.VolumeClaimTemplates[0]
		require.Equal(t, db, c.Name)
		require.Equal(t, orNil(server.Spec.Storage.VolumeClaimTemplate.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}), c.Spec.AccessModes)
		for _, r := range []string{"init-config-reloader", "config-reloader"} {
			require.Contains(t, containers[r].VolumeMounts, mount, r)
			require.Contains(t, containers[r].Args, "--state-dir="+promserver.ReloaderStateDir, r)
		}
	} else {
		require.Empty(t, sts.Spec.VolumeClaimTemplates)
		require.True(t, slices.ContainsFunc(tmpl.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == db && v.EmptyDir != nil }), "emptyDir %s", db)
	}

	// The reloaders write each rule ConfigMap into the directory of its
	// name under /etc/prometheus/rules, where the globs find the files.
	require.Contains(t, prometheus.VolumeMounts, corev1.VolumeMount{Name: "rules", MountPath: promserver.RulesMountPath, ReadOnly: true})
	for i, glob := range ruleFiles {
		ok, err := filepath.Match(glob, promserver.RulesMountPath+"/"+promserver.RuleShardName(server, i)+"/apps-api-uid.yaml")
		require.NoError(t, err)
		require.True(t, ok, glob)
	}
	reloader := containers["config-reloader"]
	if promserver.APISource(server) {
		require.Contains(t, reloader.Args, "--rules-configmap-selector=prometheus-name="+name)
		require.Contains(t, reloader.Args, "--config-secret="+server.Namespace+"/prometheus-"+name)
	} else {
		require.Contains(t, reloader.Args, "--config-file=/etc/prometheus/config/prometheus.yaml.gz")
		require.Contains(t, reloader.Args, "--rules-input-dir="+promserver.RuleConfigMapsMountPath+"/"+promserver.RuleShardName(server, 0))
	}
}

// orNil is a, or b when a is nil.
func orNil[T any](a, b []T) []T {
	if a == nil {
		return b
	}
	return a
}

// checkPlainRules runs the real promtool on every plain rule file of
// shards (promfixture.CheckRules, which reads them gzipped).
func checkPlainRules(t *testing.T, shards []*corev1.ConfigMap) {
	t.Helper()
	gzipped := make([]*corev1.ConfigMap, len(shards))
	for i, cm := range shards {
		gzipped[i] = cm.DeepCopy()
		gzipped[i].Data, gzipped[i].BinaryData = nil, map[string][]byte{}
		for k, v := range cm.Data {
			gzipped[i].BinaryData[k+".gz"] = gzipText(t, v)
		}
	}
	promfixture.CheckRules(t, gzipped)
}

// TestOperatorLayoutNotSplit checks that a configuration of
// prometheus-operator's layout too large for one Secret is Oversized, as
// one that cannot be split is, and never split into parts, which
// prometheus-operator's pods cannot join.
func TestOperatorLayoutNotSplit(t *testing.T) {
	server := promserver.Target{PrometheusServer: testServer(), Layout: promserver.OperatorsLayout}
	// Random bytes do not compress: more than a Secret gzipped.
	head := make([]byte, corev1.MaxSecretSize+1)
	_, err := rand.Read(head)
	require.NoError(t, err)
	parts := promcfg.Parts{Jobs: &configsecret.Stream{}}
	objs, err := promserver.RenderConfigSecrets(server, head, parts, nil, new(promserver.RuleCache))
	require.NoError(t, err)
	require.Nil(t, objs.ConfigSecret)
	require.Empty(t, objs.ConfigParts)
	require.NotNil(t, objs.Oversized)
	require.ErrorContains(t, objs.Oversized, "more than the 1048576 bytes a Secret holds (prometheus-operator's layout cannot split it into parts)")

	// Past what a config-reloader renders, its jobs are being split.
	jobs := &configsecret.Stream{Monitors: []configsecret.Monitor{{Kind: "ServiceMonitor", Namespace: "default", Name: "big"}}}
	require.NoError(t, jobs.Add([]configsecret.Job{{Name: "big", Item: make([]byte, configsecret.MaxConfigBytes+1)}}))
	require.True(t, jobs.Splitting())
	objs, err = promserver.RenderConfigSecrets(server, []byte("global: {}\n"), promcfg.Parts{Jobs: jobs}, nil, new(promserver.RuleCache))
	require.NoError(t, err)
	require.Nil(t, objs.ConfigSecret)
	require.Empty(t, objs.ConfigParts)
	require.EqualError(t, objs.Oversized, "prometheus.yaml is more than the 16777216 bytes a config-reloader renders (prometheus-operator's layout cannot split it into parts)")

	// The same configuration in podreload's layout is split.
	server.Layout = promserver.PodreloadLayout
	objs, err = promserver.RenderConfigSecrets(server, []byte("global: {}\n"), parts, nil, new(promserver.RuleCache))
	require.NoError(t, err)
	require.NotNil(t, objs.ConfigSecret)
	require.Equal(t, "main-config", objs.ConfigSecret.Name)
}

// TestOperatorLayoutNotFromAnnotation checks that the layout is the
// one the render is given, never read from the server: a server of
// testdata/layout, annotated as its fixture is, rendered in podreload's
// layout renders the objects podreload always rendered (the other golden
// files prove it field by field): its own names.
func TestOperatorLayoutNotFromAnnotation(t *testing.T) {
	in := loadInputs(t, filepath.Join("testdata", "layout", "pvc-rules.yaml"))
	require.Equal(t, "prometheus-operator", in.Server.Annotations[promserver.AnnotationLayout])
	in.Layout = promserver.PodreloadLayout
	out, err := promserver.Render(in, testOptions(), nil)
	require.NoError(t, err)
	require.Equal(t, "main-config", out.ConfigSecret.Name)
	require.Equal(t, "main", out.Service.Name)
	require.Equal(t, "main", out.StatefulSets[0].Name)
	require.Equal(t, "main-rulefiles-0", out.RuleShards[0].Name)
	require.Empty(t, out.RuleShards[0].Data)
	require.Nil(t, out.WebConfigSecret)
}

// testLayoutDryRun has the real API server validate, with a server-side
// dry run, every object rendered for the servers of testdata/layout.
func (cp *controlPlane) testLayoutDryRun(t *testing.T) {
	cp.namespace(t, "layout", nil)
	for _, path := range layoutCases(t) {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".yaml"), func(t *testing.T) {
			in := loadInputs(t, path)
			in.Server = in.Server.DeepCopy()
			in.Server.Namespace = "layout"
			for _, r := range in.Rules {
				r.Namespace = "layout"
			}
			for k, s := range in.Secrets {
				s.Namespace = "layout"
				in.Secrets["layout/"+strings.SplitN(k, "/", 2)[1]] = s
			}
			out, err := promserver.Render(in, testOptions(), nil)
			require.NoError(t, err)
			objs := []client.Object{out.ConfigSecret, out.WebConfigSecret, out.Role, out.RoleBinding, out.Service}
			for _, cm := range out.RuleShards {
				objs = append(objs, cm)
			}
			for _, sts := range out.StatefulSets {
				objs = append(objs, sts)
			}
			for _, o := range objs {
				require.NoError(t, cp.c.Create(t.Context(), o, client.DryRunAll), "%T %s", o, o.GetName())
			}
		})
	}
}

// TestOperatorLayoutRolls changes one input at a time of a server in
// prometheus-operator's layout and checks what rolls the pods: a change of
// the web configuration, which they mount with a sub-path, does; a change
// of the rules, even one that adds ConfigMaps, does not (the API source
// reads them, the configuration names them).
func TestOperatorLayoutRolls(t *testing.T) {
	path := filepath.Join("testdata", "layout", "pvc-rules.yaml")
	base, err := promserver.Render(loadInputs(t, path), testOptions(), nil)
	require.NoError(t, err)
	hash := func(o *promserver.Objects) string {
		return o.StatefulSets[0].Spec.Template.Annotations[promserver.AnnotationInputHash]
	}
	for _, tc := range []struct {
		name   string
		change func(*promserver.Inputs)
		pods   bool
	}{
		{name: "nothing", change: func(*promserver.Inputs) {}},
		{name: "web configuration", pods: true, change: func(in *promserver.Inputs) {
			in.Server.Spec.Web = &monitoringv1.PrometheusWebSpec{WebConfigFileFields: monitoringv1.WebConfigFileFields{
				HTTPConfig: &monitoringv1.WebHTTPConfig{HTTP2: ptr.To(false)},
			}}
		}},
		{name: "rules in more ConfigMaps", change: func(in *promserver.Inputs) {
			// Two files of 300 KiB: two ConfigMaps.
			for _, r := range in.Rules {
				r.Spec.Groups[0].Rules[0].Labels = map[string]string{"padding": strings.Repeat("x", 300<<10)}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := loadInputs(t, path)
			tc.change(&in)
			got, err := promserver.Render(in, testOptions(), nil)
			require.NoError(t, err)
			require.Empty(t, got.Rejected)
			require.Equal(t, tc.pods, hash(got) != hash(base), "input hash")
			if tc.name == "rules in more ConfigMaps" {
				require.Len(t, got.RuleShards, 2)
			}
		})
	}
}

// TestOperatorLayoutCache renders a server in both layouts through one
// ruleCache, the rules in another order each time: each layout gets its
// own files (plain or gzipped), the same as through a new cache.
func TestOperatorLayoutCache(t *testing.T) {
	in := loadInputs(t, filepath.Join("testdata", "layout", "pvc-rules.yaml"))
	own := in
	own.Layout = promserver.PodreloadLayout
	var cache promserver.RuleCache
	for i, in := range []promserver.Inputs{in, own, in, own} {
		want, err := promserver.Render(in, testOptions(), nil)
		require.NoError(t, err)
		in.Rules = slices.Clone(in.Rules)
		slices.Reverse(in.Rules)
		got, err := promserver.Render(in, testOptions(), &cache)
		require.NoError(t, err)
		require.Equal(t, want.RuleShards, got.RuleShards, "render %d", i)
		require.Equal(t, in.Layout.Operator(), len(got.RuleShards[0].Data) == 2, "render %d: plain files", i)
	}
}

// TestOperatorVersion checks the version gates of prometheus-operator's
// layout at their boundaries: retention in the configuration from 3.11,
// the console flags for Prometheus 2, the web configuration file from
// 2.24; a pre-release comes before its release, as in semver.
func TestOperatorVersion(t *testing.T) {
	for _, tc := range []struct {
		version                string
		inConfig, console, web bool
	}{
		{version: "", inConfig: true, web: true},
		{version: "v3.11.0", inConfig: true, web: true},
		{version: "3.11.2", inConfig: true, web: true},
		{version: "v3.11.1-rc.0", inConfig: true, web: true},
		{version: "v3.11.0-rc.0", web: true},
		{version: "v3.10.9", web: true},
		{version: "v3.0.0-beta.0", web: true},
		{version: "v2.55.1+build", console: true, web: true},
		{version: "v2.24.0", console: true, web: true},
		{version: "v2.23.9", console: true},
		{version: "not-a-version", inConfig: true, web: true},
	} {
		t.Run(tc.version, func(t *testing.T) {
			spec := v1alpha1.PrometheusServerSpec{Version: tc.version}
			require.Equal(t, tc.inConfig, promargs.RetentionInConfig(spec), "retention in the configuration")
			args := compat.CommandLine(promserver.OperatorPrometheusArgs(promserver.Target{PrometheusServer: &v1alpha1.PrometheusServer{Spec: spec}, Layout: promserver.OperatorsLayout}))
			require.Equal(t, tc.console, slices.Contains(args, "--web.console.templates=/etc/prometheus/consoles"), "console flags")
			require.Equal(t, tc.web, slices.Contains(args, "--web.config.file=/etc/prometheus/web_config/web-config.yaml"), "web config file")
			require.Equal(t, !tc.inConfig, slices.Contains(args, "--storage.tsdb.retention.time=24h"), "retention flag")
		})
	}
}

// gzipText is s gzipped.
func gzipText(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, err := zw.Write([]byte(s))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}
