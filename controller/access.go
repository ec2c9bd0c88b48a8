package controller

import (
	"cmp"
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
)

// accessName is the name of the Role, and of its RoleBinding, that let the
// reloaders of server read its config Secret and rule ConfigMaps from the
// API server.
func accessName(server *v1alpha1.PrometheusServer) string {
	return server.Name + "-config-reloader"
}

// renderAccess renders what the reloaders of server need with the API
// source (apiSource): a Role, in the server's namespace, that reads the
// config Secret and the rule ConfigMaps, and its RoleBinding to the pods'
// service account. Both are nil with the volume source. Owner references
// are not set.
//
// The Secret is granted by name: Kubernetes checks a list or watch that
// selects the field metadata.name=<name> against resourceNames, so the
// reloaders can watch it and nothing else. A list or watch by label
// selector cannot be limited that way: the ConfigMaps rule grants list
// and watch on every ConfigMap of the namespace (not get: the reloaders
// never read one by name).
func renderAccess(server *v1alpha1.PrometheusServer) (*rbacv1.Role, *rbacv1.RoleBinding) {
	if !apiSource(server) {
		return nil, nil
	}
	meta := metav1.ObjectMeta{Name: accessName(server), Namespace: server.Namespace, Labels: selectorLabels(server)}
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: meta,
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{ConfigSecretName(server)}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}},
		},
	}
	binding := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: *meta.DeepCopy(),
		Subjects: []rbacv1.Subject{{
			Kind:      rbacv1.ServiceAccountKind,
			Name:      cmp.Or(server.Spec.ServiceAccountName, "default"),
			Namespace: server.Namespace,
		}},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
	}
	return role, binding
}

func syncRole(live, desired *rbacv1.Role) bool {
	if equality.Semantic.DeepEqual(live.Rules, desired.Rules) {
		return false
	}
	live.Rules = desired.Rules
	return true
}

// syncRoleBinding copies the subjects and the role reference; the API
// server refuses a change of the latter, which never changes for a
// binding the controller created.
func syncRoleBinding(live, desired *rbacv1.RoleBinding) bool {
	if equality.Semantic.DeepEqual(live.Subjects, desired.Subjects) && live.RoleRef == desired.RoleRef {
		return false
	}
	live.Subjects, live.RoleRef = desired.Subjects, desired.RoleRef
	return true
}

// deleteAccess deletes the RoleBinding and the Role of renderAccess, when
// server controls them: a server switched to the volume source keeps no
// grant.
func (r *reconciler) deleteAccess(ctx context.Context, server *v1alpha1.PrometheusServer) error {
	meta := metav1.ObjectMeta{Namespace: server.Namespace, Name: accessName(server)}
	if err := r.deleteOwned(ctx, server, "RoleBinding", &rbacv1.RoleBinding{ObjectMeta: meta}); err != nil {
		return err
	}
	return r.deleteOwned(ctx, server, "Role", &rbacv1.Role{ObjectMeta: *meta.DeepCopy()})
}

// deleteOwned deletes obj, of kind, named by its namespace and name, if it
// exists and server controls it.
func (r *reconciler) deleteOwned(ctx context.Context, server *v1alpha1.PrometheusServer, kind string, obj client.Object) error {
	key := client.ObjectKeyFromObject(obj)
	if err := r.client.Get(ctx, key, obj); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("get %s %s: %w", kind, key, err)
		}
		return nil
	}
	if !metav1.IsControlledBy(obj, server) {
		return nil
	}
	r.metrics.writes.WithLabelValues(kind, "delete").Inc()
	uid := obj.GetUID()
	if err := r.client.Delete(ctx, obj, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete %s %s: %w", kind, key, err)
	}
	r.logger.Info("deleted", "server", client.ObjectKeyFromObject(server), "kind", kind, "name", key.Name)
	return nil
}
