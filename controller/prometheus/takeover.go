package prometheus

import (
	"context"
	"fmt"
	"log/slog"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/client_golang/prometheus"
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
	"github.com/podreload/podreload/controller/promserver"
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

// takingOver is the Prometheus kind as a variant of the takeover's
// lifecycle (takeover.Variant), which its reconciler takes the Prometheus
// objects through: what it refuses (operatorfields.go), its sync (the
// PrometheusServer's, on the object converted), its status
// (takeover_status.go), its pods.
type takingOver struct {
	r         *promserver.Reconciler
	id        string
	lifecycle *takeover.Lifecycle[*monitoringv1.Prometheus, promserver.Synced, *takingOver]
}

// Setup sets up the reconciler of the Prometheus objects handed
// to to.ControllerID, when the Prometheus CRD is served. A Prometheus
// matters when it is created or deleted, and when its spec, labels or
// annotations (the controller id) change. opts are the controller-wide
// inputs of the rendered workloads (default images). A nil logger
// discards the logs.
func Setup(m *kube.Manager, logger *slog.Logger, reg prometheus.Registerer, opts promserver.WorkloadOptions, to takeover.Options) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if served, err := takeover.Served(m.GetRESTMapper(), logger, monitoringv1.PrometheusesKind); !served {
		return err
	}
	t := &takingOver{id: to.ControllerID}
	own := metav1.TypeMeta{Kind: monitoringv1.PrometheusesKind, APIVersion: monitoringv1.SchemeGroupVersion.String()}
	r, err := promserver.NewReconciler(m, logger, reg, own, opts, t)
	if err != nil {
		return err
	}
	t.r = r
	t.lifecycle = takeover.NewLifecycle[*monitoringv1.Prometheus, promserver.Synced](takeover.Config{
		Kind: monitoringv1.PrometheusesKind, ControllerID: to.ControllerID, Doc: "docs/prometheus-operator.md",
		Client: r.Client, APIReader: m.GetAPIReader(), Writer: r.Writer, Recorder: r.Recorder, Logger: r.Logger,
		Errors: r.Metrics.Errors, Work: &r.Work,
	}, t)
	if err := r.Setup(m, builder.ControllerManagedBy(m).
		Named("prometheus").
		For(&monitoringv1.Prometheus{}, builder.WithPredicates(takeover.Changed())),
		nil); err != nil {
		return err
	}
	// As for PrometheusServers: the pods' reports update the status alone.
	return builder.ControllerManagedBy(m).
		Named("prometheus-status").
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(t.podPrometheus), builder.WithPredicates(sidecar.PodChanged())).
		Complete(reconcile.Func(t.lifecycle.ReconcileStatus))
}

// Reconcile takes the Prometheus key names through the takeover's
// lifecycle; with holdRules, the rule ConfigMaps stay as they were last
// written (sync).
func (t *takingOver) Reconcile(ctx context.Context, key types.NamespacedName, holdRules bool) error {
	return t.lifecycle.Reconcile(ctx, key, holdRules)
}

func (*takingOver) New() *monitoringv1.Prometheus { return &monitoringv1.Prometheus{} }

func (*takingOver) Unsupported(p *monitoringv1.Prometheus) []string {
	_, unsupported := FromPrometheus(p)
	return unsupported
}

func (*takingOver) Paused(p *monitoringv1.Prometheus) bool { return p.Spec.Paused }

// Sync renders p, converted, as a PrometheusServer, into the objects
// prometheus-operator wrote for it, adopted.
func (t *takingOver) Sync(ctx context.Context, p *monitoringv1.Prometheus, holdRules bool) (metav1.Condition, promserver.Synced, error) {
	server, _ := FromPrometheus(p)
	res, err := t.r.Sync(ctx, server, kube.Owner{Key: "prometheus", Object: p, Adopt: []string{takeover.OperatorFieldManager}, Orphan: true}, holdRules)
	if err != nil {
		return metav1.Condition{}, promserver.Synced{}, err
	}
	return res.Cond, res, res.Err
}

func (t *takingOver) WriteStatus(ctx context.Context, p *monitoringv1.Prometheus, cond metav1.Condition, state *promserver.Synced) error {
	server, _ := FromPrometheus(p)
	res := promserver.Synced{}
	if state != nil {
		res = *state
	}
	res.Cond = cond
	return t.writeStatus(ctx, p, server, res)
}

func (t *takingOver) Forget(_ context.Context, key types.NamespacedName) error {
	t.r.Forget(key)
	return nil
}

func (*takingOver) Conditions(p *monitoringv1.Prometheus) []monitoringv1.Condition {
	return p.Status.Conditions
}

func (*takingOver) AccessName(p *monitoringv1.Prometheus) string {
	server, _ := FromPrometheus(p)
	return promserver.AccessName(server)
}

// Pods lists p's pods, handed back; when none runs this controller's
// sidecar, it empties the reloaders' state Secrets first:
// prometheus-operator's pods keep no state, and an old one must not
// reach this controller's pods if p is taken over again. Emptied before
// the Role goes, so that a failure is tried again with it.
func (t *takingOver) Pods(ctx context.Context, p *monitoringv1.Prometheus) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := t.r.Client.List(ctx, &pods, client.InNamespace(p.Namespace), client.MatchingLabels{promserver.LabelOperatorName: p.Name, kube.LabelName: promserver.App}); err != nil {
		return nil, fmt.Errorf("list pods of Prometheus %s/%s: %w", p.Namespace, p.Name, err)
	}
	for _, pod := range pods.Items {
		if _, ours := pod.Annotations[kube.AnnotationInputHash]; ours {
			return pods.Items, nil
		}
	}
	server, _ := FromPrometheus(p)
	return pods.Items, t.r.RetireStateSecrets(ctx, server, nil)
}

// podPrometheus maps a pod to the Prometheus whose StatefulSet runs it,
// named by prometheus-operator's labelOperatorName.
func (t *takingOver) podPrometheus(_ context.Context, obj client.Object) []ctrl.Request {
	name := obj.GetLabels()[promserver.LabelOperatorName]
	if name == "" {
		return nil
	}
	return t.r.Requests("Pod", []types.NamespacedName{{Namespace: obj.GetNamespace(), Name: name}})
}

// Servers returns the cached Prometheus objects taken over, converted;
// those with unsupported fields are not.
func (t *takingOver) Servers(ctx context.Context) []v1alpha1.PrometheusServer {
	var list monitoringv1.PrometheusList
	if err := t.r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		t.r.Logger.Error("list Prometheus objects", "err", err)
		return nil
	}
	var out []v1alpha1.PrometheusServer
	for i := range list.Items {
		if !takeover.HandedTo(&list.Items[i], t.id) {
			continue
		}
		if s, unsupported := FromPrometheus(&list.Items[i]); len(unsupported) == 0 {
			out = append(out, *s.PrometheusServer)
		}
	}
	return out
}

// applyStatus applies status as p's status (takeover.ApplyStatus).
func (t *takingOver) applyStatus(ctx context.Context, p *monitoringv1.Prometheus, status map[string]any) error {
	gvk := monitoringv1.SchemeGroupVersion.WithKind(monitoringv1.PrometheusesKind)
	return takeover.ApplyStatus(ctx, t.r.Client, t.r.Writer, gvk, client.ObjectKeyFromObject(p), status)
}

// sets returns the live StatefulSets of server's shards, for a status
// written without a sync.
func (t *takingOver) sets(ctx context.Context, server promserver.Target) ([]*appsv1.StatefulSet, error) {
	var out []*appsv1.StatefulSet
	for shard := range promserver.ShardCount(server) {
		var sts appsv1.StatefulSet
		err := t.r.Client.Get(ctx, types.NamespacedName{Namespace: server.Namespace, Name: promserver.ShardName(server, shard)}, &sts)
		if apierrors.IsNotFound(err) {
			out = append(out, nil)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("get StatefulSet %s/%s: %w", server.Namespace, promserver.ShardName(server, shard), err)
		}
		out = append(out, &sts)
	}
	return out, nil
}

// conditionsOf returns the conditions the controller sets on p: the
// Reconciled one (res.cond), ConfigApplied, and no UnsupportedFields (p is
// not refused).
func (t *takingOver) conditionsOf(p *monitoringv1.Prometheus, res promserver.Synced, applied metav1.Condition) []monitoringv1.Condition {
	conds := append([]monitoringv1.Condition(nil), p.Status.Conditions...)
	takeover.SetCondition(&conds, takeover.FromCondition(res.Cond, p.Generation))
	takeover.SetCondition(&conds, takeover.FromCondition(applied, applied.ObservedGeneration))
	keep := conds[:0]
	for _, c := range conds {
		if string(c.Type) != takeover.ConditionUnsupportedFields {
			keep = append(keep, c)
		}
	}
	return keep
}
