package prometheusserver

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promserver"
)

// TestRenderAccess checks the exact grant to the pods' service account:
// patch on the StatefulSet's pods by name, whatever the source; with the
// API source, the config Secret by name and the ConfigMaps of the namespace
// for list and watch only.
func TestRenderAccess(t *testing.T) {
	meta := metav1.ObjectMeta{
		Namespace: "monitoring",
		Name:      "main-config-reloader",
		Labels:    map[string]string{kube.LabelName: promserver.App, promserver.LabelInstance: "main"},
	}
	secrets := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"main-config"}, Verbs: []string{"get", "list", "watch"}}
	configMaps := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}}
	pods := func(names ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: names, Verbs: []string{"patch"}}
	}
	// Without a claim, each pod's state Secret by name.
	state := func(names ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: names, Verbs: []string{"get", "update", "patch"}}
	}
	role := func(rules ...rbacv1.PolicyRule) *rbacv1.Role {
		return &rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: meta,
			Rules:      append([]rbacv1.PolicyRule{}, rules...),
		}
	}
	wantRole := role(secrets, state("main-0-reloader-state"), configMaps, pods("main-0"))
	binding := func(sa string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: meta,
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: "monitoring"}},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "main-config-reloader"},
		}
	}
	for _, tc := range []struct {
		name        string
		server      func(*v1alpha1.PrometheusServer)
		role        *rbacv1.Role
		roleBinding *rbacv1.RoleBinding
	}{
		{name: "default service account", role: wantRole, roleBinding: binding("default")},
		{name: "service account", server: func(s *v1alpha1.PrometheusServer) { s.Spec.ServiceAccountName = "prometheus" }, role: wantRole, roleBinding: binding("prometheus")},
		{name: "api spelled out", server: func(s *v1alpha1.PrometheusServer) { s.Spec.Reloader.Source = v1alpha1.SourceAPI }, role: wantRole, roleBinding: binding("default")},
		{name: "volume source", server: volume, role: role(state("main-0-reloader-state"), pods("main-0")), roleBinding: binding("default")},
		{name: "replicas", server: func(s *v1alpha1.PrometheusServer) { s.Spec.Replicas = ptr.To[int32](3) },
			role: role(secrets, state("main-0-reloader-state", "main-1-reloader-state", "main-2-reloader-state"), configMaps, pods("main-0", "main-1", "main-2")), roleBinding: binding("default")},
		{name: "shards", server: func(s *v1alpha1.PrometheusServer) { s.Spec.Shards = ptr.To[int32](2) },
			role: role(secrets, state("main-0-reloader-state", "main-shard-1-0-reloader-state"), configMaps, pods("main-0", "main-shard-1-0")), roleBinding: binding("default")},
		// On a claim, the state is kept there: no state Secret.
		{name: "claim", server: func(s *v1alpha1.PrometheusServer) {
			s.Spec.Storage = &v1alpha1.StorageSpec{VolumeClaimTemplate: &monitoringv1.EmbeddedPersistentVolumeClaim{}}
		}, role: role(secrets, configMaps, pods("main-0")), roleBinding: binding("default")},
		// No rule without names: it would grant every pod.
		{name: "no replica", server: func(s *v1alpha1.PrometheusServer) { s.Spec.Replicas = ptr.To[int32](0) },
			role: role(secrets, configMaps), roleBinding: binding("default")},
		{name: "volume source, no replica", server: func(s *v1alpha1.PrometheusServer) { volume(s); s.Spec.Replicas = ptr.To[int32](0) },
			role: role(), roleBinding: binding("default")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := testServer()
			if tc.server != nil {
				tc.server(server)
			}
			role, roleBinding := promserver.RenderAccess(promserver.OwnTarget(server), 0)
			require.Empty(t, cmp.Diff(tc.role, role))
			require.Empty(t, cmp.Diff(tc.roleBinding, roleBinding))
		})
	}
}

// accessKey names the Role and RoleBinding of server.
func accessKey(server *v1alpha1.PrometheusServer) client.ObjectKey {
	return client.ObjectKey{Namespace: server.Namespace, Name: promserver.AccessName(promserver.OwnTarget(server))}
}

// waitAccess waits until the Role and RoleBinding of server are what
// renderAccess gives for spec, controlled by server.
func (cp *controlPlane) waitAccess(t *testing.T, server *v1alpha1.PrometheusServer, spec func(*v1alpha1.PrometheusServerSpec)) {
	t.Helper()
	want := server.DeepCopy()
	if spec != nil {
		spec(&want.Spec)
	}
	wantRole, wantBinding := promserver.RenderAccess(promserver.OwnTarget(want), 0)
	require.NotNil(t, wantRole)
	eventually(t, func(c *assert.CollectT) {
		var role rbacv1.Role
		var binding rbacv1.RoleBinding
		if !assert.NoError(c, cp.c.Get(t.Context(), accessKey(server), &role)) || !assert.NoError(c, cp.c.Get(t.Context(), accessKey(server), &binding)) {
			return
		}
		assert.Empty(c, cmp.Diff(wantRole.Rules, role.Rules), "Role rules")
		assert.Empty(c, cmp.Diff(wantBinding.Subjects, binding.Subjects), "RoleBinding subjects")
		assert.Equal(c, wantBinding.RoleRef, binding.RoleRef)
		for _, obj := range []metav1.Object{&role, &binding} {
			if ref := metav1.GetControllerOf(obj); assert.NotNil(c, ref, "controller of %T", obj) {
				assert.Equal(c, server.UID, ref.UID)
			}
		}
	})
}

// testAccess follows the Role and RoleBinding of a server through its
// changes: created with the API source, put back when someone widens the
// Role or binds it to another account, bound to the server's service
// account when it changes, naming the pods when the replicas change,
// narrowed to the pods when the server switches to the volume source, and
// widened again when it switches back.
func (cp *controlPlane) testAccess(t *testing.T) {
	ns := cp.namespace(t, "access", nil)
	run := cp.start(t, kube.Options{Namespaces: []string{ns}})
	srv := server(ns, "main", nil)
	cp.create(t, srv)
	cp.waitAccess(t, srv, nil)
	var sts appsv1.StatefulSet
	cp.waitFor(t, client.ObjectKeyFromObject(srv), &sts)
	require.Equal(t, ptr.To(true), sts.Spec.Template.Spec.AutomountServiceAccountToken)
	apiHash := sts.Spec.Template.Annotations[promserver.AnnotationInputHash]

	meta := metav1.ObjectMeta{Namespace: ns, Name: promserver.AccessName(promserver.OwnTarget(srv))}
	edit(t, cp.c, &rbacv1.Role{ObjectMeta: meta}, func(r *rbacv1.Role) {
		r.Rules[0].ResourceNames = nil
		r.Rules[1].Verbs = append(r.Rules[1].Verbs, "get")
	})
	edit(t, cp.c, &rbacv1.RoleBinding{ObjectMeta: meta}, func(b *rbacv1.RoleBinding) {
		b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "intruder", Namespace: ns})
	})
	cp.waitAccess(t, srv, nil)

	edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) { s.Spec.ServiceAccountName = "prometheus" })
	sa := func(s *v1alpha1.PrometheusServerSpec) { s.ServiceAccountName = "prometheus" }
	cp.waitAccess(t, srv, sa)

	edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) { s.Spec.Replicas = ptr.To[int32](2) })
	sa = func(s *v1alpha1.PrometheusServerSpec) {
		s.ServiceAccountName = "prometheus"
		s.Replicas = ptr.To[int32](2)
	}
	cp.waitAccess(t, srv, sa)

	// To the volume source: only the pods' grant stays, the pods mount the Secret.
	edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) { s.Spec.Reloader.Source = v1alpha1.SourceVolume })
	cp.waitAccess(t, srv, func(s *v1alpha1.PrometheusServerSpec) { sa(s); s.Reloader.Source = v1alpha1.SourceVolume })
	eventually(t, func(c *assert.CollectT) {
		var sts appsv1.StatefulSet
		if assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKeyFromObject(srv), &sts)) {
			assert.NotEqual(c, apiHash, sts.Spec.Template.Annotations[promserver.AnnotationInputHash])
			assert.Equal(c, ptr.To(true), sts.Spec.Template.Spec.AutomountServiceAccountToken, "the sidecar reports with the token")
			assert.True(c, slices.ContainsFunc(sts.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
				return v.Secret != nil && v.Secret.SecretName == promserver.ConfigSecretName(srv)
			}), "config Secret volume")
		}
	})

	// Back to the API source.
	edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) { s.Spec.Reloader.Source = v1alpha1.SourceAPI })
	cp.waitAccess(t, srv, sa)
	eventually(t, func(c *assert.CollectT) {
		var sts appsv1.StatefulSet
		if assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKeyFromObject(srv), &sts)) {
			assert.Empty(c, slices.DeleteFunc(sts.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Secret == nil }), "no Secret volume")
		}
	})
	require.Zero(t, metricValue(t, run.reg, "podreload_controller_reconcile_errors_total"))
}

// deployRBAC creates the ClusterRole and ClusterRoleBinding of
// deploy/controller-rbac.yaml, as they are there (once: a second call keeps
// them), and returns the user the
// binding grants them to: the controller's service account.
func (cp *controlPlane) deployRBAC(t *testing.T) rest.ImpersonationConfig {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "deploy", "controller-rbac.yaml"))
	require.NoError(t, err)
	defer f.Close()
	dec := k8syaml.NewYAMLOrJSONDecoder(f, 4096)
	var role *rbacv1.ClusterRole
	var binding *rbacv1.ClusterRoleBinding
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		switch u.GetKind() {
		case "ClusterRole":
			role = new(rbacv1.ClusterRole)
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, role))
		case "ClusterRoleBinding":
			binding = new(rbacv1.ClusterRoleBinding)
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, binding))
		}
	}
	require.NotNil(t, role, "no ClusterRole in deploy/controller-rbac.yaml")
	require.NotNil(t, binding, "no ClusterRoleBinding in deploy/controller-rbac.yaml")
	require.Equal(t, role.Name, binding.RoleRef.Name)
	require.Len(t, binding.Subjects, 1)
	sa := binding.Subjects[0]
	require.Equal(t, rbacv1.ServiceAccountKind, sa.Kind)
	for _, obj := range []client.Object{role, binding} {
		if err := cp.c.Create(t.Context(), obj); !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err, "create %T %s", obj, obj.GetName())
		}
	}
	return serviceAccount(sa.Namespace, sa.Name)
}

// serviceAccount is the identity of a request made with the token of the
// service account namespace/name.
func serviceAccount(namespace, name string) rest.ImpersonationConfig {
	return rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + namespace + ":" + name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
}

// as is the administrator's config of cp, impersonating who.
func (cp *controlPlane) as(who rest.ImpersonationConfig) *rest.Config {
	cfg := rest.CopyConfig(cp.cfg)
	cfg.Impersonate = who
	return cfg
}

// testDeployRBAC runs the controller with exactly the ClusterRole of
// deploy/: the API server lets it create, update and delete the Role and
// RoleBinding of the pods without escalate or bind (it holds every
// permission the Role grants). The Role lets the pods' service account get,
// list and watch their config Secret and no other, list and watch the
// ConfigMaps of the namespace, and patch the StatefulSet's pods and no
// other.
func (cp *controlPlane) testDeployRBAC(t *testing.T) {
	controller := cp.deployRBAC(t)
	ns := cp.namespace(t, "deploy-rbac", nil)
	run := cp.start(t, kube.Options{Namespaces: []string{ns}, Config: cp.as(controller)})
	srv := server(ns, "main", func(s *v1alpha1.PrometheusServerSpec) {
		s.ServiceAccountName = "prometheus"
		s.RuleSelector = &metav1.LabelSelector{}
	})
	rule := prometheusRule(ns, "rules", nil, "up")
	cp.create(t, srv, rule, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other"}})
	cp.waitAccess(t, srv, nil)
	cp.waitReconciled(t, srv, metav1.ConditionTrue, "Reconciled", "")
	cp.waitRules(t, srv, []string{fileOf(rule)})

	// The controller is no administrator here.
	asController := newClient(t, cp.as(controller))
	err := asController.Delete(t.Context(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other"}})
	require.True(t, apierrors.IsForbidden(err), "the controller deletes a Service: %v", err)

	pod, err := client.NewWithWatch(cp.as(serviceAccount(ns, "prometheus")), client.Options{Scheme: asController.Scheme()})
	require.NoError(t, err)
	ctx := t.Context()
	byName := client.MatchingFields{"metadata.name": promserver.ConfigSecretName(srv)}
	rules := client.MatchingLabels{promserver.LabelRuleFiles: srv.Name}
	configKey := client.ObjectKey{Namespace: ns, Name: promserver.ConfigSecretName(srv)}
	// The API server's authorizer follows RBAC objects through a watch.
	eventually(t, func(c *assert.CollectT) {
		assert.NoError(c, pod.Get(ctx, configKey, &corev1.Secret{}), "get the config Secret")
	})
	var secrets corev1.SecretList
	require.NoError(t, pod.List(ctx, &secrets, client.InNamespace(ns), byName), "list the config Secret by name")
	require.Len(t, secrets.Items, 1)
	w, err := pod.Watch(ctx, &corev1.SecretList{}, client.InNamespace(ns), byName)
	require.NoError(t, err, "watch the config Secret by name")
	w.Stop()
	var cms corev1.ConfigMapList
	require.NoError(t, pod.List(ctx, &cms, client.InNamespace(ns), rules), "list the rule ConfigMaps")
	require.Len(t, cms.Items, 1)
	w, err = pod.Watch(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns), rules)
	require.NoError(t, err, "watch the rule ConfigMaps")
	w.Stop()
	for what, err := range map[string]error{
		"get another Secret":                 pod.Get(ctx, client.ObjectKey{Namespace: ns, Name: "other"}, &corev1.Secret{}),
		"list every Secret":                  pod.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)),
		"list another Secret by name":        pod.List(ctx, &corev1.SecretList{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": "other"}),
		"get a rule ConfigMap":               pod.Get(ctx, client.ObjectKey{Namespace: ns, Name: promserver.RuleShardName(promserver.OwnTarget(srv), 0)}, &corev1.ConfigMap{}),
		"update the config Secret":           pod.Update(ctx, &secrets.Items[0]),
		"list the ConfigMaps of another one": pod.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("default"), rules),
		"list the Secrets of another one":    pod.List(ctx, &corev1.SecretList{}, client.InNamespace("default"), byName),
	} {
		require.True(t, apierrors.IsForbidden(err), "%s: %v", what, err)
	}

	// It may update them: a Role someone narrowed, a binding to a new
	// service account.
	edit(t, cp.c, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: promserver.AccessName(promserver.OwnTarget(srv))}}, func(r *rbacv1.Role) {
		r.Rules[1].Verbs = []string{"list"}
	})
	cp.waitAccess(t, srv, nil)
	edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) { s.Spec.ServiceAccountName = "prometheus-2" })
	cp.waitAccess(t, srv, func(s *v1alpha1.PrometheusServerSpec) { s.ServiceAccountName = "prometheus-2" })
	pod2 := newClient(t, cp.as(serviceAccount(ns, "prometheus-2")))
	eventually(t, func(c *assert.CollectT) {
		err := pod.Get(ctx, configKey, &corev1.Secret{})
		assert.True(c, apierrors.IsForbidden(err), "the former service account still reads: %v", err)
		assert.NoError(c, pod2.Get(ctx, configKey, &corev1.Secret{}))
	})

	// To the volume source: the controller narrows the Role to the pods.
	edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) { s.Spec.Reloader.Source = v1alpha1.SourceVolume })
	cp.waitAccess(t, srv, func(s *v1alpha1.PrometheusServerSpec) {
		s.ServiceAccountName, s.Reloader.Source = "prometheus-2", v1alpha1.SourceVolume
	})
	eventually(t, func(c *assert.CollectT) {
		err := pod2.Get(ctx, configKey, &corev1.Secret{})
		assert.True(c, apierrors.IsForbidden(err), "the grant is gone: %v", err)
	})
	// Each pod may patch itself, to report what Prometheus runs; no pod
	// runs here, so an allowed patch finds none.
	patch := func(name string) error {
		return pod2.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, client.RawPatch(types.MergePatchType, []byte(`{}`)))
	}
	require.True(t, apierrors.IsNotFound(patch("main-0")), "patch its pod: %v", patch("main-0"))
	for _, name := range []string{"main-1", "other"} {
		require.True(t, apierrors.IsForbidden(patch(name)), "patch pod %s: %v", name, patch(name))
	}
	require.Zero(t, metricValue(t, run.reg, "podreload_controller_reconcile_errors_total"), "no request of the controller denied")
}
