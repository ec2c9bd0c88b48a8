package prometheus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/sidecar"
	"github.com/podreload/podreload/controller/takeover"
)

// Taking over prometheus-operator's Prometheus objects (docs/takeover.md):
// prometheus-operator started with --controller-id=X reconciles only the
// Prometheus objects whose AnnotationControllerID is X (absent reads as
// empty); this controller takes the objects annotated with its own id. A
// Prometheus taken over is converted into a PrometheusServer in
// prometheus-operator's layout (layout.go) and rendered by the same code
// as PrometheusServers, into the objects prometheus-operator wrote for it,
// which are adopted: their fields prometheus-operator set become this
// controller's, and what it does not render goes. When the annotation
// stops matching, the controller stops writing at once and deletes
// nothing; prometheus-operator, whose id now matches, takes the objects
// back.
const (
	// AnnotationControllerID is prometheus-operator's annotation naming the
	// controller of a Prometheus object (takeover.AnnotationControllerID).
	AnnotationControllerID = takeover.AnnotationControllerID
)

// takeover is what the reconciler of Prometheus objects has besides a
// reconciler's.
type takingOver struct {
	r  *reconciler
	id string

	mu sync.Mutex
	// refused is the message of the last UnsupportedFields Event of each
	// Prometheus, so that it is told once.
	refused map[types.NamespacedName]string
	// synced is the Reconciled condition of the last sync of each
	// Prometheus, with the generation it was for, for the status updates
	// without a render (reconcileStatus).
	synced map[types.NamespacedName]syncedCondition
}

// syncedCondition is the Reconciled condition of a sync of generation.
type syncedCondition struct {
	cond       metav1.Condition
	generation int64
}

// setupTakeover sets up the reconciler of the Prometheus objects handed to
// to.ControllerID. A Prometheus matters when it is created or deleted, and
// when its spec, labels or annotations (the controller id) change.
func setupTakeover(m *kube.Manager, logger *slog.Logger, metrics *metrics, opts WorkloadOptions, to takeover.Options) error {
	if served, err := takeover.Served(m.GetRESTMapper(), logger, monitoringv1.PrometheusesKind); !served {
		return err
	}
	r := newReconciler(m, logger, metrics.forKind(m, monitoringv1.PrometheusesKind), opts)
	r.takeover = &takingOver{r: r, id: to.ControllerID, refused: map[types.NamespacedName]string{}, synced: map[types.NamespacedName]syncedCondition{}}
	if err := r.setup(m, builder.ControllerManagedBy(m).
		Named("prometheus").
		For(&monitoringv1.Prometheus{}, builder.WithPredicates(takeover.Changed())),
		nil); err != nil {
		return err
	}
	// As for PrometheusServers: the pods' reports update the status alone.
	return builder.ControllerManagedBy(m).
		Named("prometheus-status").
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.takeover.podPrometheus), builder.WithPredicates(sidecar.PodChanged())).
		Complete(reconcile.Func(r.takeover.reconcileStatus))
}

// reconcileStatus updates the status of the Prometheus req names from its
// pods' reports, without a render, when it was synced last at its current
// generation; otherwise it leaves the status to the render that comes.
func (t *takingOver) reconcileStatus(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r := t.r
	r.work.Lock()
	defer r.work.Unlock()
	var p monitoringv1.Prometheus
	if err := r.client.Get(ctx, req.NamespacedName, &p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	server, unsupported := fromPrometheus(&p)
	if p.DeletionTimestamp != nil || !takeover.HandedTo(&p, t.id) || len(unsupported) > 0 {
		return ctrl.Result{}, nil
	}
	if p.Spec.Paused { // As reconcile writes it.
		return ctrl.Result{}, t.writeStatus(ctx, &p, server, synced{}, "")
	}
	t.mu.Lock()
	last, ok := t.synced[req.NamespacedName]
	t.mu.Unlock()
	if !ok || p.Generation != last.generation {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, t.writeStatus(ctx, &p, server, synced{cond: last.cond}, "")
}

// podPrometheus maps a pod to the Prometheus whose StatefulSet runs it,
// named by prometheus-operator's labelOperatorName.
func (t *takingOver) podPrometheus(_ context.Context, obj client.Object) []ctrl.Request {
	name := obj.GetLabels()[labelOperatorName]
	if name == "" {
		return nil
	}
	return t.r.requests("Pod", []types.NamespacedName{{Namespace: obj.GetNamespace(), Name: name}})
}

// servers returns the cached Prometheus objects taken over, converted;
// those with unsupported fields are not.
func (t *takingOver) servers(ctx context.Context) []v1alpha1.PrometheusServer {
	var list monitoringv1.PrometheusList
	if err := t.r.client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		t.r.logger.Error("list Prometheus objects", "err", err)
		return nil
	}
	var out []v1alpha1.PrometheusServer
	for i := range list.Items {
		if !takeover.HandedTo(&list.Items[i], t.id) {
			continue
		}
		if s, unsupported := fromPrometheus(&list.Items[i]); len(unsupported) == 0 {
			out = append(out, *s)
		}
	}
	return out
}

// reconcile makes the objects of the Prometheus key names match it when
// it is handed to the controller, and hands it back otherwise; with
// holdRules, the rule ConfigMaps as they were last written (sync).
func (t *takingOver) reconcile(ctx context.Context, key types.NamespacedName, holdRules bool) error {
	r := t.r
	var p monitoringv1.Prometheus
	if err := r.client.Get(ctx, key, &p); err != nil {
		if apierrors.IsNotFound(err) {
			t.forget(key)
			return nil
		}
		return fmt.Errorf("get Prometheus %s: %w", key, err)
	}
	if p.DeletionTimestamp != nil {
		// Its objects go with it, by their owner references.
		t.forget(key)
		if takeover.HandedTo(&p, t.id) {
			return t.dropFinalizer(ctx, &p)
		}
		return nil
	}
	if !takeover.HandedTo(&p, t.id) {
		return t.handBack(ctx, &p)
	}
	server, unsupported := fromPrometheus(&p)
	if len(unsupported) > 0 {
		msg := takeover.RefusedMessage(unsupported, "docs/prometheus-operator.md")
		t.refuse(&p, msg)
		return t.writeStatus(ctx, &p, server, synced{cond: metav1.Condition{
			Type: conditionReconciled, Status: metav1.ConditionFalse, Reason: takeover.ConditionUnsupportedFields, Message: msg,
		}}, msg)
	}
	t.refuse(&p, "")
	if p.Spec.Paused {
		r.logger.Debug("paused", "prometheus", key)
		return t.writeStatus(ctx, &p, server, synced{}, "")
	}
	res, err := r.sync(ctx, server, kube.Owner{Key: "prometheus", Object: &p, Adopt: []string{takeover.OperatorFieldManager}, Orphan: true}, holdRules)
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.synced[key] = syncedCondition{cond: res.cond, generation: p.Generation}
	t.mu.Unlock()
	return errors.Join(res.err, t.writeStatus(ctx, &p, server, res, ""))
}

// dropFinalizer removes prometheus-operator's status-cleanup finalizer
// from p, taken over and being deleted (takeover.DropFinalizer): the
// monitors' bindings to p it guards stay.
func (t *takingOver) dropFinalizer(ctx context.Context, p *monitoringv1.Prometheus) error {
	dropped, err := takeover.DropFinalizer(ctx, t.r.client, t.r.writer, monitoringv1.PrometheusesKind, p)
	if dropped {
		t.r.logger.Info("removed prometheus-operator's finalizer of a Prometheus taken over and deleted", "prometheus", client.ObjectKeyFromObject(p), "finalizer", takeover.FinalizerStatusCleanup)
	}
	return err
}

// refuse tells, in a Warning Event and the log, once per message, why p
// is not taken over; an empty msg forgets the last one.
func (t *takingOver) refuse(p *monitoringv1.Prometheus, msg string) {
	key := client.ObjectKeyFromObject(p)
	t.mu.Lock()
	told := t.refused[key] == msg
	if msg == "" {
		delete(t.refused, key)
	} else {
		t.refused[key] = msg
	}
	t.mu.Unlock()
	if told || msg == "" {
		return
	}
	t.r.metrics.errors.Inc()
	t.r.logger.Warn("unsupported fields", "prometheus", key, "err", msg)
	t.r.event(p, nil, takeover.ConditionUnsupportedFields, msg)
}

// forget drops what is kept about a Prometheus.
func (t *takingOver) forget(key types.NamespacedName) {
	t.mu.Lock()
	delete(t.refused, key)
	delete(t.synced, key)
	t.mu.Unlock()
	t.r.forget(key)
}

// handBack stops taking over p, whose controller id is no longer ours:
// nothing of it is written any more but what only this controller wrote.
// The status fields only it set go, in one write; the reloaders' Role and
// RoleBinding (only ours use them) once no pod of p runs them, and the
// state Secrets are emptied then.
func (t *takingOver) handBack(ctx context.Context, p *monitoringv1.Prometheus) error {
	r := t.r
	key := client.ObjectKeyFromObject(p)
	t.forget(key)
	if takeover.FindCondition(p.Status.Conditions, conditionConfigApplied) != nil {
		// Only this controller writes ConfigApplied: no status, applied
		// by its field manager, removes what it alone set.
		if err := t.applyStatus(ctx, p, map[string]any{}); err != nil {
			return err
		}
		r.logger.Info("handed back", "prometheus", key, "controller_id", p.Annotations[AnnotationControllerID])
	}
	server, _ := fromPrometheus(p)
	deleted, err := takeover.ReleaseAccess(ctx, r.client, r.writer, p, accessName(server), func(ctx context.Context) ([]corev1.Pod, error) {
		var pods corev1.PodList
		if err := r.client.List(ctx, &pods, client.InNamespace(p.Namespace), client.MatchingLabels{labelOperatorName: p.Name, kube.LabelName: App}); err != nil {
			return nil, fmt.Errorf("list pods of Prometheus %s: %w", key, err)
		}
		for _, pod := range pods.Items {
			if _, ours := pod.Annotations[kube.AnnotationInputHash]; ours {
				return pods.Items, nil
			}
		}
		// prometheus-operator's pods keep no state: an old one must not
		// reach our pods if p is taken over again. Emptied before the
		// Role goes, so that a failure is tried again with it.
		return pods.Items, r.retireStateSecrets(ctx, server, nil)
	})
	if !deleted {
		return err
	}
	r.logger.Info("deleted the reloaders' Role: no pod of the Prometheus handed back runs them", "prometheus", key, "role", accessName(server))
	return nil
}

// applyStatus applies status as p's status (takeover.ApplyStatus).
func (t *takingOver) applyStatus(ctx context.Context, p *monitoringv1.Prometheus, status map[string]any) error {
	gvk := monitoringv1.SchemeGroupVersion.WithKind(monitoringv1.PrometheusesKind)
	return takeover.ApplyStatus(ctx, t.r.client, t.r.writer, gvk, client.ObjectKeyFromObject(p), status)
}

// sets returns the live StatefulSets of server's shards, for a status
// written without a sync.
func (t *takingOver) sets(ctx context.Context, server *v1alpha1.PrometheusServer) ([]*appsv1.StatefulSet, error) {
	var out []*appsv1.StatefulSet
	for shard := range shardCount(server) {
		var sts appsv1.StatefulSet
		err := t.r.client.Get(ctx, types.NamespacedName{Namespace: server.Namespace, Name: shardName(server, shard)}, &sts)
		if apierrors.IsNotFound(err) {
			out = append(out, nil)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("get StatefulSet %s/%s: %w", server.Namespace, shardName(server, shard), err)
		}
		out = append(out, &sts)
	}
	return out, nil
}

// conditionsOf returns the conditions the controller sets on p: the
// Reconciled one (res.cond; Reconciled True when empty), ConfigApplied,
// and UnsupportedFields when refused is set.
func (t *takingOver) conditionsOf(p *monitoringv1.Prometheus, res synced, applied metav1.Condition, refused string) []monitoringv1.Condition {
	conds := append([]monitoringv1.Condition(nil), p.Status.Conditions...)
	cond := res.cond
	if cond.Type == "" {
		cond = metav1.Condition{Type: conditionReconciled, Status: metav1.ConditionTrue, Reason: "Paused", Message: "spec.paused: nothing is written"}
	}
	takeover.SetCondition(&conds, takeover.FromCondition(cond, p.Generation))
	takeover.SetCondition(&conds, takeover.FromCondition(applied, applied.ObservedGeneration))
	if refused != "" {
		takeover.SetCondition(&conds, takeover.FromCondition(metav1.Condition{Type: takeover.ConditionUnsupportedFields, Status: metav1.ConditionTrue, Reason: takeover.ConditionUnsupportedFields, Message: refused}, p.Generation))
	}
	keep := conds[:0]
	for _, c := range conds {
		if string(c.Type) == takeover.ConditionUnsupportedFields && refused == "" {
			continue
		}
		keep = append(keep, c)
	}
	return keep
}
