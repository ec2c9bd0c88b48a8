package takeover

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/kube"
)

// ReleaseAccess deletes the reloaders' Role and RoleBinding name of owner,
// handed back, once no pod pods lists runs the controller's sidecar (a pod
// of its template, with kube.AnnotationInputHash): until then they need
// them. Only those owner controls go. It reports whether it deleted the
// Role; a pod's deletion brings the owner back, to try again.
func ReleaseAccess(ctx context.Context, c client.Client, w *kube.Writer, owner client.Object, name string, pods func(context.Context) ([]corev1.Pod, error)) (bool, error) {
	ns := owner.GetNamespace()
	var role rbacv1.Role
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &role)
	if apierrors.IsNotFound(err) || (err == nil && !metav1.IsControlledBy(&role, owner)) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get Role %s/%s: %w", ns, name, err)
	}
	list, err := pods(ctx)
	if err != nil {
		return false, err
	}
	for _, pod := range list {
		if _, ours := pod.Annotations[kube.AnnotationInputHash]; ours {
			return false, nil
		}
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := c.Get(ctx, client.ObjectKeyFromObject(binding), binding); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("get RoleBinding %s/%s: %w", ns, name, err)
	} else if err == nil && metav1.IsControlledBy(binding, owner) {
		if err := w.Delete(ctx, "RoleBinding", binding); err != nil {
			return false, err
		}
	}
	if err := w.Delete(ctx, "Role", &role); err != nil {
		return false, err
	}
	return true, nil
}
