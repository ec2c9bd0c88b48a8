package prometheusserver

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/envsubst"
)

// TestRenderShards checks the StatefulSet of each shard: its name, a
// selector that picks its pods and no other shard's (but shard 0's, which
// keeps the selector it had before shards), SHARD in both reloaders, and
// topology spread constraints on the shard's pods.
func TestRenderShards(t *testing.T) {
	server := testServer()
	production(server)
	server.Spec.Shards, server.Spec.Replicas = ptr.To[int32](3), ptr.To[int32](2)
	server.Spec.TopologySpreadConstraints = []monitoringv1.TopologySpreadConstraint{{
		CoreV1TopologySpreadConstraint: monitoringv1.CoreV1TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule},
		AdditionalLabelSelectors:       ptr.To(monitoringv1.ShardAndResourceNameLabelSelector),
	}}
	_, shard0 := promserver.RenderWorkload(promserver.OwnTarget(server), testPodOptions())
	sets := []*appsv1.StatefulSet{shard0, promserver.RenderShard(promserver.OwnTarget(server), testPodOptions(), 1), promserver.RenderShard(promserver.OwnTarget(server), testPodOptions(), 2)}
	require.Equal(t, shard0, promserver.RenderShard(promserver.OwnTarget(server), testPodOptions(), 0))

	for i, sts := range sets {
		require.Equal(t, []string{"main", "main-shard-1", "main-shard-2"}[i], sts.Name)
		require.Equal(t, "main", sts.Spec.ServiceName, "one headless Service for every shard")
		pod := k8slabels.Set(sts.Spec.Template.Labels)
		for j, other := range sets {
			sel, err := metav1.LabelSelectorAsSelector(other.Spec.Selector)
			require.NoError(t, err)
			require.Equal(t, i == j || j == 0, sel.Matches(pod), "the selector of shard %d on the pods of shard %d", j, i)
			spread, err := metav1.LabelSelectorAsSelector(other.Spec.Template.Spec.TopologySpreadConstraints[0].LabelSelector)
			require.NoError(t, err)
			require.Equal(t, i == j, spread.Matches(pod), "the spread of shard %d on the pods of shard %d", j, i)
		}
		for _, c := range slices.Concat(sts.Spec.Template.Spec.InitContainers, sts.Spec.Template.Spec.Containers[1:]) {
			require.Contains(t, c.Env, corev1.EnvVar{Name: "SHARD", Value: strconv.Itoa(i)}, c.Name)
		}
		if i > 0 {
			// All but the name, the selector, the pods' labels and SHARD are shard 0's.
			require.Equal(t, shard0.Spec.Template.Spec.Containers[0], sts.Spec.Template.Spec.Containers[0])
			require.Equal(t, shard0.Spec.VolumeClaimTemplates, sts.Spec.VolumeClaimTemplates)
			require.NotEqual(t, shard0.Spec.Template.Annotations[promserver.AnnotationInputHash], sts.Spec.Template.Annotations[promserver.AnnotationInputHash])
		}
	}

	role, _ := promserver.RenderAccess(promserver.OwnTarget(server), 0)
	var pods []string
	for _, rule := range role.Rules {
		if slices.Contains(rule.Resources, "pods") {
			pods = rule.ResourceNames
		}
	}
	require.Equal(t, []string{"main-0", "main-1", "main-shard-1-0", "main-shard-1-1", "main-shard-2-0", "main-shard-2-1"}, pods)
}

// shardTargets are n targets of the ServiceMonitor serviceMonitor(ns, name,
// ...) renders, as the endpoints discovery of Prometheus labels them.
func shardTargets(ns, name string, n int) []labels.Labels {
	targets := make([]labels.Labels, n)
	for i := range targets {
		targets[i] = labels.FromMap(map[string]string{
			"__address__":                                               fmt.Sprintf("10.1.%d.%d:8080", i/250, i%250+1),
			"__meta_kubernetes_namespace":                               ns,
			"__meta_kubernetes_service_name":                            name,
			"__meta_kubernetes_service_label_app":                       name,
			"__meta_kubernetes_service_labelpresent_app":                "true",
			"__meta_kubernetes_endpoint_port_name":                      "web",
			"__meta_kubernetes_endpoint_address_target_kind":            "Pod",
			"__meta_kubernetes_endpoint_address_target_name":            fmt.Sprintf("%s-%d", name, i),
			"__meta_kubernetes_pod_name":                                fmt.Sprintf("%s-%d", name, i),
			"__meta_kubernetes_pod_container_name":                      "app",
			"__meta_kubernetes_pod_container_port_name":                 "web",
			"__meta_kubernetes_endpoint_ready":                          "true",
			"__meta_kubernetes_endpointslice_endpoint_conditions_ready": "true",
		})
	}
	return targets
}

// relabeledJob is a scrape job's name and relabelings, as Prometheus
// reads them.
type relabeledJob struct {
	JobName        string            `yaml:"job_name"`
	RelabelConfigs []*relabel.Config `yaml:"relabel_configs"`
}

// keptByShard returns, for each target, the shards whose Prometheus keeps
// it in the job named job: the configuration expanded as each shard's
// reloader expands it, then the job's relabelings as Prometheus applies
// them.
func keptByShard(t *testing.T, config, job string, shards int, targets []labels.Labels) [][]int {
	t.Helper()
	kept := make([][]int, len(targets))
	for shard := range shards {
		expanded, _, err := envsubst.New(envsubst.Options{Lookup: func(name string) (string, bool) {
			return map[string]string{"SHARD": strconv.Itoa(shard), "POD_NAME": "pod"}[name], name == "SHARD" || name == "POD_NAME"
		}}).Expand([]byte(config))
		require.NoError(t, err)
		var cfg struct {
			ScrapeConfigs []relabeledJob `yaml:"scrape_configs"`
		}
		require.NoError(t, yaml.Unmarshal(expanded, &cfg))
		i := slices.IndexFunc(cfg.ScrapeConfigs, func(j relabeledJob) bool { return j.JobName == job })
		require.GreaterOrEqual(t, i, 0, "job %s", job)
		for _, rc := range cfg.ScrapeConfigs[i].RelabelConfigs {
			require.NoError(t, rc.Validate(model.UTF8Validation), "as Prometheus' config loader validates them")
		}
		for k, target := range targets {
			if relabel.ProcessBuilder(labels.NewBuilder(target), cfg.ScrapeConfigs[i].RelabelConfigs...) {
				kept[k] = append(kept[k], shard)
			}
		}
	}
	return kept
}

// testShardScaling scales a server from one shard to three, five, two and
// one on the real API server: a StatefulSet per shard and no more, the
// Role granting every shard's pods, status.shards; and in the
// configuration each shard's reloader expands, every target of a
// ServiceMonitor kept by exactly one shard, each shard keeping some, and
// the targets of one that opts out of sharding kept by all.
func (cp *controlPlane) testShardScaling(t *testing.T) {
	ns := cp.namespace(t, "shard-scaling", nil)
	cp.start(t, kube.Options{Namespaces: []string{ns}})
	srv := server(ns, "main", func(s *v1alpha1.PrometheusServerSpec) {
		s.ServiceMonitorSelector = &metav1.LabelSelector{}
	})
	sharded := serviceMonitor(ns, "app", nil)
	everywhere := serviceMonitor(ns, "kube-state-metrics", nil)
	everywhere.Spec.Endpoints[0].RelabelConfigs = []monitoringv1.RelabelConfig{{TargetLabel: "__tmp_disable_sharding", Replacement: ptr.To("true")}}
	cp.create(t, srv, sharded, everywhere)
	appJob, ksmJob := "serviceMonitor/"+ns+"/app/0", "serviceMonitor/"+ns+"/kube-state-metrics/0"
	appTargets, ksmTargets := shardTargets(ns, "app", 200), shardTargets(ns, "kube-state-metrics", 3)

	for step, shards := range []int{1, 3, 5, 2, 1} {
		if step > 0 {
			edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) { s.Spec.Shards = ptr.To(int32(shards)) })
		}
		want := []string{"main"}
		for i := 1; i < shards; i++ {
			want = append(want, "main-shard-"+strconv.Itoa(i))
		}
		var config string
		eventually(t, func(c *assert.CollectT) {
			var list appsv1.StatefulSetList
			if !assert.NoError(c, cp.c.List(t.Context(), &list, client.InNamespace(ns))) {
				return
			}
			var names []string
			for _, sts := range list.Items {
				names = append(names, sts.Name)
				assert.Equal(c, ptr.To(int32(1)), sts.Spec.Replicas)
			}
			assert.ElementsMatch(c, want, names, "StatefulSets")
			config = cp.config(t, srv)
			if !assert.Subset(c, jobs(t, config), []string{appJob, ksmJob}) ||
				!assert.Equal(c, shards > 1, strings.Contains(config, "modulus: "+strconv.Itoa(shards)), "sharding relabelings") {
				return
			}
			kept := keptByShard(t, config, appJob, shards, appTargets)
			for i := range appTargets {
				assert.Len(c, kept[i], 1, "shards keeping %s", appTargets[i].Get("__address__"))
			}
			assert.Equal(c, int32(shards), cp.status(t, srv).Shards, "status.shards")
		}, "%d shards", shards)

		// Spread over every shard, and the opted-out targets everywhere.
		perShard := make([]int, shards)
		for _, k := range keptByShard(t, config, appJob, shards, appTargets) {
			perShard[k[0]]++
		}
		require.NotContains(t, perShard, 0, "targets by shard: %v", perShard)
		for _, k := range keptByShard(t, config, ksmJob, shards, ksmTargets) {
			require.Len(t, k, shards)
		}

		var role rbacv1.Role
		require.NoError(t, cp.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: promserver.AccessName(promserver.OwnTarget(srv))}, &role))
		var pods []string
		for _, w := range want {
			pods = append(pods, w+"-0")
		}
		require.Equal(t, pods, role.Rules[len(role.Rules)-1].ResourceNames, "pods the reloaders may report in")
	}
}
