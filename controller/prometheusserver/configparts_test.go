package prometheusserver

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/apisource"
	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/controller/configsecret"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promcfg"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/envsubst"
	"github.com/podreload/podreload/internal/testenv/promfixture"
	"github.com/podreload/podreload/internal/testenv/toolbin"
	"github.com/podreload/podreload/reloader"
)

// bigMonitor is a ServiceMonitor whose bearer token, from a Secret of the
// same name, is size bytes of random text: gzip makes it about a quarter
// smaller, no more.
func bigMonitor(ns, name string, size int) (*monitoringv1.ServiceMonitor, *corev1.Secret) {
	rnd := rand.New(rand.NewChaCha8([32]byte([]byte(name + "-seed-of-32-bytes-padding-padding")[:32])))
	raw := make([]byte, size*3/4)
	for i := range raw {
		raw[i] = byte(rnd.Uint32())
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string][]byte{"token": []byte(base64.StdEncoding.EncodeToString(raw))}}
	sm := serviceMonitor(ns, name, nil)
	sm.Spec.Endpoints[0].Authorization = &monitoringv1.SafeAuthorization{Credentials: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "token",
	}}
	return sm, secret
}

// bigMonitors are ServiceMonitors whose configuration is too large for a
// Secret, and big-d, whose one job is too large for a part alone.
func bigMonitors(ns string) ([]*monitoringv1.ServiceMonitor, []*corev1.Secret) {
	var sms []*monitoringv1.ServiceMonitor
	var secrets []*corev1.Secret
	for _, m := range []struct {
		name string
		size int
	}{{"big-a", 450 << 10}, {"big-b", 550 << 10}, {"big-c", 500 << 10}, {"big-d", 800 << 10}} {
		sm, s := bigMonitor(ns, m.name, m.size)
		sms, secrets = append(sms, sm), append(secrets, s)
	}
	return sms, secrets
}

// renderSplit renders, with the real reloader as the volume source runs
// it, the config Secret main and its parts into a directory, checks the
// result with the real promtool, and returns the scrape job names of
// every file.
func renderSplit(t *testing.T, main *corev1.Secret, parts []*corev1.Secret) []string {
	t.Helper()
	promtool, err := toolbin.Path("promtool")
	require.NoError(t, err)
	dir := t.TempDir()
	cfgDir, partsDir, outDir := filepath.Join(dir, "config"), filepath.Join(dir, "config-parts"), filepath.Join(dir, "config_out")
	require.NoError(t, os.MkdirAll(cfgDir, 0o755))
	require.NoError(t, os.MkdirAll(partsDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cfgDir, promserver.ConfigSecretKey), main.Data[promserver.ConfigSecretKey], 0o644))
	for _, p := range parts {
		require.NoError(t, os.WriteFile(filepath.Join(partsDir, p.Name), p.Data[promserver.ConfigSecretKey], 0o644))
	}
	out := filepath.Join(outDir, promserver.ConfigEnvsubstFile)
	rel, err := reloader.New(nil, prometheus.NewRegistry(), reloader.Options{
		ConfigFile: filepath.Join(cfgDir, promserver.ConfigSecretKey), ConfigOutput: out, PartsDir: partsDir,
		Expander: envsubst.New(envsubst.Options{Lookup: func(name string) (string, bool) {
			return map[string]string{"POD_NAME": "main-0", "SHARD": "0"}[name], name == "POD_NAME" || name == "SHARD"
		}}),
	})
	require.NoError(t, err)
	require.NoError(t, rel.Render())
	b, err := exec.CommandContext(t.Context(), promtool, "check", "config", out).CombinedOutput()
	require.NoError(t, err, "promtool check config:\n%s", b)

	files := []string{out}
	for _, p := range parts {
		files = append(files, filepath.Join(outDir, contract.PartPath(p.Name)))
	}
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NotContains(t, string(b), "$(POD_NAME)", "%s expanded", f)
		names = append(names, jobs(t, string(b))...)
	}
	return names
}

// TestRenderSplit renders a configuration too large for a Secret: its
// jobs, the additional ones included, go into part Secrets that the
// config Secret names with their hashes, the reloader renders the whole,
// which promtool loads with every job, and a monitor whose job is too
// large for a part alone is left out.
func TestRenderSplit(t *testing.T) {
	srv := server("monitoring", "main", func(s *v1alpha1.PrometheusServerSpec) {
		s.ServiceMonitorSelector = &metav1.LabelSelector{}
		s.RuleSelector = &metav1.LabelSelector{}
		s.AdditionalScrapeConfigs = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "extra"}, Key: "jobs.yaml"}
	})
	sms, secrets := bigMonitors("monitoring")
	in := promserver.Inputs{
		Server:          srv,
		Namespaces:      map[string]labels.Set{"monitoring": nil},
		ServiceMonitors: append(sms, serviceMonitor("monitoring", "small", nil)),
		Rules:           []*monitoringv1.PrometheusRule{prometheusRule("monitoring", "rules", nil, "up")},
		Secrets:         map[string]*corev1.Secret{},
	}
	for _, s := range secrets {
		in.Secrets[s.Namespace+"/"+s.Name] = s
	}
	in.Secrets["monitoring/extra"] = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "extra"},
		Data: map[string][]byte{"jobs.yaml": []byte("- job_name: extra\n  static_configs:\n  - targets: [localhost:9100]\n")}}

	objs, err := promserver.Render(in, testOptions(), nil)
	require.NoError(t, err)
	require.Nil(t, objs.Oversized)
	require.NotNil(t, objs.ConfigSecret)
	require.Equal(t, []promcfg.Rejection{{Kind: monitoringv1.ServiceMonitorsKind, Namespace: "monitoring", Name: "big-d",
		Reason: "a scrape job of it is more than the 524288 bytes, gzipped, a part of the configuration holds"}}, objs.Rejected)
	var names []string
	for i, p := range objs.ConfigParts {
		names = append(names, p.Name)
		require.Equal(t, map[string]string{kube.LabelName: promserver.App, promserver.LabelInstance: "main", promserver.LabelConfig: "main", promserver.LabelConfigPart: fmt.Sprint(i + 1)}, p.Labels)
		require.LessOrEqual(t, len(p.Data[promserver.ConfigSecretKey]), 512<<10, "the largest part, gzipped")
	}
	// A job larger than 42 KiB gzipped is a part alone; the small ones
	// share the last.
	require.Equal(t, []string{"main-config-1", "main-config-2", "main-config-3", "main-config-4"}, names)
	for i, want := range [][]string{{"serviceMonitor/monitoring/big-a/0"}, {"serviceMonitor/monitoring/big-b/0"},
		{"serviceMonitor/monitoring/big-c/0"}, {"serviceMonitor/monitoring/small/0", "extra"}} {
		require.Equal(t, want, jobs(t, string(promfixture.Gunzip(t, objs.ConfigParts[i].Data[promserver.ConfigSecretKey]))), "part %d", i+1)
	}

	main := promfixture.Gunzip(t, objs.ConfigSecret.Data[promserver.ConfigSecretKey])
	var directives []byte
	for _, p := range objs.ConfigParts {
		directives = contract.AppendPartDirective(directives, p.Name, p.Data[promserver.ConfigSecretKey])
	}
	require.True(t, bytes.HasPrefix(main, directives), "the config names its parts and their hashes first:\n%.300s", main)
	sum := sha256.Sum256(main)
	require.Equal(t, hex.EncodeToString(sum[:]), objs.ConfigHash)
	require.Equal(t, promserver.ContentHash(objs.ConfigSecret.Data[promserver.ConfigSecretKey], objs.RuleShards), objs.ContentHash)

	var cfg struct {
		ScrapeConfigFiles []string         `yaml:"scrape_config_files"`
		ScrapeConfigs     []map[string]any `yaml:"scrape_configs"`
	}
	require.NoError(t, yaml.Unmarshal(main, &cfg))
	require.Equal(t, []string{"parts/main-config-1.yaml", "parts/main-config-2.yaml", "parts/main-config-3.yaml", "parts/main-config-4.yaml"}, cfg.ScrapeConfigFiles)
	require.Empty(t, cfg.ScrapeConfigs, "the jobs are all in the parts")

	got := renderSplit(t, objs.ConfigSecret, objs.ConfigParts)
	require.ElementsMatch(t, []string{
		"serviceMonitor/monitoring/big-a/0", "serviceMonitor/monitoring/big-b/0",
		"serviceMonitor/monitoring/big-c/0", "serviceMonitor/monitoring/small/0", "extra",
	}, got)

	// The same input renders the same bytes.
	again, err := promserver.Render(in, testOptions(), nil)
	require.NoError(t, err)
	require.Equal(t, objs.ConfigSecret, again.ConfigSecret)
	require.Equal(t, objs.ConfigParts, again.ConfigParts)

	// An additional job too large for a part alone is the server's error.
	_, huge := bigMonitor("monitoring", "huge", 800<<10)
	small := in.Secrets["monitoring/extra"]
	extra := small.DeepCopy()
	extra.Data["jobs.yaml"] = append(extra.Data["jobs.yaml"], "- job_name: huge\n  authorization:\n    credentials: "+string(huge.Data["token"])+"\n"...)
	in.Secrets["monitoring/extra"] = extra
	_, err = promserver.Render(in, testOptions(), nil)
	require.EqualError(t, err, `spec.additionalScrapeConfigs: job "huge" is more than the 524288 bytes, gzipped, a part of the configuration holds`)
	in.Secrets["monitoring/extra"] = small

	// Without big-d and big-b, it fits in the config Secret again.
	in.ServiceMonitors = slices.DeleteFunc(in.ServiceMonitors, func(sm *monitoringv1.ServiceMonitor) bool { return sm.Name == "big-b" || sm.Name == "big-d" })
	objs, err = promserver.Render(in, testOptions(), nil)
	require.NoError(t, err)
	require.Empty(t, objs.ConfigParts)
	require.Empty(t, objs.Rejected)
	require.False(t, bytes.HasPrefix(promfixture.Gunzip(t, objs.ConfigSecret.Data[promserver.ConfigSecretKey]), []byte("#")))
}

// variedInputs are those of benchInputs (monitors ServiceMonitors of
// endpoints endpoints, no rule), but that each ServiceMonitor has its
// own token and selector value, and each endpoint its own port name,
// label values and regular expressions: the jobs compress some 19 times,
// as real ones do, where those of benchInputs compress 140 times.
func variedInputs(monitors, endpoints int) promserver.Inputs {
	in := benchInputs(monitors, 0)
	in.Server.Spec.RuleSelector = nil
	in.Rules = nil
	rnd := rand.New(rand.NewPCG(7, 8))
	for _, sm := range in.ServiceMonitors {
		sm.Spec.Endpoints = sm.Spec.Endpoints[:1]
		for range endpoints - 1 {
			sm.Spec.Endpoints = append(sm.Spec.Endpoints, *sm.Spec.Endpoints[0].DeepCopy())
		}
		in.Secrets[sm.Namespace+"/"+sm.Name].Data["token"] = []byte(promfixture.RandomWord(rnd, 40))
		sm.Spec.Selector.MatchLabels["version"] = promfixture.RandomWord(rnd, 8)
		for j := range sm.Spec.Endpoints {
			e := &sm.Spec.Endpoints[j]
			e.Port = "p-" + promfixture.RandomWord(rnd, 6)
			e.Path = "/" + promfixture.RandomWord(rnd, 8) + "/metrics"
			for _, label := range []string{"owner", "cost_center", "runbook", "channel"} {
				e.RelabelConfigs = append(e.RelabelConfigs, monitoringv1.RelabelConfig{TargetLabel: label, Replacement: ptr.To(promfixture.RandomWord(rnd, 16))})
			}
			e.RelabelConfigs = append(e.RelabelConfigs, monitoringv1.RelabelConfig{
				SourceLabels: []monitoringv1.LabelName{monitoringv1.LabelName("__meta_kubernetes_pod_label_" + promfixture.RandomWord(rnd, 6))},
				Regex:        strings.Join([]string{promfixture.RandomWord(rnd, 10), promfixture.RandomWord(rnd, 10), promfixture.RandomWord(rnd, 10)}, "|"), Action: "keep",
			})
			e.MetricRelabelConfigs = append(e.MetricRelabelConfigs, monitoringv1.RelabelConfig{
				SourceLabels: []monitoringv1.LabelName{"__name__"},
				Regex:        promfixture.RandomWord(rnd, 12) + "_.*|" + promfixture.RandomWord(rnd, 12) + "_total|" + promfixture.RandomWord(rnd, 12), Action: "drop",
			})
		}
	}
	return in
}

// sentSize is the size of s as the controller sends it to the API server
// and the API server to each watcher: JSON, with the owner reference
// kube.Write sets.
func sentSize(t *testing.T, s *corev1.Secret) int {
	s = s.DeepCopy()
	s.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion().String(), Kind: v1alpha1.Kind, Name: "main",
		UID: "6c8b5e8a-8a3f-4b7e-9d1c-2f4e6a8b0c1d", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return len(b)
}

// TestSplitVariedEdit renders 6,000 endpoints whose jobs compress like
// real ones (some 19 times: more than the 16 MiB of a config Secret),
// then, from the same cache, the same with one ServiceMonitor edited, one
// added and one deleted: every part Secret is at most 42 KiB gzipped
// and 64 KiB as sent, and each change writes one part (two when it moves
// the end of its part, which these do not) and the config Secret. The
// same inputs give the same bytes without the cache.
func TestSplitVariedEdit(t *testing.T) {
	in := variedInputs(600, 10)
	var cache promserver.RuleCache
	before, err := promserver.Render(in, testOptions(), &cache)
	require.NoError(t, err)
	require.Empty(t, before.Rejected)
	require.Greater(t, len(before.ConfigParts), 20)
	size, gzipped := 0, 0
	for _, p := range before.ConfigParts {
		gz := p.Data[promserver.ConfigSecretKey]
		size, gzipped = size+len(promfixture.Gunzip(t, gz)), gzipped+len(gz)
		require.LessOrEqual(t, len(gz), 42<<10, p.Name) // a part of several jobs, gzipped
		require.LessOrEqual(t, sentSize(t, p), 64<<10, p.Name)
	}
	require.Greater(t, size, configsecret.MaxConfigBytes)
	ratio := float64(size) / float64(gzipped)
	require.True(t, ratio >= 10 && ratio <= 20, "the jobs compress %.1f times, not like real ones", ratio)
	require.GreaterOrEqual(t, gzipped/len(before.ConfigParts), 16<<10, "parts gzipped, on average")
	t.Logf("%d bytes of configuration, %d gzipped (%.1f times), in %d parts; config Secret %d bytes as sent",
		size, gzipped, ratio, len(before.ConfigParts), sentSize(t, before.ConfigSecret))

	again, err := promserver.Render(in, testOptions(), nil)
	require.NoError(t, err)
	require.Equal(t, before.ConfigSecret, again.ConfigSecret, "the same inputs, the same bytes")
	require.Equal(t, before.ConfigParts, again.ConfigParts)

	changes := []struct {
		name string
		edit func(in *promserver.Inputs)
	}{
		{"a ServiceMonitor edited", func(in *promserver.Inputs) {
			sm := in.ServiceMonitors[345].DeepCopy()
			sm.Spec.Endpoints[3].Interval = "15s"
			in.ServiceMonitors[345] = sm
		}},
		{"a ServiceMonitor added", func(in *promserver.Inputs) {
			sm := in.ServiceMonitors[123].DeepCopy()
			sm.Name += "-canary"
			in.ServiceMonitors = append(in.ServiceMonitors, sm)
		}},
		{"a ServiceMonitor deleted", func(in *promserver.Inputs) { in.ServiceMonitors = slices.Delete(in.ServiceMonitors, 567, 568) }},
	}
	for _, change := range changes {
		t.Run(change.name, func(t *testing.T) {
			edited := in
			edited.ServiceMonitors = slices.Clone(in.ServiceMonitors)
			change.edit(&edited)
			after, err := promserver.Render(edited, testOptions(), &cache)
			require.NoError(t, err)
			written := map[string]int{}
			for _, p := range after.ConfigParts {
				if i := slices.IndexFunc(before.ConfigParts, func(b *corev1.Secret) bool { return b.Name == p.Name }); i < 0 ||
					!bytes.Equal(before.ConfigParts[i].Data[promserver.ConfigSecretKey], p.Data[promserver.ConfigSecretKey]) {
					written[p.Name] = sentSize(t, p)
				}
			}
			require.Len(t, written, 1, "part Secrets written")
			require.Len(t, after.ConfigParts, len(before.ConfigParts))
			require.NotEqual(t, before.ConfigSecret.Data, after.ConfigSecret.Data)
			main := sentSize(t, after.ConfigSecret)
			t.Logf("written: %v and the config Secret, %d bytes as sent", written, main)
		})
	}
}

// testSplit makes the configuration of a PrometheusServer too large for
// a Secret on the real API server: its jobs go into part Secrets, which
// the real reloader reads through the API server (the API source, with
// the Role the controller writes) and renders into a configuration that
// promtool loads with every job; the parts no longer needed are deleted.
func (cp *controlPlane) testSplit(t *testing.T) {
	ns := cp.namespace(t, "split", nil)
	// With deploy/'s ClusterRole: the parts no longer needed are deleted.
	cp.start(t, kube.Options{Namespaces: []string{ns}, Config: cp.as(cp.deployRBAC(t))})
	srv := server(ns, "main", func(s *v1alpha1.PrometheusServerSpec) {
		s.ServiceMonitorSelector = &metav1.LabelSelector{}
	})
	cp.create(t, srv)
	in := promfixture.BenchConfigInput(2000, 10)
	var objs []client.Object
	for _, s := range in.Secrets {
		s = s.DeepCopy()
		s.Namespace = ns
		objs = append(objs, s)
	}
	for _, sm := range in.ServiceMonitors {
		sm = sm.DeepCopy()
		sm.Namespace = ns
		objs = append(objs, sm)
	}
	cp.createParallel(t, objs)

	// 4,000 objects to render on shared cores: longer than deadline.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.GreaterOrEqual(c, len(cp.configParts(t, srv)), 3)
		assert.Equal(c, int32(2000), cp.status(t, srv).ServiceMonitors.Selected)
		cond := meta.FindStatusCondition(cp.status(t, srv).Conditions, promserver.ConditionReconciled)
		assert.True(c, cond != nil && cond.Status == metav1.ConditionTrue, "Reconciled")
	}, 5*time.Minute, 100*time.Millisecond)
	names := cp.renderFromAPI(t, srv)
	require.Len(t, names, 20000)
	slices.Sort(names)
	require.Len(t, slices.Compact(names), 20000, "every job once")

	// Fewer monitors: fewer parts, the others deleted.
	for _, sm := range in.ServiceMonitors[:1500] {
		require.NoError(t, cp.c.Delete(t.Context(), &monitoringv1.ServiceMonitor{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sm.Name}}))
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Empty(c, cp.configParts(t, srv))
		assert.Len(c, jobs(t, cp.config(t, srv)), 5000)
	}, 5*time.Minute, 100*time.Millisecond)
}

// createParallel creates objs with 16 clients at once.
func (cp *controlPlane) createParallel(t *testing.T, objs []client.Object) {
	t.Helper()
	work := make(chan client.Object)
	errs := make(chan error, len(objs))
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for o := range work {
				if err := cp.c.Create(t.Context(), o); err != nil {
					errs <- fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
				}
			}
		})
	}
	for _, o := range objs {
		work <- o
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// configParts returns the part Secrets of s, in order.
func (cp *controlPlane) configParts(t *testing.T, s *v1alpha1.PrometheusServer) []corev1.Secret {
	var list corev1.SecretList
	require.NoError(t, cp.c.List(t.Context(), &list, client.InNamespace(s.Namespace), client.HasLabels{promserver.LabelConfigPart}))
	slices.SortFunc(list.Items, func(a, b corev1.Secret) int {
		return cmp.Compare(a.Labels[promserver.LabelConfigPart], b.Labels[promserver.LabelConfigPart])
	})
	return list.Items
}

// renderFromAPI renders the configuration of s with the real reloader
// reading it through the API server (the API source), as a service
// account bound to the rules of the Role the controller wrote, checks it
// with promtool and returns the scrape job names of every file.
func (cp *controlPlane) renderFromAPI(t *testing.T, s *v1alpha1.PrometheusServer) []string {
	t.Helper()
	promtool, err := toolbin.Path("promtool")
	require.NoError(t, err)
	var role rbacv1.Role
	require.NoError(t, cp.c.Get(t.Context(), client.ObjectKey{Namespace: s.Namespace, Name: promserver.AccessName(promserver.OwnTarget(s))}, &role))
	token, ca := cp.env.ServiceAccount(t, s.Namespace, "reader", role.Rules)
	src, err := apisource.New(nil, prometheus.NewRegistry(), apisource.Options{
		Config:          apisource.Config{Server: cp.cfg.Host, TokenFile: token, CAFile: ca},
		SecretNamespace: s.Namespace, SecretName: promserver.ConfigSecretName(s), SecretKey: promserver.ConfigSecretKey,
	})
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), promserver.ConfigEnvsubstFile)
	rel, err := reloader.New(nil, prometheus.NewRegistry(), reloader.Options{Source: src, ConfigOutput: out})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = src.Run(ctx)
	}()
	defer func() { cancel(); <-done }()
	// As the init container does: render after each change until every
	// part is read.
	timeout := time.After(5 * time.Minute)
	for err := errors.New("not rendered"); err != nil; err = rel.Render() {
		select {
		case <-src.Changed():
		case <-timeout:
			require.NoError(t, err, "render from the API server")
		}
	}

	b, err := exec.CommandContext(t.Context(), promtool, "check", "config", out).CombinedOutput()
	require.NoError(t, err, "promtool check config:\n%s", b)
	files, err := filepath.Glob(filepath.Join(filepath.Dir(out), contract.PartsOutDir, "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, len(cp.configParts(t, s)))
	var names []string
	for _, f := range append(files, out) {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		names = append(names, jobs(t, string(b))...)
	}
	return names
}

// TestPartSlotsVolume: the volume source mounts configsecret.PartSlots
// of the part Secrets, each optional.
func TestPartSlotsVolume(t *testing.T) {
	srv := server("monitoring", "main", func(s *v1alpha1.PrometheusServerSpec) { s.Reloader.Source = v1alpha1.SourceVolume })
	opts := testPodOptions()
	opts.ConfigParts = 60
	sts := promserver.RenderShard(promserver.OwnTarget(srv), opts, 0)
	i := slices.IndexFunc(sts.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "config-parts" })
	require.NotEqual(t, -1, i, "the parts' volume")
	v := sts.Spec.Template.Spec.Volumes[i]
	require.Len(t, v.Projected.Sources, configsecret.PartSlots(60, promserver.RuleVolumeStep))
	require.Len(t, v.Projected.Sources, 64)
	for i, s := range v.Projected.Sources {
		name := promserver.ConfigPartName(srv, i+1)
		require.Equal(t, name, s.Secret.Name)
		require.Equal(t, []corev1.KeyToPath{{Key: promserver.ConfigSecretKey, Path: name}}, s.Secret.Items)
		require.True(t, *s.Secret.Optional)
	}
}

// BenchmarkSplitEdit renders 20,000 endpoints split into parts, as the
// controller does after an edit of one ServiceMonitor: from the cache of
// the previous render, the parts and their estimates reused but for the
// one edited; cold renders from an empty cache (the controller's first,
// and each render of a burst that touches every part). The jobs are
// benchInputs' (compressing some 140 times) or variedInputs' (some 15
// times). It reports the process' CPU time per render (cpu-ms), which
// other load on the machine affects less than the time.
func BenchmarkSplitEdit(b *testing.B) {
	for _, tc := range []struct {
		name string
		in   promserver.Inputs
	}{{"bench", benchInputs(2000, 0)}, {"varied", variedInputs(2000, 10)}} {
		tc.in.Server.Spec.RuleSelector = nil
		if tc.name == "bench" {
			cfg := promfixture.BenchConfigInput(2000, 10)
			tc.in.ServiceMonitors, tc.in.Secrets = cfg.ServiceMonitors, cfg.Secrets
		}
		for _, cold := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/cold=%t", tc.name, cold), func(b *testing.B) {
				var cache promserver.RuleCache
				if _, err := promserver.Render(tc.in, testOptions(), &cache); err != nil {
					b.Fatal(err)
				}
				edited := tc.in
				edited.ServiceMonitors = slices.Clone(tc.in.ServiceMonitors)
				start := cpuTime(b)
				parts := 0
				for i := 0; b.Loop(); i++ {
					if cold {
						cache = promserver.RuleCache{}
					}
					sm := tc.in.ServiceMonitors[i%len(tc.in.ServiceMonitors)].DeepCopy()
					sm.Spec.Endpoints[0].Interval = monitoringv1.Duration(fmt.Sprintf("%ds", 10+i%50))
					edited.ServiceMonitors[i%len(tc.in.ServiceMonitors)] = sm
					out, err := promserver.Render(edited, testOptions(), &cache)
					if err != nil {
						b.Fatal(err)
					}
					parts = len(out.ConfigParts)
					edited.ServiceMonitors[i%len(tc.in.ServiceMonitors)] = tc.in.ServiceMonitors[i%len(tc.in.ServiceMonitors)]
				}
				b.ReportMetric(float64((cpuTime(b)-start).Milliseconds())/float64(b.N), "cpu-ms/op")
				b.ReportMetric(float64(parts), "parts")
			})
		}
	}
}

// cpuTime is the CPU time of the process so far, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
