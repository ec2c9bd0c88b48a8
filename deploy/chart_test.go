package deploy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

const (
	// chartDir is the Helm chart, relative to deploy/.
	chartDir = "../charts/podreload"
	// release is the release name that gives the objects deploy/'s names
	// when installed in controllerNamespace.
	release = "podreload"
	// controllerTimeout bounds the wait for the controller to be ready and
	// to render a server.
	controllerTimeout = time.Minute
)

// helm runs bin/helm with a home of its own and returns its standard
// output, or an error holding its standard error.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, err := toolbin.Path("helm")
	require.NoError(t, err)
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w: %s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// valuesFile writes the values YAML into a file for helm's --values,
// whose path has no comma: helm splits --values on commas (t.TempDir holds
// the test's name).
func valuesFile(t *testing.T, values string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "chart-values-")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(dir)) })
	f := filepath.Join(dir, "values.yaml")
	require.NoError(t, os.WriteFile(f, []byte(values), 0o600))
	return f
}

// objects are rendered or listed objects by "Kind namespace/name".
type objects map[string]*unstructured.Unstructured

func objectKey(kind, namespace, name string) string {
	return kind + " " + namespace + "/" + name
}

// decode returns the objects of a multi-document YAML stream.
func decode(t *testing.T, what, data string) objects {
	t.Helper()
	objs := objects{}
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		require.NoError(t, err, what)
		if len(obj.Object) == 0 {
			continue
		}
		key := objectKey(obj.GetKind(), obj.GetNamespace(), obj.GetName())
		require.NotContains(t, objs, key, "%s: twice", what)
		objs[key] = obj
	}
}

// render renders the chart as `helm install NAME charts/podreload
// --namespace NS` would, with the values YAML.
func render(t *testing.T, name, namespace, values string, flags ...string) objects {
	t.Helper()
	args := append([]string{"template", name, chartDir, "--namespace", namespace, "--values", valuesFile(t, values)}, flags...)
	out, err := helm(t, args...)
	require.NoError(t, err)
	return decode(t, "helm "+strings.Join(args, " "), out)
}

// typed converts the object key of objs to T, failing when it is missing.
func typed[T any](t *testing.T, objs objects, key string) *T {
	t.Helper()
	obj, ok := objs[key]
	require.True(t, ok, "no %s among %v", key, slices.Sorted(maps.Keys(objs)))
	out := new(T)
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, out, true), key)
	return out
}

// container returns the controller container of the Deployment name.
func container(t *testing.T, objs objects, namespace, name string) corev1.Container {
	t.Helper()
	d := typed[appsv1.Deployment](t, objs, objectKey("Deployment", namespace, name))
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	return d.Spec.Template.Spec.Containers[0]
}

// TestChartCRDs checks that the chart's crds/ are deploy/crds/, byte for
// byte, as `make generate` copies them.
func TestChartCRDs(t *testing.T) {
	ours, err := filepath.Glob("crds/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, ours)
	chart, err := filepath.Glob(filepath.Join(chartDir, "crds", "*"))
	require.NoError(t, err)
	base := func(paths []string) []string {
		var names []string
		for _, p := range paths {
			names = append(names, filepath.Base(p))
		}
		return names
	}
	require.Equal(t, base(ours), base(chart), "the chart's crds/ are not deploy/crds/: run make generate")
	for _, p := range ours {
		want, err := os.ReadFile(p)
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(chartDir, "crds", filepath.Base(p)))
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), "%s differs from deploy/crds: run make generate", filepath.Base(p))
	}
}

// TestChartLint runs helm lint --strict on the chart with its defaults and
// with every optional part switched on or off.
func TestChartLint(t *testing.T) {
	for name, values := range map[string]string{
		"defaults":                    "{}",
		"every option on":             "serviceMonitor: {enabled: true}\nnamespaces: [team-a, team-b]\nleaderElection: {enabled: false}\n",
		"no service account, no RBAC": "serviceAccount: {create: false, name: mine}\nrbac: {create: false}\n",
	} {
		t.Run(name, func(t *testing.T) {
			out, err := helm(t, "lint", "--strict", chartDir, "--namespace", controllerNamespace, "--values", valuesFile(t, values))
			require.NoError(t, err)
			require.Contains(t, out, "1 chart(s) linted, 0 chart(s) failed")
		})
	}
}

// TestChartMatchesDeploy renders the chart with its defaults, as release
// podreload in podreload-system, and compares it with deploy/: the same
// objects, each with deploy/'s labels (the chart adds Helm's), the same
// Deployment pod spec, Service ports, RBAC rules and bindings; deploy/'s
// selectors select the chart's pods.
func TestChartMatchesDeploy(t *testing.T) {
	chart := render(t, release, controllerNamespace, "{}")
	plain := objects{}
	for _, m := range readManifests(t) {
		kind := m.obj.GetKind()
		if strings.HasPrefix(m.file, "example/") || strings.HasPrefix(m.file, "mixin/") || kind == "Namespace" || kind == "CustomResourceDefinition" {
			// The chart installs the CRDs from crds/ (TestChartCRDs); helm
			// the namespace. The alerts of mixin/ go to the Prometheus that
			// monitors the cluster, with their own kustomization.
			continue
		}
		plain[objectKey(kind, m.obj.GetNamespace(), m.obj.GetName())] = m.obj
	}
	require.Equal(t, slices.Sorted(maps.Keys(plain)), slices.Sorted(maps.Keys(chart)))

	// subset fails unless every label of want is in got, and removes the
	// labels at path from both objects.
	subset := func(t *testing.T, key string, want, got *unstructured.Unstructured, path ...string) {
		t.Helper()
		w, _, err := unstructured.NestedStringMap(want.Object, path...)
		require.NoError(t, err)
		g, _, err := unstructured.NestedStringMap(got.Object, path...)
		require.NoError(t, err)
		require.NotEmpty(t, w, "%s: no %s in deploy/", key, strings.Join(path, "."))
		for k, v := range w {
			require.Equal(t, v, g[k], "%s: %s[%s]", key, strings.Join(path, "."), k)
		}
		unstructured.RemoveNestedField(want.Object, path...)
		unstructured.RemoveNestedField(got.Object, path...)
	}
	for key, want := range plain {
		t.Run(key, func(t *testing.T) {
			want, got := want.DeepCopy(), chart[key].DeepCopy()
			subset(t, key, want, got, "metadata", "labels")
			switch want.GetKind() {
			case "Deployment":
				subset(t, key, want, got, "spec", "selector", "matchLabels")
				subset(t, key, want, got, "spec", "template", "metadata", "labels")
			case "Service":
				subset(t, key, want, got, "spec", "selector")
			}
			require.Empty(t, cmp.Diff(want.Object, got.Object), "%s: deploy/ (-) and the chart (+) differ", key)
		})
	}

	t.Run("selectors select the pods", func(t *testing.T) {
		d := typed[appsv1.Deployment](t, chart, objectKey("Deployment", controllerNamespace, controllerName))
		pod := d.Spec.Template.Labels
		for _, sel := range []map[string]string{
			d.Spec.Selector.MatchLabels,
			typed[corev1.Service](t, chart, objectKey("Service", controllerNamespace, controllerName)).Spec.Selector,
		} {
			require.NotEmpty(t, sel)
			for k, v := range sel {
				require.Equal(t, v, pod[k], "selector %v, pod labels %v", sel, pod)
			}
		}
	})
}

// TestChartValues checks that each value has the effect values.yaml and
// the chart's README describe, and that values.schema.json refuses a
// misspelt one.
func TestChartValues(t *testing.T) {
	const ns = controllerNamespace
	digest := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	args := func(t *testing.T, objs objects) []string {
		return container(t, objs, ns, controllerName).Args
	}
	for _, tc := range []struct {
		name, release, values string
		check                 func(t *testing.T, objs objects)
	}{
		{
			name:   "image",
			values: "image: {repository: registry.example/podreload, tag: 1.2.3, digest: " + digest + ", pullPolicy: Always}",
			check: func(t *testing.T, objs objects) {
				c := container(t, objs, ns, controllerName)
				require.Equal(t, "registry.example/podreload:1.2.3@"+digest, c.Image)
				require.Equal(t, corev1.PullAlways, c.ImagePullPolicy)
			},
		},
		{
			name:   "image tag defaults to appVersion",
			values: "{}",
			check: func(t *testing.T, objs objects) {
				require.Equal(t, "ghcr.io/podreload/podreload:0.1.0", container(t, objs, ns, controllerName).Image)
			},
		},
		{
			name:   "namespaces watched, and permissions bound there only",
			values: "namespaces: [team-a, team-b]",
			check: func(t *testing.T, objs objects) {
				a := args(t, objs)
				require.Contains(t, a, "--namespace=team-a")
				require.Contains(t, a, "--namespace=team-b")
				require.NotContains(t, objs, objectKey("ClusterRoleBinding", "", controllerName))
				sa := []rbacv1.Subject{{Kind: "ServiceAccount", Name: controllerName, Namespace: ns}}
				for _, team := range []string{"team-a", "team-b"} {
					b := typed[rbacv1.RoleBinding](t, objs, objectKey("RoleBinding", team, controllerName))
					require.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: controllerName}, b.RoleRef)
					require.Equal(t, sa, b.Subjects)
				}
				b := typed[rbacv1.ClusterRoleBinding](t, objs, objectKey("ClusterRoleBinding", "", controllerName+"-namespaces"))
				require.Equal(t, sa, b.Subjects)
				r := typed[rbacv1.ClusterRole](t, objs, objectKey("ClusterRole", "", b.RoleRef.Name))
				require.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}}}, r.Rules)
			},
		},
		{
			name:   "collector RBAC, cluster-wide",
			values: "collector: {rbac: {serviceAccounts: [{name: grafana, namespace: monitoring}], resources: [configmaps]}}",
			check: func(t *testing.T, objs objects) {
				r := typed[rbacv1.ClusterRole](t, objs, objectKey("ClusterRole", "", "podreload-collector"))
				require.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}}}, r.Rules)
				b := typed[rbacv1.ClusterRoleBinding](t, objs, objectKey("ClusterRoleBinding", "", "podreload-collector"))
				require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "grafana", Namespace: "monitoring"}}, b.Subjects)
				require.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "podreload-collector"}, b.RoleRef)
			},
		},
		{
			name:   "collector RBAC, per namespace",
			values: "collector: {rbac: {serviceAccounts: [{name: grafana, namespace: monitoring}], namespaces: [monitoring, apps]}}",
			check: func(t *testing.T, objs objects) {
				r := typed[rbacv1.ClusterRole](t, objs, objectKey("ClusterRole", "", "podreload-collector"))
				require.Equal(t, []string{"configmaps", "secrets"}, r.Rules[0].Resources)
				require.NotContains(t, objs, objectKey("ClusterRoleBinding", "", "podreload-collector"))
				for _, ns := range []string{"monitoring", "apps"} {
					b := typed[rbacv1.RoleBinding](t, objs, objectKey("RoleBinding", ns, "podreload-collector"))
					require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "grafana", Namespace: "monitoring"}}, b.Subjects)
				}
			},
		},
		{
			name:   "leader election off",
			values: "leaderElection: {enabled: false}",
			check: func(t *testing.T, objs objects) {
				require.Equal(t, []string{"--web.listen-address=:8080", "--controller-id=podreload"}, args(t, objs))
				require.NotContains(t, objs, objectKey("Role", ns, leaderElectionRole))
				require.NotContains(t, objs, objectKey("RoleBinding", ns, leaderElectionRole))
			},
		},
		{
			name: "flags",
			values: `prometheusImage: registry.example/prometheus:v3
reloaderImage: registry.example/podreload:1.2.3
log: {level: debug, format: json}
extraArgs: [--resync-interval=1h, --kube-api-qps=10]`,
			check: func(t *testing.T, objs objects) {
				require.Equal(t, []string{
					"--leader-election", "--leader-election-namespace=$(POD_NAMESPACE)", "--leader-election-id=" + controllerName,
					"--web.listen-address=:8080", "--controller-id=podreload",
					"--prometheus-image=registry.example/prometheus:v3", "--reloader-image=registry.example/podreload:1.2.3",
					"--log.level=debug", "--log.format=json", "--resync-interval=1h", "--kube-api-qps=10",
				}, args(t, objs))
			},
		},
		{
			name:   "controller id",
			values: "controllerID: team-a",
			check: func(t *testing.T, objs objects) {
				a := args(t, objs)
				require.Contains(t, a, "--controller-id=team-a")
				require.NotContains(t, a, "--controller-id=podreload")
			},
		},
		{
			// prometheus-operator's default: the objects without the
			// annotation. The flag is given, empty, not left out (the
			// controller's default is podreload).
			name:   "empty controller id",
			values: `controllerID: ""`,
			check: func(t *testing.T, objs objects) {
				a := args(t, objs)
				require.Contains(t, a, "--controller-id=")
				require.NotContains(t, a, "--controller-id=podreload")
			},
		},
		{
			name: "node placement",
			values: `nodeSelector: {kubernetes.io/os: linux}
tolerations: [{key: dedicated, operator: Equal, value: monitoring, effect: NoSchedule}]
affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/arch, operator: In, values: [amd64, arm64]}]}]}}}
priorityClassName: system-cluster-critical`,
			check: func(t *testing.T, objs objects) {
				p := typed[appsv1.Deployment](t, objs, objectKey("Deployment", ns, controllerName)).Spec.Template.Spec
				require.Equal(t, map[string]string{"kubernetes.io/os": "linux"}, p.NodeSelector)
				require.Equal(t, []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "monitoring", Effect: corev1.TaintEffectNoSchedule}}, p.Tolerations)
				require.NotNil(t, p.Affinity)
				require.NotNil(t, p.Affinity.NodeAffinity)
				terms := p.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
				require.Equal(t, []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}}}, terms[0].MatchExpressions)
				require.Equal(t, "system-cluster-critical", p.PriorityClassName)
			},
		},
		{
			name: "resources and security contexts",
			values: `resources: {requests: {cpu: 10m, memory: 32Mi}, limits: {memory: 128Mi}}
podSecurityContext: {runAsNonRoot: true, fsGroup: 2000}
securityContext: {runAsUser: 1000}
replicaCount: 2
podLabels: {team: observability}
podAnnotations: {example.com/scrape: "false"}`,
			check: func(t *testing.T, objs objects) {
				d := typed[appsv1.Deployment](t, objs, objectKey("Deployment", ns, controllerName))
				c := d.Spec.Template.Spec.Containers[0]
				require.Equal(t, "32Mi", c.Resources.Requests.Memory().String())
				require.Equal(t, "10m", c.Resources.Requests.Cpu().String())
				require.Equal(t, "128Mi", c.Resources.Limits.Memory().String())
				// Helm merges maps with the defaults: the keys not given stay.
				require.Equal(t, &corev1.SecurityContext{
					RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000), ReadOnlyRootFilesystem: ptr.To(true),
					AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				}, c.SecurityContext)
				require.Equal(t, &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), FSGroup: ptr.To[int64](2000)}, d.Spec.Template.Spec.SecurityContext)
				require.Equal(t, ptr.To[int32](2), d.Spec.Replicas)
				require.Equal(t, "observability", d.Spec.Template.Labels["team"])
				require.Equal(t, map[string]string{"example.com/scrape": "false"}, d.Spec.Template.Annotations)
			},
		},
		{
			name: "ServiceMonitor",
			values: `serviceMonitor: {enabled: true, labels: {release: prometheus}, interval: 30s, scrapeTimeout: 10s,
  metricRelabelings: [{action: drop, regex: go_gc_.*, sourceLabels: [__name__]}]}`,
			check: func(t *testing.T, objs objects) {
				sm := objs[objectKey("ServiceMonitor", ns, controllerName)]
				require.NotNil(t, sm, "no ServiceMonitor")
				require.Equal(t, "monitoring.coreos.com/v1", sm.GetAPIVersion())
				require.Equal(t, "prometheus", sm.GetLabels()["release"])
				svc := typed[corev1.Service](t, objs, objectKey("Service", ns, controllerName))
				sel, _, err := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
				require.NoError(t, err)
				require.NotEmpty(t, sel)
				for k, v := range sel {
					require.Equal(t, v, svc.Labels[k], "the ServiceMonitor's selector %v, the Service's labels %v", sel, svc.Labels)
				}
				endpoints, _, err := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
				require.NoError(t, err)
				require.Equal(t, []any{map[string]any{
					"port": svc.Spec.Ports[0].Name, "interval": "30s", "scrapeTimeout": "10s",
					"metricRelabelings": []any{map[string]any{"action": "drop", "regex": "go_gc_.*", "sourceLabels": []any{"__name__"}}},
				}}, endpoints)
			},
		},
		{
			name:   "no ServiceMonitor by default",
			values: "{}",
			check: func(t *testing.T, objs objects) {
				require.NotContains(t, objs, objectKey("ServiceMonitor", ns, controllerName))
			},
		},
		{
			name:   "an existing service account, RBAC left to the user",
			values: "serviceAccount: {create: false, name: mine}\nrbac: {create: false}",
			check: func(t *testing.T, objs objects) {
				require.Equal(t, []string{objectKey("Deployment", ns, controllerName), objectKey("Service", ns, controllerName)},
					slices.Sorted(maps.Keys(objs)))
				require.Equal(t, "mine", typed[appsv1.Deployment](t, objs, objectKey("Deployment", ns, controllerName)).Spec.Template.Spec.ServiceAccountName)
			},
		},
		{
			name:    "names follow the release",
			release: "monitoring",
			values:  "{}",
			check: func(t *testing.T, objs objects) {
				const name = "monitoring-podreload-controller"
				require.Contains(t, container(t, objs, ns, name).Args, "--leader-election-id="+name)
				for _, key := range []string{
					objectKey("ServiceAccount", ns, name), objectKey("Service", ns, name), objectKey("ClusterRole", "", name),
					objectKey("Role", ns, name+"-leader-election"),
				} {
					require.Contains(t, objs, key)
				}
				b := typed[rbacv1.ClusterRoleBinding](t, objs, objectKey("ClusterRoleBinding", "", name))
				require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}, b.Subjects)
			},
		},
		{
			name:    "fullnameOverride",
			release: "monitoring",
			values:  "fullnameOverride: podreload",
			check: func(t *testing.T, objs objects) {
				require.Contains(t, container(t, objs, ns, "podreload").Args, "--leader-election-id=podreload")
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.release
			if name == "" {
				name = release
			}
			tc.check(t, render(t, name, ns, tc.values))
		})
	}

	for _, tc := range []struct{ name, values, err string }{
		{"misspelt value", "imge: {tag: 1.2.3}", "- at '': additional properties 'imge' not allowed"},
		{"misspelt nested value", "serviceMonitor: {enable: true}", "- at '/serviceMonitor': additional properties 'enable' not allowed"},
		{"wrong type", "namespaces: team-a", "- at '/namespaces': got string, want array"},
		{"controller id not a string", "controllerID: 1", "- at '/controllerID': got number, want string"},
		{"service account without a name", "serviceAccount: {create: false}", "serviceAccount.name is required when serviceAccount.create is false"},
	} {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			_, err := helm(t, "template", release, chartDir, "--values", valuesFile(t, tc.values))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.err)
		})
	}
}

// TestChartOnAPIServer applies the rendered chart with server-side apply
// to a real kube-apiserver, then runs the controller binary as the chart's
// Deployment runs it, with its arguments and the token of the chart's
// service account: it becomes ready and renders the example
// PrometheusServer of deploy/example without being denied anything. Once
// with the defaults, which watch every namespace, once watching one
// namespace with the permissions bound there.
func TestChartOnAPIServer(t *testing.T) {
	cp := controlplane.Start(t)
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, apiextensionsv1.AddToScheme(scheme))
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	var example []*unstructured.Unstructured
	for _, m := range readManifests(t) {
		if strings.HasPrefix(m.file, "example/") {
			example = append(example, m.obj)
		}
	}
	require.NotEmpty(t, example)

	t.Run("defaults", func(t *testing.T) {
		objs := render(t, release, controllerNamespace, "{}", "--include-crds")
		applyAll(t, c, controllerNamespace, objs)
		applyAll(t, c, "", toObjects(example, ""))
		runController(t, cp, c, objs, controllerNamespace, controllerName, "default")
	})

	t.Run("one namespace watched", func(t *testing.T) {
		const ns, team, name = "podreload-team", "team-a", "team-podreload-controller"
		objs := render(t, "team", ns, "namespaces: [team-a]\nserviceMonitor: {enabled: true}")
		require.Contains(t, objs, objectKey("ServiceMonitor", ns, name))
		apply(t, c, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": team}}})
		applyAll(t, c, ns, objs)
		var servers []*unstructured.Unstructured
		for _, obj := range example {
			if obj.GetNamespace() != "" {
				servers = append(servers, obj) // The cluster-scoped objects are there already.
			}
		}
		applyAll(t, c, "", toObjects(servers, team))
		runController(t, cp, c, objs, ns, name, team)
	})
}

// toObjects copies objs, moving the namespaced ones to namespace unless it
// is empty.
func toObjects(objs []*unstructured.Unstructured, namespace string) objects {
	out := objects{}
	for _, obj := range objs {
		obj = obj.DeepCopy()
		if namespace != "" && obj.GetNamespace() != "" {
			obj.SetNamespace(namespace)
		}
		out[objectKey(obj.GetKind(), obj.GetNamespace(), obj.GetName())] = obj
	}
	return out
}

// apply applies obj with server-side apply.
func apply(t *testing.T, c client.Client, obj *unstructured.Unstructured) {
	t.Helper()
	err := c.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), client.FieldOwner(fieldOwner), client.ForceOwnership)
	require.NoError(t, err, "apply %s %s", obj.GetKind(), client.ObjectKeyFromObject(obj))
}

// applyAll creates the namespace (as helm install --create-namespace
// does), unless empty, then applies objs as helm install orders them:
// CRDs first, custom resources once their CRDs are established.
func applyAll(t *testing.T, c client.Client, namespace string, objs objects) {
	t.Helper()
	if namespace != "" {
		apply(t, c, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": namespace}}})
	}
	var crds, builtin, custom []*unstructured.Unstructured
	for _, key := range slices.Sorted(maps.Keys(objs)) {
		obj := objs[key]
		switch gk := obj.GroupVersionKind().GroupKind(); {
		case gk == schema.GroupKind{Group: apiextensionsv1.GroupName, Kind: "CustomResourceDefinition"}:
			crds = append(crds, obj)
		case c.Scheme().Recognizes(obj.GroupVersionKind()):
			builtin = append(builtin, obj)
		default:
			custom = append(custom, obj)
		}
	}
	for _, obj := range crds {
		apply(t, c, obj)
	}
	for _, obj := range crds {
		waitEstablished(t, c, obj.GetName())
	}
	for _, obj := range append(builtin, custom...) {
		apply(t, c, obj)
	}
}

// runController runs bin/controller as the chart's Deployment name in
// namespace runs it (its arguments, $(POD_NAMESPACE) expanded) with the
// token of the Deployment's service account, waits until it is ready and
// has rendered the PrometheusServer "example" of serverNamespace, stops it
// and checks that its log has no RBAC denial.
func runController(t *testing.T, cp *controlplane.ControlPlane, c client.Client, objs objects, namespace, name, serverNamespace string) {
	t.Helper()
	bin, err := toolbin.Path("controller")
	require.NoError(t, err)
	d := typed[appsv1.Deployment](t, objs, objectKey("Deployment", namespace, name))
	ctr := d.Spec.Template.Spec.Containers[0]
	require.Equal(t, []string{"/bin/controller"}, ctr.Command)
	require.Equal(t, []corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}, ctr.Env)

	addr := freeAddr(t)
	args := []string{"--kubeconfig=" + serviceAccountKubeconfig(t, cp, c, namespace, d.Spec.Template.Spec.ServiceAccountName)}
	for _, a := range ctr.Args {
		a = strings.ReplaceAll(a, "$(POD_NAMESPACE)", namespace)
		if strings.HasPrefix(a, "--web.listen-address=") {
			a = "--web.listen-address=" + addr
		}
		args = append(args, a)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var log bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	defer func() {
		if !stopped {
			cancel()
			t.Logf("controller (%v) log:\n%s", <-exited, log.String())
		}
	}()

	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		resp, err := http.Get("http://" + addr + "/-/ready")
		if !assert.NoError(collect, err) {
			return
		}
		defer resp.Body.Close()
		assert.Equal(collect, http.StatusOK, resp.StatusCode)
	}, controllerTimeout, 50*time.Millisecond, "controller not ready")

	server := client.ObjectKey{Namespace: serverNamespace, Name: "example"}
	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		var sts appsv1.StatefulSet
		assert.NoError(collect, c.Get(t.Context(), server, &sts))
		var secret corev1.Secret
		assert.NoError(collect, c.Get(t.Context(), client.ObjectKey{Namespace: serverNamespace, Name: "example-config"}, &secret))
		srv := &unstructured.Unstructured{}
		srv.SetAPIVersion("podreload.dev/v1alpha1")
		srv.SetKind("PrometheusServer")
		if !assert.NoError(collect, c.Get(t.Context(), server, srv)) {
			return
		}
		conds, _, _ := unstructured.NestedSlice(srv.Object, "status", "conditions")
		assert.True(collect, slices.ContainsFunc(conds, func(c any) bool {
			m, _ := c.(map[string]any)
			return m["type"] == "Reconciled" && m["status"] == "True"
		}), "Reconciled: %v", conds)
	}, controllerTimeout, 50*time.Millisecond, "PrometheusServer %s not rendered", server)

	cancel()
	stopped = true
	// Wait reports the cancellation when the controller exited 0.
	if err := <-exited; !errors.Is(err, context.Canceled) {
		require.NoError(t, err, "the controller did not stop cleanly:\n%s", log.String())
	}
	require.Contains(t, log.String(), "msg=starting")
	require.NotContains(t, strings.ToLower(log.String()), "forbidden", "an RBAC denial: the chart's RBAC misses a permission")
}

// serviceAccountKubeconfig writes a kubeconfig that reaches the API server
// with a token of the service account namespace/name, as a pod of it
// would.
func serviceAccountKubeconfig(t *testing.T, cp *controlplane.ControlPlane, c client.Client, namespace, name string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: name}, sa), "the chart's service account")
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	require.NoError(t, c.SubResource("token").Create(t.Context(), sa, req))
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: cp.Config.Host, CertificateAuthorityData: cp.Config.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: req.Status.Token}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: name, Namespace: namespace}
	cfg.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}
