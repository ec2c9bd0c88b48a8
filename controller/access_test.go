package controller

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
)

// TestRenderAccess checks the exact grant of the API source: the config
// Secret by name, the ConfigMaps of the namespace for list and watch only,
// to the pods' service account; nothing with the volume source.
func TestRenderAccess(t *testing.T) {
	meta := metav1.ObjectMeta{
		Namespace: "monitoring",
		Name:      "main-config-reloader",
		Labels:    map[string]string{labelName: "prometheus", labelInstance: "main"},
	}
	wantRole := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: meta,
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"main-config"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}},
		},
	}
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
		{name: "volume source", server: volume},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := testServer()
			if tc.server != nil {
				tc.server(server)
			}
			role, roleBinding := renderAccess(server)
			require.Empty(t, cmp.Diff(tc.role, role))
			require.Empty(t, cmp.Diff(tc.roleBinding, roleBinding))
		})
	}
}

// accessKey names the Role and RoleBinding of server.
func accessKey(server *v1alpha1.PrometheusServer) client.ObjectKey {
	return client.ObjectKey{Namespace: server.Namespace, Name: accessName(server)}
}

// waitAccess waits until the Role and RoleBinding of server are what
// renderAccess gives for spec, controlled by server.
func (cp *controlPlane) waitAccess(t *testing.T, server *v1alpha1.PrometheusServer, spec func(*v1alpha1.PrometheusServerSpec)) {
	t.Helper()
	want := server.DeepCopy()
	if spec != nil {
		spec(&want.Spec)
	}
	wantRole, wantBinding := renderAccess(want)
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

// waitNoAccess waits until server has neither Role nor RoleBinding.
func (cp *controlPlane) waitNoAccess(t *testing.T, server *v1alpha1.PrometheusServer) {
	t.Helper()
	eventually(t, func(c *assert.CollectT) {
		for _, obj := range []client.Object{&rbacv1.Role{}, &rbacv1.RoleBinding{}} {
			err := cp.c.Get(t.Context(), accessKey(server), obj)
			assert.True(c, apierrors.IsNotFound(err), "%T: %v", obj, err)
		}
	})
}

// testAccess follows the Role and RoleBinding of a server through its
// changes: created with the API source, put back when someone widens the
// Role or binds it to another account, bound to the server's service
// account when it changes, deleted when the server switches to the volume
// source (a Role of that name the server does not control stays), and
// created again when it switches back.
func (cp *controlPlane) testAccess(t *testing.T) {
	ns := cp.namespace(t, "access", nil)
	run := cp.start(t, Options{Namespaces: []string{ns}})
	srv := server(ns, "main", nil)
	cp.create(t, srv)
	cp.waitAccess(t, srv, nil)
	var sts appsv1.StatefulSet
	cp.waitFor(t, client.ObjectKeyFromObject(srv), &sts)
	require.Equal(t, ptr.To(true), sts.Spec.Template.Spec.AutomountServiceAccountToken)
	apiHash := sts.Spec.Template.Annotations[annotationInputHash]

	meta := metav1.ObjectMeta{Namespace: ns, Name: accessName(srv)}
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

	// To the volume source: the grant goes, the pods mount the Secret.
	edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) { s.Spec.Reloader.Source = v1alpha1.SourceVolume })
	cp.waitNoAccess(t, srv)
	eventually(t, func(c *assert.CollectT) {
		var sts appsv1.StatefulSet
		if assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKeyFromObject(srv), &sts)) {
			assert.NotEqual(c, apiHash, sts.Spec.Template.Annotations[annotationInputHash])
			assert.True(c, slices.ContainsFunc(sts.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
				return v.Secret != nil && v.Secret.SecretName == ConfigSecretName(srv)
			}), "config Secret volume")
		}
	})
	require.Equal(t, 1.0, metricValue(t, run.reg, "podreload_controller_writes_total", "kind", "Role", "verb", "delete"))
	require.Equal(t, 1.0, metricValue(t, run.reg, "podreload_controller_writes_total", "kind", "RoleBinding", "verb", "delete"))

	// Someone else's Role of that name is not the server's to delete.
	theirs := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: accessName(srv), Labels: selectorLabels(srv)}}
	cp.create(t, theirs)
	reconciles := metricValue(t, run.reg, "podreload_controller_reconciles_total")
	edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) { s.Labels = labelsOf("unrelated", "label") })
	eventually(t, func(c *assert.CollectT) {
		assert.Greater(c, metricValue(t, run.reg, "podreload_controller_reconciles_total"), reconciles)
	})
	run.settle(t)
	require.NoError(t, cp.c.Get(t.Context(), client.ObjectKeyFromObject(theirs), theirs), "a Role the server does not control stays")
	require.NoError(t, cp.c.Delete(t.Context(), theirs))

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
// deploy/controller-rbac.yaml, as they are there, and returns the user the
// binding grants them to: the controller's service account.
func (cp *controlPlane) deployRBAC(t *testing.T) rest.ImpersonationConfig {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "deploy", "controller-rbac.yaml"))
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
	cp.create(t, role, binding)
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
// RoleBinding of the API source without escalate or bind (it holds every
// permission the Role grants). The Role lets the pods' service account get,
// list and watch their config Secret and no other, and list and watch the
// ConfigMaps of the namespace.
func (cp *controlPlane) testDeployRBAC(t *testing.T) {
	controller := cp.deployRBAC(t)
	ns := cp.namespace(t, "deploy-rbac", nil)
	run := cp.start(t, Options{Namespaces: []string{ns}, Config: cp.as(controller)})
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
	err := asController.Delete(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other"}})
	require.True(t, apierrors.IsForbidden(err), "the controller deletes a Secret: %v", err)

	pod, err := client.NewWithWatch(cp.as(serviceAccount(ns, "prometheus")), client.Options{Scheme: asController.Scheme()})
	require.NoError(t, err)
	ctx := t.Context()
	byName := client.MatchingFields{"metadata.name": ConfigSecretName(srv)}
	rules := client.MatchingLabels{LabelRuleFiles: srv.Name}
	configKey := client.ObjectKey{Namespace: ns, Name: ConfigSecretName(srv)}
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
		"get a rule ConfigMap":               pod.Get(ctx, client.ObjectKey{Namespace: ns, Name: ruleShardName(srv, 0)}, &corev1.ConfigMap{}),
		"update the config Secret":           pod.Update(ctx, &secrets.Items[0]),
		"list the ConfigMaps of another one": pod.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("default"), rules),
		"list the Secrets of another one":    pod.List(ctx, &corev1.SecretList{}, client.InNamespace("default"), byName),
	} {
		require.True(t, apierrors.IsForbidden(err), "%s: %v", what, err)
	}

	// It may update them: a Role someone narrowed, a binding to a new
	// service account.
	edit(t, cp.c, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: accessName(srv)}}, func(r *rbacv1.Role) {
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

	// To the volume source: the controller may delete them too.
	edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) { s.Spec.Reloader.Source = v1alpha1.SourceVolume })
	cp.waitNoAccess(t, srv)
	eventually(t, func(c *assert.CollectT) {
		err := pod2.Get(ctx, configKey, &corev1.Secret{})
		assert.True(c, apierrors.IsForbidden(err), "the grant is gone: %v", err)
	})
	require.Zero(t, metricValue(t, run.reg, "podreload_controller_reconcile_errors_total"), "no request of the controller denied")
}
