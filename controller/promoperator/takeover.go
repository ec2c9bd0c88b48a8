package promoperator

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// Kind is one of prometheus-operator's kinds that run Prometheus, T its
// object, as a variant of the takeover's lifecycle (docs/takeover.md):
// prometheus-operator started with --controller-id=X reconciles only the
// objects whose takeover.AnnotationControllerID is X (absent reads as
// empty); this controller takes those annotated with its own id. An
// object taken over is converted into a PrometheusServer in
// prometheus-operator's layout for the kind and rendered by package
// promserver into the objects prometheus-operator wrote for it, which are
// adopted: their fields prometheus-operator set become this controller's,
// and what it does not render goes. When the annotation stops matching,
// the controller stops writing at once and deletes nothing;
// prometheus-operator, whose id now matches, takes the objects back.
type Kind[T client.Object] struct {
	// Kind is the kind's name, GroupVersion its API group and version.
	Kind         string
	GroupVersion schema.GroupVersion
	// Controller names the kind's controllers ("prometheus").
	Controller string
	// Doc is the page of the kind's field table.
	Doc string
	// New returns an empty object of the kind, NewList an empty list of
	// them.
	New     func() T
	NewList func() client.ObjectList
	// Convert converts an object into the PrometheusServer it is rendered
	// as, with the fields it cannot carry (sorted JSON paths under spec):
	// an object with any is not taken over.
	Convert func(T) (promserver.Target, []string)
	// Invalid, when not nil, are what prometheus-operator's own
	// validation refuses in an object ("<path>: <message>", the CRD's
	// rules, which an API server with an older CRD lets through): an
	// object with any is taken over, but its spec is invalid (Reconciled
	// False, InvalidSpec, nothing written).
	Invalid func(T) []string
	// Common are the CommonPrometheusFields of an object, Status its
	// status.
	Common func(T) *monitoringv1.CommonPrometheusFields
	Status func(T) *monitoringv1.PrometheusStatus
}

// takingOver is a Kind as a variant of the takeover's lifecycle
// (takeover.Variant), which its reconciler takes the objects through:
// what it refuses (its field table), its sync (the PrometheusServer's, on
// the object converted), its status (status.go), its pods.
type takingOver[T client.Object] struct {
	k Kind[T]
	// app is the value of kube.LabelName on the kind's pods.
	app       string
	r         *promserver.Reconciler
	id        string
	lifecycle *takeover.Lifecycle[T, promserver.Synced, *takingOver[T]]
}

// Setup sets up the reconciler of the objects of k handed to
// to.ControllerID, when k's CRD is served. An object matters when it is
// created or deleted, and when its spec, labels or annotations (the
// controller id) change. opts are the controller-wide
// inputs of the rendered workloads (default images). A nil logger
// discards the logs.
func Setup[T client.Object](m *kube.Manager, logger *slog.Logger, reg prometheus.Registerer, opts promserver.WorkloadOptions, to takeover.Options, k Kind[T]) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if served, err := takeover.Served(m.GetRESTMapper(), logger, k.GroupVersion, k.Kind); !served {
		return err
	}
	empty, _ := k.Convert(k.New())
	t := &takingOver[T]{k: k, id: to.ControllerID, app: promserver.AppOf(empty)}
	own := metav1.TypeMeta{Kind: k.Kind, APIVersion: k.GroupVersion.String()}
	r, err := promserver.NewReconciler(m, logger, reg, own, opts, t)
	if err != nil {
		return err
	}
	t.r = r
	t.lifecycle = takeover.NewLifecycle[T, promserver.Synced](takeover.Config{
		Kind: k.Kind, ControllerID: to.ControllerID, Doc: k.Doc,
		Client: r.Client, APIReader: m.GetAPIReader(), Writer: r.Writer, Recorder: r.Recorder, Logger: r.Logger,
		Errors: r.Metrics.Errors, Work: &r.Work,
	}, t)
	b := builder.ControllerManagedBy(m).
		Named(k.Controller).
		For(k.New(), builder.WithPredicates(takeover.Changed()))
	if empty.Layout.Agent() {
		b = b.Owns(&appsv1.DaemonSet{}) // An agent in DaemonSet mode.
	}
	if err := r.Setup(m, b, nil); err != nil {
		return err
	}
	// As for PrometheusServers: the pods' reports update the status alone.
	return builder.ControllerManagedBy(m).
		Named(k.Controller+"-status").
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(t.podObject), builder.WithPredicates(sidecar.PodChanged())).
		Complete(reconcile.Func(t.lifecycle.ReconcileStatus))
}

// Reconcile takes the object key names through the takeover's
// lifecycle; with holdRules, the rule ConfigMaps stay as they were last
// written (sync).
func (t *takingOver[T]) Reconcile(ctx context.Context, key types.NamespacedName, holdRules bool) error {
	return t.lifecycle.Reconcile(ctx, key, holdRules)
}

func (t *takingOver[T]) New() T { return t.k.New() }

func (t *takingOver[T]) Unsupported(p T) []string {
	_, unsupported := t.k.Convert(p)
	return unsupported
}

func (t *takingOver[T]) Paused(p T) bool { return t.k.Common(p).Paused }

// Sync renders p, converted, as a PrometheusServer, into the objects
// prometheus-operator wrote for it, adopted.
func (t *takingOver[T]) Sync(ctx context.Context, p T, holdRules bool) (metav1.Condition, promserver.Synced, error) {
	if invalid := t.invalid(p); len(invalid) > 0 {
		return t.invalidSpec(p, invalid)
	}
	server, _ := t.k.Convert(p)
	res, err := t.r.Sync(ctx, server, kube.Owner{Key: strings.ToLower(t.k.Kind), Object: p, Adopt: []string{takeover.OperatorFieldManager}, Orphan: true}, holdRules)
	if err != nil {
		return metav1.Condition{}, promserver.Synced{}, err
	}
	return res.Cond, res, res.Err
}

// invalid are the fields of p prometheus-operator's validation refuses
// (Kind.Invalid).
func (t *takingOver[T]) invalid(p T) []string {
	if t.k.Invalid == nil {
		return nil
	}
	return t.k.Invalid(p)
}

// invalidSpec is the outcome of a sync of p, whose fields invalid
// prometheus-operator's validation refuses: nothing written, what was
// written last stays; a Warning Event, a log line and a reconcile error
// counted, as for a spec that cannot be rendered (promserver's Sync); the
// Reconciled condition False, InvalidSpec.
func (t *takingOver[T]) invalidSpec(p T, invalid []string) (metav1.Condition, promserver.Synced, error) {
	msg := "refused by prometheus-operator's validation (its CRD's rules): " + takeover.InvalidMessage(invalid)
	t.r.Metrics.Errors.Inc()
	t.r.Logger.Error("render", strings.ToLower(t.k.Kind), client.ObjectKeyFromObject(p), "err", msg)
	t.r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, "InvalidSpec", "Reconcile", "%s", kube.Truncate(msg, kube.MaxEventNote))
	cond := metav1.Condition{Type: promserver.ConditionReconciled, Status: metav1.ConditionFalse, Reason: "InvalidSpec", Message: msg}
	return cond, promserver.Synced{Cond: cond}, nil
}

func (t *takingOver[T]) WriteStatus(ctx context.Context, p T, cond metav1.Condition, state *promserver.Synced) error {
	server, _ := t.k.Convert(p)
	res := promserver.Synced{}
	if state != nil {
		res = *state
	}
	res.Cond = cond
	return t.writeStatus(ctx, p, server, res)
}

func (t *takingOver[T]) Forget(_ context.Context, key types.NamespacedName) error {
	t.r.Forget(key)
	return nil
}

func (t *takingOver[T]) Conditions(p T) []monitoringv1.Condition {
	return t.k.Status(p).Conditions
}

func (t *takingOver[T]) AccessName(p T) string {
	server, _ := t.k.Convert(p)
	return promserver.AccessName(server)
}

// Pods lists p's pods, handed back; when none runs this controller's
// sidecar, it empties the reloaders' state Secrets first:
// prometheus-operator's pods keep no state, and an old one must not
// reach this controller's pods if p is taken over again. Emptied before
// the Role goes, so that a failure is tried again with it.
func (t *takingOver[T]) Pods(ctx context.Context, p T) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := t.r.Client.List(ctx, &pods, client.InNamespace(p.GetNamespace()), t.podLabels(p)); err != nil {
		return nil, fmt.Errorf("list pods of %s %s/%s: %w", t.k.Kind, p.GetNamespace(), p.GetName(), err)
	}
	for _, pod := range pods.Items {
		if _, ours := pod.Annotations[kube.AnnotationInputHash]; ours {
			return pods.Items, nil
		}
	}
	server, _ := t.k.Convert(p)
	return pods.Items, t.r.RetireStateSecrets(ctx, server, nil)
}

// podLabels select the pods of p.
func (t *takingOver[T]) podLabels(p T) client.MatchingLabels {
	return client.MatchingLabels{promserver.LabelOperatorName: p.GetName(), kube.LabelName: t.app}
}

// podObject maps a pod to the object whose StatefulSet runs it, named by
// prometheus-operator's labelOperatorName, among the pods of the kind.
func (t *takingOver[T]) podObject(_ context.Context, obj client.Object) []ctrl.Request {
	name := obj.GetLabels()[promserver.LabelOperatorName]
	if name == "" || obj.GetLabels()[kube.LabelName] != t.app {
		return nil
	}
	return t.r.Requests("Pod", []types.NamespacedName{{Namespace: obj.GetNamespace(), Name: name}})
}

// Servers returns the cached objects taken over, converted; those with
// unsupported fields are not.
func (t *takingOver[T]) Servers(ctx context.Context) []v1alpha1.PrometheusServer {
	list := t.k.NewList()
	err := t.r.Client.List(ctx, list, client.UnsafeDisableDeepCopy)
	var items []runtime.Object
	if err == nil {
		items, err = meta.ExtractList(list)
	}
	if err != nil {
		t.r.Logger.Error("list the objects taken over", "kind", t.k.Kind, "err", err)
		return nil
	}
	var out []v1alpha1.PrometheusServer
	for _, item := range items {
		p, ok := item.(T)
		if !ok {
			continue
		}
		if !takeover.HandedTo(p, t.id) {
			continue
		}
		if s, unsupported := t.k.Convert(p); len(unsupported) == 0 {
			out = append(out, *s.PrometheusServer)
		}
	}
	return out
}

// applyStatus applies status as p's status (takeover.ApplyStatus).
func (t *takingOver[T]) applyStatus(ctx context.Context, p T, status map[string]any) error {
	gvk := t.k.GroupVersion.WithKind(t.k.Kind)
	return takeover.ApplyStatus(ctx, t.r.Client, t.r.Writer, gvk, client.ObjectKeyFromObject(p), status)
}

// sets returns the live StatefulSets of server's shards, for a status
// written without a sync.
func (t *takingOver[T]) sets(ctx context.Context, server promserver.Target) ([]*appsv1.StatefulSet, error) {
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
func (t *takingOver[T]) conditionsOf(p T, res promserver.Synced, applied metav1.Condition) []monitoringv1.Condition {
	conds := append([]monitoringv1.Condition(nil), t.k.Status(p).Conditions...)
	takeover.SetCondition(&conds, takeover.FromCondition(res.Cond, p.GetGeneration()))
	takeover.SetCondition(&conds, takeover.FromCondition(applied, applied.ObservedGeneration))
	keep := conds[:0]
	for _, c := range conds {
		if string(c.Type) != takeover.ConditionUnsupportedFields {
			keep = append(keep, c)
		}
	}
	return keep
}
