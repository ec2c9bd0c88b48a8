package prometheusserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/sidecar"
)

// serverKind is the PrometheusServer kind, the front of its reconciler:
// each PrometheusServer is rendered as it is, in podreload's layout, and
// its status is the PrometheusServer's own (status.go).
type serverKind struct {
	r *promserver.Reconciler

	mu sync.Mutex
	// statuses are the statuses the controller last wrote, or found
	// already written, by server.
	statuses map[types.NamespacedName]v1alpha1.PrometheusServerStatus
}

// Setup sets up the reconciler of PrometheusServers with m: it watches
// them, the monitors, rules, Secrets and Namespaces they select or
// reference and the objects it writes for them, and makes those objects
// match what render gives. opts are the controller-wide inputs of the
// rendered workloads (default images). A nil logger discards the logs.
func Setup(m *kube.Manager, logger *slog.Logger, reg prometheus.Registerer, opts promserver.WorkloadOptions) error {
	k, err := newServerKind(m, logger, reg, opts)
	if err != nil {
		return err
	}
	r := k.r
	if err := r.Setup(m, builder.ControllerManagedBy(m).
		Named("prometheusserver").
		// Status writes change no generation: they do not come back here.
		For(&v1alpha1.PrometheusServer{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))),
		nil); err != nil {
		return err
	}
	// The pods' reports of what they apply update the status alone, in a
	// controller of their own: a burst of reports renders nothing.
	return builder.ControllerManagedBy(m).
		Named("prometheusserver-status").
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.PodServer), builder.WithPredicates(sidecar.PodChanged())).
		Complete(reconcile.Func(k.reconcileStatus))
}

// newServerKind returns the kind with its reconciler, not set up.
func newServerKind(m *kube.Manager, logger *slog.Logger, reg prometheus.Registerer, opts promserver.WorkloadOptions) (*serverKind, error) {
	k := &serverKind{statuses: map[types.NamespacedName]v1alpha1.PrometheusServerStatus{}}
	own := metav1.TypeMeta{Kind: v1alpha1.Kind, APIVersion: v1alpha1.GroupVersion().String()}
	r, err := promserver.NewReconciler(m, logger, reg, own, opts, k)
	if err != nil {
		return nil, err
	}
	k.r = r
	return k, nil
}

// Reconcile renders the PrometheusServer key names and writes its objects
// and status; with holdRules, the rule ConfigMaps as they were last
// written (sync).
func (k *serverKind) Reconcile(ctx context.Context, key types.NamespacedName, holdRules bool) error {
	var server v1alpha1.PrometheusServer
	if err := k.r.Client.Get(ctx, key, &server); err != nil {
		if apierrors.IsNotFound(err) {
			k.r.Forget(key)
			k.mu.Lock()
			delete(k.statuses, key)
			k.mu.Unlock()
			return nil
		}
		return fmt.Errorf("get PrometheusServer %s: %w", key, err)
	}
	if server.Spec.Paused {
		k.r.Logger.Debug("paused", "server", key)
		return nil
	}
	res, err := k.r.Sync(ctx, promserver.OwnTarget(&server), owner(&server), holdRules)
	if err != nil {
		return err
	}
	return errors.Join(res.Err, k.writeStatus(ctx, &server, res.Objs, res.Sets, res.Cond))
}

// Servers returns the cached PrometheusServers.
func (k *serverKind) Servers(ctx context.Context) []v1alpha1.PrometheusServer {
	var list v1alpha1.PrometheusServerList
	if err := k.r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		k.r.Logger.Error("list PrometheusServers", "err", err)
		return nil
	}
	return list.Items
}

// owner is server as the owner of the objects the writer writes.
func owner(server *v1alpha1.PrometheusServer) kube.Owner {
	return kube.Owner{Key: "server", Object: server}
}
