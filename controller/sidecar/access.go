package sidecar

import (
	"cmp"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Access is what the reloaders of an object's pods may do.
type Access struct {
	// Name, Namespace and Labels of the Role and its RoleBinding.
	Name, Namespace string
	Labels          map[string]string
	// ServiceAccount of the pods; empty means default.
	ServiceAccount string
	// Secrets are the names of the Secrets the reloaders read (the API
	// source); none with volumes.
	Secrets []string
	// ConfigMaps lets the reloaders list and watch the namespace's
	// ConfigMaps (the API source of rule files).
	ConfigMaps bool
	// Pods are the names of the pods the reloaders report in.
	Pods []string
	// EveryPod lets the reloaders report in every pod of the namespace,
	// instead of Pods: the pods of a DaemonSet have generated names, which
	// a Role cannot list beforehand.
	EveryPod bool
	// StateSecrets are the names of the Secrets the reloaders keep their
	// state in (config-reloader's --state-secret): they read and write
	// them, and never create one (a Role cannot grant create by name).
	StateSecrets []string
}

// Role renders the Role a, and its RoleBinding to the pods' service
// account. Owner references are not set.
//
// The Secrets are granted by name: Kubernetes checks a list or watch that
// selects the field metadata.name=<name> against resourceNames, so the
// reloaders can watch them and nothing else. A list or watch by label
// selector cannot be limited that way: the ConfigMaps rule grants list and
// watch on every ConfigMap of the namespace (not get: the reloaders never
// read one by name). The reloaders patch their own pod to report what the
// server runs: the Role grants patch on the pods' names, and on no other
// pod; with no pod it grants none (a rule without resourceNames would
// grant every pod), but with EveryPod, when it must. The same holds for the state Secrets, which the
// reloaders get, update and patch.
func Role(a Access) (*rbacv1.Role, *rbacv1.RoleBinding) {
	meta := metav1.ObjectMeta{Name: a.Name, Namespace: a.Namespace, Labels: a.Labels}
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: meta,
		Rules:      []rbacv1.PolicyRule{},
	}
	if len(a.Secrets) > 0 {
		role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: a.Secrets, Verbs: []string{"get", "list", "watch"}})
	}
	if len(a.StateSecrets) > 0 {
		role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: a.StateSecrets, Verbs: []string{"get", "update", "patch"}})
	}
	if a.ConfigMaps {
		role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}})
	}
	switch {
	case a.EveryPod:
		role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"patch"}})
	case len(a.Pods) > 0:
		role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: a.Pods, Verbs: []string{"patch"}})
	}
	binding := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: *meta.DeepCopy(),
		Subjects: []rbacv1.Subject{{
			Kind:      rbacv1.ServiceAccountKind,
			Name:      cmp.Or(a.ServiceAccount, "default"),
			Namespace: a.Namespace,
		}},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: a.Name},
	}
	return role, binding
}
