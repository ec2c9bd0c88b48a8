// Package deploy_test applies the manifests of deploy/ to a real
// kube-apiserver and etcd (built by `make controlplane`), the way a user
// running `kubectl apply -k` would, and checks what the RBAC they grant
// allows.
package deploy_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/podreload/podreload/internal/testenv/controlplane"
)

const (
	// fieldOwner is the field manager of every apply of this test.
	fieldOwner = "deploy-test"
	// controllerNamespace is where the controller runs.
	controllerNamespace = "podreload-system"
	// controllerName names the controller's Deployment, ServiceAccount and ClusterRole.
	controllerName = "podreload-controller"
	// leaderElectionRole names the controller's Role and RoleBinding.
	leaderElectionRole = "podreload-controller-leader-election"
	// establishTimeout bounds the wait for a CRD to be served.
	establishTimeout = 30 * time.Second
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// kustomizations are the kustomization files of deploy/: the controller,
// the example and the mixin's alerts.
func kustomizations() []string {
	return []string{"kustomization.yaml", "example/kustomization.yaml", "mixin/kustomization.yaml"}
}

// kustomization is the part of a kustomization file this test reads.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Resources  []string `json:"resources"`
}

// listedManifests returns the resources of every kustomization, as paths
// relative to deploy/, in the order they are listed.
func listedManifests(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, k := range kustomizations() {
		data, err := os.ReadFile(k)
		require.NoError(t, err)
		var kust kustomization
		require.NoError(t, sigsyaml.Unmarshal(data, &kust), k)
		require.Equal(t, "kustomize.config.k8s.io/v1beta1", kust.APIVersion, k)
		require.Equal(t, "Kustomization", kust.Kind, k)
		require.Empty(t, kust.Namespace, "%s: every object names its own namespace", k)
		require.NotEmpty(t, kust.Resources, k)
		for _, r := range kust.Resources {
			file := path.Join(path.Dir(k), r)
			require.FileExists(t, file, "%s lists %s", k, r)
			files = append(files, file)
		}
	}
	return files
}

// TestKustomizationsListEveryManifest fails when a manifest in deploy/ is
// listed by no kustomization, or listed twice, or a listed one is missing.
// testdata/ directories hold test fixtures, not manifests.
func TestKustomizationsListEveryManifest(t *testing.T) {
	listed := listedManifests(t)
	var onDisk []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == "testdata" {
			return fs.SkipDir
		}
		if err != nil || d.IsDir() {
			return err
		}
		if filepath.Ext(p) == ".yml" {
			return fmt.Errorf("%s: name manifests *.yaml", p)
		}
		if filepath.Ext(p) == ".yaml" && d.Name() != "kustomization.yaml" {
			onDisk = append(onDisk, filepath.ToSlash(p))
		}
		return nil
	})
	require.NoError(t, err)
	require.ElementsMatch(t, onDisk, listed)
}

// manifest is one object of a manifest file.
type manifest struct {
	file string
	obj  *unstructured.Unstructured
}

func (m manifest) String() string {
	return fmt.Sprintf("%s %s (%s)", m.obj.GetKind(), client.ObjectKeyFromObject(m.obj), m.file)
}

// readManifests decodes every document of the files listed by the
// kustomizations.
func readManifests(t *testing.T) []manifest {
	t.Helper()
	var out []manifest
	for _, file := range listedManifests(t) {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			obj := &unstructured.Unstructured{}
			err := dec.Decode(&obj.Object)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, file)
			if len(obj.Object) == 0 {
				continue
			}
			require.NotEmpty(t, obj.GetAPIVersion(), "%s: apiVersion", file)
			require.NotEmpty(t, obj.GetKind(), "%s: kind", file)
			require.NotEmpty(t, obj.GetName(), "%s: a %s without a name", file, obj.GetKind())
			out = append(out, manifest{file: file, obj: obj})
		}
	}
	return out
}

// Apply phases: an object is applied once those it depends on are served.
const (
	phaseCRD = iota
	phaseNamespace
	phaseBuiltin
	phaseCustom
)

// phase returns when m is applied; custom holds the kinds the CRDs define.
func phase(m manifest, custom map[schema.GroupKind]bool) int {
	gk := m.obj.GroupVersionKind().GroupKind()
	switch {
	case gk == schema.GroupKind{Group: apiextensionsv1.GroupName, Kind: "CustomResourceDefinition"}:
		return phaseCRD
	case gk == schema.GroupKind{Kind: "Namespace"}:
		return phaseNamespace
	case custom[gk]:
		return phaseCustom
	default:
		return phaseBuiltin
	}
}

// TestManifestsOnAPIServer applies every manifest with server-side apply,
// CRDs first, and checks the objects, the controller's hardening and what
// its RBAC allows. One API server for the package: it takes seconds to start.
func TestManifestsOnAPIServer(t *testing.T) {
	manifests := readManifests(t)

	cfg := controlplane.Start(t).Config

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		apiextensionsv1.AddToScheme, appsv1.AddToScheme, rbacv1.AddToScheme, authorizationv1.AddToScheme,
	} {
		require.NoError(t, add(scheme))
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	ctx := t.Context()

	custom := map[schema.GroupKind]bool{}
	var crds []string
	for _, m := range manifests {
		if phase(m, nil) != phaseCRD {
			continue
		}
		var crd apiextensionsv1.CustomResourceDefinition
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(m.obj.Object, &crd), m.String())
		custom[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = true
		crds = append(crds, crd.Name)
	}
	require.NotEmpty(t, crds)

	var phases [phaseCustom + 1][]manifest
	for _, m := range manifests {
		phases[phase(m, custom)] = append(phases[phase(m, custom)], m)
	}
	for p, ms := range phases {
		if p == phaseNamespace {
			for _, name := range crds {
				waitEstablished(t, c, name)
			}
		}
		for _, m := range ms {
			err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(m.obj.DeepCopy()),
				client.FieldOwner(fieldOwner), client.ForceOwnership)
			require.NoError(t, err, "apply %s", m)
		}
	}

	t.Run("every object exists", func(t *testing.T) {
		for _, m := range manifests {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(m.obj.GroupVersionKind())
			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(m.obj), got), m.String())
			require.True(t, slices.ContainsFunc(got.GetManagedFields(), func(f metav1.ManagedFieldsEntry) bool {
				return f.Manager == fieldOwner && f.Operation == metav1.ManagedFieldsOperationApply
			}), "%s: no fields applied by %s: %v", m, fieldOwner, got.GetManagedFields())
		}
	})

	t.Run("controller ClusterRole has no wildcard", func(t *testing.T) {
		var role rbacv1.ClusterRole
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: controllerName}, &role))
		require.NotEmpty(t, role.Rules)
		for _, rule := range role.Rules {
			require.NotContains(t, rule.Verbs, rbacv1.VerbAll, "%+v", rule)
			require.NotContains(t, rule.Resources, rbacv1.ResourceAll, "%+v", rule)
			require.NotContains(t, rule.APIGroups, rbacv1.APIGroupAll, "%+v", rule)
			require.Empty(t, rule.NonResourceURLs, "%+v", rule)
		}
	})

	t.Run("controller container is locked down", func(t *testing.T) {
		var deploy appsv1.Deployment
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: controllerNamespace, Name: controllerName}, &deploy))
		require.Equal(t, controllerName, deploy.Spec.Template.Spec.ServiceAccountName)
		require.Len(t, deploy.Spec.Template.Spec.Containers, 1)
		sc := deploy.Spec.Template.Spec.Containers[0].SecurityContext
		require.NotNil(t, sc)
		require.NotNil(t, sc.ReadOnlyRootFilesystem)
		require.True(t, *sc.ReadOnlyRootFilesystem, "readOnlyRootFilesystem")
		require.NotNil(t, sc.RunAsNonRoot)
		require.True(t, *sc.RunAsNonRoot, "runAsNonRoot")
		require.NotNil(t, sc.AllowPrivilegeEscalation)
		require.False(t, *sc.AllowPrivilegeEscalation, "allowPrivilegeEscalation")
	})

	t.Run("controller RBAC", func(t *testing.T) {
		const clusterBinding = `ClusterRoleBinding "` + controllerName + `" of ClusterRole "` + controllerName + `"`
		const leaseBinding = `RoleBinding "` + leaderElectionRole + `/` + controllerNamespace + `" of Role "` + leaderElectionRole + `"`
		for _, tc := range []struct {
			verb, group, resource, subresource, namespace string
			// allowedBy is the binding that must allow the request; empty
			// means the request must be denied.
			allowedBy string
		}{
			{"get", "podreload.dev", "prometheusservers", "", "default", clusterBinding},
			{"list", "podreload.dev", "prometheusservers", "", "", clusterBinding},
			{"watch", "podreload.dev", "prometheusservers", "", "", clusterBinding},
			{"get", "podreload.dev", "prometheusservers", "status", "team-a", clusterBinding},
			{"update", "podreload.dev", "prometheusservers", "status", "team-a", clusterBinding},
			{"patch", "podreload.dev", "prometheusservers", "status", "team-a", clusterBinding},
			{"get", "monitoring.coreos.com", "prometheuses", "", "team-a", clusterBinding},
			{"list", "monitoring.coreos.com", "prometheuses", "", "", clusterBinding},
			{"watch", "monitoring.coreos.com", "prometheuses", "", "", clusterBinding},
			{"patch", "monitoring.coreos.com", "prometheuses", "", "team-a", clusterBinding},
			{"get", "monitoring.coreos.com", "prometheuses", "status", "team-a", clusterBinding},
			{"update", "monitoring.coreos.com", "prometheuses", "status", "team-a", clusterBinding},
			{"patch", "monitoring.coreos.com", "prometheuses", "status", "team-a", clusterBinding},
			// Owner references with blockOwnerDeletion to a Prometheus.
			{"update", "monitoring.coreos.com", "prometheuses", "finalizers", "team-a", clusterBinding},
			// The same for a PrometheusAgent.
			{"get", "monitoring.coreos.com", "prometheusagents", "", "team-a", clusterBinding},
			{"list", "monitoring.coreos.com", "prometheusagents", "", "", clusterBinding},
			{"watch", "monitoring.coreos.com", "prometheusagents", "", "", clusterBinding},
			{"patch", "monitoring.coreos.com", "prometheusagents", "status", "team-a", clusterBinding},
			{"update", "monitoring.coreos.com", "prometheusagents", "finalizers", "team-a", clusterBinding},
			{"get", "monitoring.coreos.com", "alertmanagers", "", "team-a", clusterBinding},
			{"list", "monitoring.coreos.com", "alertmanagers", "", "", clusterBinding},
			{"watch", "monitoring.coreos.com", "alertmanagers", "", "", clusterBinding},
			{"patch", "monitoring.coreos.com", "alertmanagers", "", "team-a", clusterBinding},
			{"patch", "monitoring.coreos.com", "alertmanagers", "status", "team-a", clusterBinding},
			{"update", "monitoring.coreos.com", "alertmanagers", "finalizers", "team-a", clusterBinding},
			{"list", "monitoring.coreos.com", "alertmanagerconfigs", "", "", clusterBinding},
			{"watch", "monitoring.coreos.com", "alertmanagerconfigs", "", "", clusterBinding},
			{"get", "monitoring.coreos.com", "alertmanagerconfigs", "status", "team-a", clusterBinding},
			{"update", "monitoring.coreos.com", "alertmanagerconfigs", "status", "team-a", clusterBinding},
			{"patch", "monitoring.coreos.com", "alertmanagerconfigs", "status", "team-a", clusterBinding},
			{"get", "monitoring.coreos.com", "servicemonitors", "", "team-a", clusterBinding},
			{"list", "monitoring.coreos.com", "servicemonitors", "", "", clusterBinding},
			{"watch", "monitoring.coreos.com", "servicemonitors", "", "", clusterBinding},
			{"get", "monitoring.coreos.com", "podmonitors", "", "team-a", clusterBinding},
			{"list", "monitoring.coreos.com", "podmonitors", "", "", clusterBinding},
			{"watch", "monitoring.coreos.com", "podmonitors", "", "", clusterBinding},
			{"get", "monitoring.coreos.com", "probes", "", "team-a", clusterBinding},
			{"list", "monitoring.coreos.com", "probes", "", "", clusterBinding},
			{"watch", "monitoring.coreos.com", "probes", "", "", clusterBinding},
			{"get", "monitoring.coreos.com", "scrapeconfigs", "", "team-a", clusterBinding},
			{"list", "monitoring.coreos.com", "scrapeconfigs", "", "", clusterBinding},
			{"watch", "monitoring.coreos.com", "scrapeconfigs", "", "", clusterBinding},
			{"get", "monitoring.coreos.com", "prometheusrules", "", "team-a", clusterBinding},
			{"list", "monitoring.coreos.com", "prometheusrules", "", "", clusterBinding},
			{"watch", "monitoring.coreos.com", "prometheusrules", "", "", clusterBinding},
			{"get", "", "namespaces", "", "", clusterBinding},
			{"list", "", "namespaces", "", "", clusterBinding},
			{"watch", "", "namespaces", "", "", clusterBinding},
			{"get", "", "secrets", "", "team-a", clusterBinding},
			{"list", "", "secrets", "", "", clusterBinding},
			{"watch", "", "secrets", "", "", clusterBinding},
			{"create", "", "secrets", "", "team-a", clusterBinding},
			{"update", "", "secrets", "", "team-a", clusterBinding},
			{"patch", "", "secrets", "", "team-a", clusterBinding},
			{"delete", "", "secrets", "", "team-a", clusterBinding},
			{"get", "", "configmaps", "", "team-a", clusterBinding},
			{"list", "", "configmaps", "", "", clusterBinding},
			{"watch", "", "configmaps", "", "", clusterBinding},
			{"create", "", "configmaps", "", "team-a", clusterBinding},
			{"update", "", "configmaps", "", "team-a", clusterBinding},
			{"patch", "", "configmaps", "", "team-a", clusterBinding},
			{"delete", "", "configmaps", "", "team-a", clusterBinding},
			{"get", "", "services", "", "team-a", clusterBinding},
			{"list", "", "services", "", "", clusterBinding},
			{"watch", "", "services", "", "", clusterBinding},
			{"create", "", "services", "", "team-a", clusterBinding},
			{"update", "", "services", "", "team-a", clusterBinding},
			{"patch", "", "services", "", "team-a", clusterBinding},
			{"get", "apps", "statefulsets", "", "team-a", clusterBinding},
			{"list", "apps", "statefulsets", "", "", clusterBinding},
			{"watch", "apps", "statefulsets", "", "", clusterBinding},
			{"create", "apps", "statefulsets", "", "team-a", clusterBinding},
			{"update", "apps", "statefulsets", "", "team-a", clusterBinding},
			{"patch", "apps", "statefulsets", "", "team-a", clusterBinding},
			{"delete", "apps", "statefulsets", "", "team-a", clusterBinding},
			{"get", "rbac.authorization.k8s.io", "roles", "", "team-a", clusterBinding},
			{"list", "rbac.authorization.k8s.io", "roles", "", "", clusterBinding},
			{"watch", "rbac.authorization.k8s.io", "roles", "", "", clusterBinding},
			{"create", "rbac.authorization.k8s.io", "roles", "", "team-a", clusterBinding},
			{"update", "rbac.authorization.k8s.io", "roles", "", "team-a", clusterBinding},
			// A Prometheus handed back: the Role only our pods used.
			{"delete", "rbac.authorization.k8s.io", "roles", "", "team-a", clusterBinding},
			{"get", "rbac.authorization.k8s.io", "rolebindings", "", "team-a", clusterBinding},
			{"list", "rbac.authorization.k8s.io", "rolebindings", "", "", clusterBinding},
			{"watch", "rbac.authorization.k8s.io", "rolebindings", "", "", clusterBinding},
			{"create", "rbac.authorization.k8s.io", "rolebindings", "", "team-a", clusterBinding},
			{"update", "rbac.authorization.k8s.io", "rolebindings", "", "team-a", clusterBinding},
			{"delete", "rbac.authorization.k8s.io", "rolebindings", "", "team-a", clusterBinding},
			// Granted in the Roles of the servers' pods, never used.
			{"patch", "", "pods", "", "team-a", clusterBinding},
			// What the config-reloaders report in their pods.
			{"get", "", "pods", "", "team-a", clusterBinding},
			{"list", "", "pods", "", "", clusterBinding},
			{"watch", "", "pods", "", "", clusterBinding},
			{"create", "events.k8s.io", "events", "", "team-a", clusterBinding},
			{"patch", "events.k8s.io", "events", "", "team-a", clusterBinding},
			{"update", "events.k8s.io", "events", "", "team-a", clusterBinding},
			{"get", "coordination.k8s.io", "leases", "", controllerNamespace, leaseBinding},
			{"create", "coordination.k8s.io", "leases", "", controllerNamespace, leaseBinding},
			{"update", "coordination.k8s.io", "leases", "", controllerNamespace, leaseBinding},
			{"create", "", "events", "", controllerNamespace, leaseBinding},
			{"patch", "", "events", "", controllerNamespace, leaseBinding},

			{"create", "", "pods", "", "team-a", ""},
			{"update", "", "pods", "", "team-a", ""},
			{"delete", "", "pods", "", "team-a", ""},
			// A Prometheus' spec is its user's: never written (patch removes only
			// prometheus-operator's finalizer), never deleted.
			{"create", "monitoring.coreos.com", "prometheuses", "", "team-a", ""},
			{"update", "monitoring.coreos.com", "prometheuses", "", "team-a", ""},
			{"delete", "monitoring.coreos.com", "prometheuses", "", "team-a", ""},
			{"update", "monitoring.coreos.com", "alertmanagers", "", "team-a", ""},
			{"delete", "monitoring.coreos.com", "alertmanagers", "", "team-a", ""},
			{"update", "monitoring.coreos.com", "alertmanagerconfigs", "", "team-a", ""},
			{"delete", "", "persistentvolumeclaims", "", "team-a", ""},
			{"update", "monitoring.coreos.com", "servicemonitors", "", "team-a", ""},
			{"delete", "monitoring.coreos.com", "prometheusrules", "", "team-a", ""},
			{"update", "monitoring.coreos.com", "probes", "", "team-a", ""},
			{"create", "monitoring.coreos.com", "scrapeconfigs", "", "team-a", ""},
			{"update", "podreload.dev", "prometheusservers", "", "team-a", ""},
			{"delete", "podreload.dev", "prometheusservers", "", "team-a", ""},
			{"create", "apps", "deployments", "", "team-a", ""},
			{"delete", "", "services", "", "team-a", ""},
			{"delete", "", "namespaces", "", "", ""},
			{"get", "", "nodes", "", "", ""},
			{"create", "", "events", "", "team-a", ""},
			{"create", "coordination.k8s.io", "leases", "", "default", ""},
			{"delete", "coordination.k8s.io", "leases", "", controllerNamespace, ""},
			{"escalate", "rbac.authorization.k8s.io", "clusterroles", "", "", ""},
			{"escalate", "rbac.authorization.k8s.io", "roles", "", "team-a", ""},
			{"bind", "rbac.authorization.k8s.io", "roles", "", "team-a", ""},
			{"bind", "rbac.authorization.k8s.io", "clusterroles", "", "", ""},
			{"patch", "rbac.authorization.k8s.io", "roles", "", "team-a", ""},
			{"create", "rbac.authorization.k8s.io", "clusterroles", "", "", ""},
			{"create", "rbac.authorization.k8s.io", "clusterrolebindings", "", "", ""},
		} {
			name := fmt.Sprintf("%s %s/%s/%s in %q", tc.verb, tc.group, tc.resource, tc.subresource, tc.namespace)
			t.Run(name, func(t *testing.T) {
				attrs := &authorizationv1.ResourceAttributes{
					Namespace: tc.namespace, Verb: tc.verb, Group: tc.group,
					Resource: tc.resource, Subresource: tc.subresource,
				}
				got := review(t, c, controllerName, attrs)
				if tc.allowedBy == "" {
					require.False(t, got.Allowed, "allowed: %s", got.Reason)
					return
				}
				require.True(t, got.Allowed, "denied: %s %s", got.Reason, got.EvaluationError)
				require.Contains(t, got.Reason, "RBAC: allowed by "+tc.allowedBy)
				// The same request from another account of the namespace is
				// denied: the permission comes from the manifests alone.
				other := review(t, c, "default", attrs)
				require.False(t, other.Allowed, "allowed without the controller's bindings: %s", other.Reason)
			})
		}
	})
}

// waitEstablished waits until the CRD name is served.
func waitEstablished(t *testing.T, c client.Client, name string) {
	t.Helper()
	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		var crd apiextensionsv1.CustomResourceDefinition
		if !assert.NoError(collect, c.Get(t.Context(), client.ObjectKey{Name: name}, &crd)) {
			return
		}
		i := slices.IndexFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
			return c.Type == apiextensionsv1.Established
		})
		if assert.GreaterOrEqual(collect, i, 0, "no Established condition: %+v", crd.Status.Conditions) {
			assert.Equal(collect, apiextensionsv1.ConditionTrue, crd.Status.Conditions[i].Status, "%+v", crd.Status.Conditions[i])
		}
	}, establishTimeout, 50*time.Millisecond, "CRD %s not established", name)
}

// review asks the API server whether the service account sa of the
// controller's namespace may do what attrs describe, with the groups a real
// request from that account carries.
func review(t *testing.T, c client.Client, sa string, attrs *authorizationv1.ResourceAttributes) authorizationv1.SubjectAccessReviewStatus {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "system:serviceaccount:" + controllerNamespace + ":" + sa,
		Groups: []string{
			"system:serviceaccounts", "system:serviceaccounts:" + controllerNamespace, "system:authenticated",
		},
		ResourceAttributes: attrs,
	}}
	require.NoError(t, c.Create(t.Context(), sar))
	return sar.Status
}
