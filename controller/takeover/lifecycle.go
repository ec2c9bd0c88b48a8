package takeover

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/podreload/podreload/controller/kube"
)

// The lifecycle of an object taken over, the same for every kind
// (Lifecycle.Reconcile): gone or being deleted → forgotten (and, when
// handed to this controller, its status-cleanup finalizer dropped); not
// handed to this controller → handed back; unsupported fields → refused,
// its status telling why; paused → its status alone; otherwise synced,
// then its status written. A pod's report (Lifecycle.ReconcileStatus)
// updates the status alone, or continues a hand-back. Each kind is a
// Variant: what it refuses, how it syncs, its status, its pods.

// Reconciled is the type of the condition of a sync's outcome.
const Reconciled = "Reconciled"

// conditionConfigApplied is the condition only this controller writes,
// which tells an object it took over (sidecar.ConditionConfigApplied).
const conditionConfigApplied = "ConfigApplied"

// Variant is what a kind taken over gives the Lifecycle: O is its object,
// S what a sync tells its status.
type Variant[O client.Object, S any] interface {
	// New returns an empty object of the kind.
	New() O
	// Unsupported are the fields obj sets that keep it from being taken
	// over (RefusedFields, and reasons that are not a field's).
	Unsupported(obj O) []string
	// Paused reports whether obj's spec.paused is set: nothing is
	// written but its status.
	Paused(obj O) bool
	// Sync renders obj and writes its objects. Its error is retried with
	// backoff and counted by the caller: an input that could not be read
	// or a write that failed, which the Reconciled condition then tells
	// (WriteFailed). What obj's spec or the objects it reads are at
	// fault for (an invalid configuration) is the condition it returns,
	// False, with a nil error: it is done again when they change. The
	// condition's type is Reconciled; burst is true while the object's
	// events come in a burst (a kind may hold back what changes most).
	Sync(ctx context.Context, obj O, burst bool) (metav1.Condition, S, error)
	// WriteStatus writes obj's status with the Reconciled condition cond
	// and what its pods report; state is what the sync that gave cond
	// wrote, nil when the status is written without one (paused, a pod's
	// report): the kind reads again what it needs.
	WriteStatus(ctx context.Context, obj O, cond metav1.Condition, state *S) error
	// Forget drops what the kind keeps of the object key names, gone,
	// being deleted or handed back, and what it wrote elsewhere for it
	// (AlertmanagerConfigs' bindings, say).
	Forget(ctx context.Context, key types.NamespacedName) error
	// Conditions are obj's status conditions.
	Conditions(obj O) []monitoringv1.Condition
	// AccessName names the reloaders' Role and RoleBinding of obj.
	AccessName(obj O) string
	// Pods lists obj's pods, handed back, before its reloaders' Role goes
	// (ReleaseAccess).
	Pods(ctx context.Context, obj O) ([]corev1.Pod, error)
}

// Config configure a Lifecycle.
type Config struct {
	// Kind is the kind's name ("Prometheus"); its lower case is the key
	// of the object in log lines.
	Kind string
	// ControllerID is the controller id of the objects taken over.
	ControllerID string
	// Doc names where the kind's fields are listed, for the refusals.
	Doc string
	// Client reads the cache and writes; Writer writes objects.
	Client client.Client
	Writer *kube.Writer
	// APIReader reads an object as the API server stores it, for the
	// fields of its spec that its Go type does not know, which the typed
	// cache drops: each keeps it from being taken over (Decode). Nil
	// reads none.
	APIReader client.Reader
	// Recorder emits the Events, Logger the log lines.
	Recorder recorder.EventRecorder
	Logger   *slog.Logger
	// Errors counts the objects refused (the kind's reconcile errors).
	Errors prometheus.Counter
	// Work is held by a sync (the caller of Reconcile holds it) and by a
	// status update without one (ReconcileStatus).
	Work sync.Locker
}

// Lifecycle reconciles the objects of one kind taken over (V).
type Lifecycle[O client.Object, S any, V Variant[O, S]] struct {
	cfg     Config
	variant V
	logKey  string

	mu sync.Mutex
	// refused is the message of the last refusal told of each object,
	// so that it is told once.
	refused map[types.NamespacedName]string
	// synced is the Reconciled condition of the last sync of each
	// object, for the status without a sync.
	synced map[types.NamespacedName]syncedCondition
	// stored reads the objects as stored (unknownFields).
	stored *Stored
}

// syncedCondition is the Reconciled condition of a sync of generation.
type syncedCondition struct {
	cond       metav1.Condition
	generation int64
}

// NewLifecycle returns the Lifecycle of v, configured by cfg.
func NewLifecycle[O client.Object, S any, V Variant[O, S]](cfg Config, v V) *Lifecycle[O, S, V] {
	return &Lifecycle[O, S, V]{
		cfg: cfg, variant: v, logKey: strings.ToLower(cfg.Kind),
		refused: map[types.NamespacedName]string{}, synced: map[types.NamespacedName]syncedCondition{},
		stored: &Stored{Reader: cfg.APIReader, Client: cfg.Client},
	}
}

// Reconcile takes the object key names through the lifecycle; the caller
// holds cfg.Work. Its error is retried: the caller counts it, and
// controller-runtime logs it (it is not logged here).
func (l *Lifecycle[O, S, V]) Reconcile(ctx context.Context, key types.NamespacedName, burst bool) error {
	v := l.variant
	obj := v.New()
	if err := l.cfg.Client.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return l.forget(ctx, key)
		}
		return fmt.Errorf("get %s %s: %w", l.cfg.Kind, key, err)
	}
	if obj.GetDeletionTimestamp() != nil {
		// Its objects go with it, by their owner references.
		if err := l.forget(ctx, key); err != nil || !HandedTo(obj, l.cfg.ControllerID) {
			return err
		}
		dropped, err := DropFinalizer(ctx, l.cfg.Client, l.cfg.Writer, l.cfg.Kind, obj)
		if dropped {
			l.cfg.Logger.Info("removed prometheus-operator's finalizer of an object taken over and deleted", l.logKey, key, "finalizer", FinalizerStatusCleanup)
		}
		return err
	}
	if !HandedTo(obj, l.cfg.ControllerID) {
		return l.handBack(ctx, obj)
	}
	unknown, err := l.unknownFields(ctx, obj)
	if err != nil {
		return err
	}
	if unsupported := append(v.Unsupported(obj), unknown...); len(unsupported) > 0 {
		msg := RefusedMessage(unsupported, l.cfg.Doc)
		l.refuse(obj, msg)
		return l.writeRefused(ctx, obj, msg)
	}
	l.refuse(obj, "")
	if v.Paused(obj) {
		l.cfg.Logger.Debug("paused", l.logKey, key)
		return v.WriteStatus(ctx, obj, pausedCondition(), nil)
	}
	cond, state, err := v.Sync(ctx, obj, burst)
	if err != nil {
		cond = metav1.Condition{Type: Reconciled, Status: metav1.ConditionFalse, Reason: "WriteFailed", Message: err.Error()}
	}
	l.mu.Lock()
	l.synced[key] = syncedCondition{cond: cond, generation: obj.GetGeneration()}
	l.mu.Unlock()
	return errors.Join(err, v.WriteStatus(ctx, obj, cond, &state))
}

// ReconcileStatus updates the status of the object req names from its
// pods' reports, without a sync, when it was synced last at its current
// generation; otherwise it leaves the status to the sync that comes. An
// object handed back is handed back again: a pod of this controller's
// gone may free the reloaders' Role (ReleaseAccess).
func (l *Lifecycle[O, S, V]) ReconcileStatus(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	l.cfg.Work.Lock()
	defer l.cfg.Work.Unlock()
	v := l.variant
	obj := v.New()
	if err := l.cfg.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	switch {
	case obj.GetDeletionTimestamp() != nil:
		return ctrl.Result{}, nil
	case !HandedTo(obj, l.cfg.ControllerID):
		return ctrl.Result{}, l.handBack(ctx, obj)
	}
	unknown, err := l.unknownFields(ctx, obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	switch {
	case len(unknown) > 0 || len(v.Unsupported(obj)) > 0:
		return ctrl.Result{}, nil
	case v.Paused(obj):
		return ctrl.Result{}, v.WriteStatus(ctx, obj, pausedCondition(), nil)
	}
	l.mu.Lock()
	last, ok := l.synced[req.NamespacedName]
	l.mu.Unlock()
	if !ok || obj.GetGeneration() != last.generation {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, v.WriteStatus(ctx, obj, last.cond, nil)
}

// pausedCondition is the Reconciled condition of an object paused.
func pausedCondition() metav1.Condition {
	return metav1.Condition{Type: Reconciled, Status: metav1.ConditionTrue, Reason: "Paused", Message: "spec.paused: nothing is written"}
}

// forget drops what is kept about the object key names.
func (l *Lifecycle[O, S, V]) forget(ctx context.Context, key types.NamespacedName) error {
	l.mu.Lock()
	delete(l.refused, key)
	delete(l.synced, key)
	l.stored.Forget(key)
	l.mu.Unlock()
	return l.variant.Forget(ctx, key)
}

// refuse tells, in a Warning Event and the log, once per message, why obj
// is not taken over, and counts it; an empty msg forgets the last one.
func (l *Lifecycle[O, S, V]) refuse(obj O, msg string) {
	key := client.ObjectKeyFromObject(obj)
	l.mu.Lock()
	told := l.refused[key] == msg
	if msg == "" {
		delete(l.refused, key)
	} else {
		l.refused[key] = msg
	}
	l.mu.Unlock()
	if told || msg == "" {
		return
	}
	l.cfg.Errors.Inc()
	l.cfg.Logger.Warn("unsupported fields", l.logKey, key, "err", msg)
	kube.Warn(l.cfg.Recorder, obj, nil, ConditionUnsupportedFields, msg)
}

// writeRefused applies the Reconciled and UnsupportedFields conditions of
// obj, refused with msg; the rest of its status stays
// prometheus-operator's.
func (l *Lifecycle[O, S, V]) writeRefused(ctx context.Context, obj O, msg string) error {
	was := l.variant.Conditions(obj)
	conds := append([]monitoringv1.Condition(nil), was...)
	SetCondition(&conds, FromCondition(metav1.Condition{Type: Reconciled, Status: metav1.ConditionFalse, Reason: ConditionUnsupportedFields, Message: msg}, obj.GetGeneration()))
	SetCondition(&conds, FromCondition(metav1.Condition{Type: ConditionUnsupportedFields, Status: metav1.ConditionTrue, Reason: ConditionUnsupportedFields, Message: msg}, obj.GetGeneration()))
	mine := Pick(conds, Reconciled, ConditionUnsupportedFields)
	if equality.Semantic.DeepEqual(mine, Pick(was, Reconciled, ConditionUnsupportedFields)) {
		return nil
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&struct {
		Conditions []monitoringv1.Condition `json:"conditions"`
	}{mine})
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	return l.applyStatus(ctx, obj, map[string]any{"conditions": u["conditions"]})
}

// applyStatus applies status as obj's (ApplyStatus).
func (l *Lifecycle[O, S, V]) applyStatus(ctx context.Context, obj O, status map[string]any) error {
	gvk, err := l.cfg.Client.GroupVersionKindFor(obj)
	if err != nil {
		return fmt.Errorf("apply status of %s %s: %w", l.cfg.Kind, client.ObjectKeyFromObject(obj), err)
	}
	return ApplyStatus(ctx, l.cfg.Client, l.cfg.Writer, gvk, client.ObjectKeyFromObject(obj), status)
}

// handBack stops taking over obj, whose controller id is no longer this
// controller's: nothing of it is written any more but what only this
// controller wrote. The status fields only it set go, in one write; the
// reloaders' Role and RoleBinding (only its pods use them) once no pod of
// obj runs them (ReleaseAccess).
func (l *Lifecycle[O, S, V]) handBack(ctx context.Context, obj O) error {
	v := l.variant
	key := client.ObjectKeyFromObject(obj)
	if err := l.forget(ctx, key); err != nil {
		return err
	}
	if FindCondition(v.Conditions(obj), conditionConfigApplied) != nil {
		// Only this controller writes ConfigApplied: no status, applied
		// by its field manager, removes what it alone set.
		if err := l.applyStatus(ctx, obj, map[string]any{}); err != nil {
			return err
		}
		l.cfg.Logger.Info("handed back", l.logKey, key, "controller_id", obj.GetAnnotations()[AnnotationControllerID])
	}
	name := v.AccessName(obj)
	deleted, err := ReleaseAccess(ctx, l.cfg.Client, l.cfg.Writer, obj, name, func(ctx context.Context) ([]corev1.Pod, error) { return v.Pods(ctx, obj) })
	if !deleted {
		return err
	}
	l.cfg.Logger.Info("deleted the reloaders' Role: no pod of the object handed back runs them", l.logKey, key, "role", name)
	return nil
}
