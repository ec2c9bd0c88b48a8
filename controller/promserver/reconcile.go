package promserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promcfg"
	"github.com/podreload/podreload/controller/rulefiles"
	"github.com/podreload/podreload/controller/sidecar"
	"github.com/podreload/podreload/controller/store"
	"github.com/podreload/podreload/controller/takeover"
)

const (
	// ConditionReconciled is True when the objects of a PrometheusServer
	// match its spec and the objects it selects.
	ConditionReconciled = "Reconciled"
	// ConditionAvailable is True when every replica of a PrometheusServer
	// is ready.
	ConditionAvailable = "Available"
	// ConditionConfigApplied is the condition of what the replicas run
	// (sidecar.Applied).
	ConditionConfigApplied = sidecar.ConditionConfigApplied
)

// Reconciler is the Reconciler of PrometheusServers.
type Reconciler struct {
	Client client.Client
	reader client.Reader
	// metadata reads the cached metadata of Secrets.
	metadata client.Reader
	Recorder recorder.EventRecorder
	Logger   *slog.Logger
	Metrics  *metrics
	workload WorkloadOptions
	// writer writes the objects of the servers.
	Writer *kube.Writer
	// coalescer spaces the renders of a server in a burst of events.
	Coalescer *kube.Coalescer

	// work is held by a render and by a status update without one
	// (reconcileStatus), which run in two controllers.
	Work sync.Mutex

	Mu sync.Mutex
	// caches are the rule caches, by server.
	caches map[types.NamespacedName]*RuleCache
	// refs are the Secrets and ConfigMaps each server's last render
	// referenced.
	refs *store.Tracker
	// warned are the rejections of each server already told in an Event.
	warned kube.Told[promcfg.Rejection]
	// Applied times the content each server's status shows written, to
	// every replica running it, and keeps it.
	Applied *sidecar.ApplyTimes
	// now is the clock of the shards' retention deadlines.
	now func() time.Time
	// retained are the nearest deadlines of the shards each server
	// retains (takeover.RetainShards), when it is reconciled again.
	retained *takeover.Deadlines
	// front is the kind whose servers the reconciler renders.
	front Front
	// own is the kind of the objects the servers come from, as the
	// owner references of what is written for them name it.
	own metav1.TypeMeta
}

// Front is a kind that runs Prometheus, as the reconciler sees it: its
// reconcile of one object, which renders it with sync, and the servers
// its objects are rendered as, which the events map to.
type Front interface {
	// Reconcile reconciles the object key names; with holdRules, the
	// rule ConfigMaps stay as they were last written (sync).
	Reconcile(ctx context.Context, key types.NamespacedName, holdRules bool) error
	// Servers returns the servers rendered, from the cache: the objects
	// of the kind, converted.
	Servers(ctx context.Context) []v1alpha1.PrometheusServer
}

// Reconcile makes the objects of the PrometheusServer req names match it.
// It is called for every event of what the server selects or owns; in a
// burst of them it waits (coalesce.go), and renders once for many, the
// renders while the burst goes on holding the rules' changes back.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	wait, holdRules := r.Coalescer.Wait(req.NamespacedName)
	if wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	r.Work.Lock()
	defer r.Work.Unlock()
	start := time.Now()
	r.Metrics.reconciles.Inc()
	err := r.front.Reconcile(ctx, req.NamespacedName, holdRules)
	r.Coalescer.Rendered(req.NamespacedName, err != nil)
	r.Metrics.duration.Observe(time.Since(start).Seconds())
	if err != nil {
		r.Metrics.Errors.Inc() // controller-runtime logs it, and retries.
		return ctrl.Result{}, err
	}
	// A shard retained is deleted at its deadline.
	after, _ := r.retained.Due(req.NamespacedName, r.now())
	return ctrl.Result{RequeueAfter: after}, nil
}

// Synced is what sync rendered and wrote.
type Synced struct {
	// objs are the objects rendered; nil when the spec cannot be.
	Objs *Objects
	// sets are the live StatefulSets, by shard.
	Sets []*appsv1.StatefulSet
	// cond is the Reconciled condition.
	Cond metav1.Condition
	// err is the error of the writes, which cond tells too.
	Err error
}

// Sync renders the objects of server and writes them for own, its
// Kubernetes object (the PrometheusServer, or the Prometheus it was
// converted from), which the Events are about. With holdRules, the rule
// ConfigMaps stay as this controller last wrote them, when it knows
// (rulefiles.Written): the configuration and the status describe
// them, not the rules' changes, which a later render writes. It returns an
// error only when the inputs cannot be read; what the render and the
// writes gave is in synced.
func (r *Reconciler) Sync(ctx context.Context, server Target, own kube.Owner, holdRules bool) (Synced, error) {
	key := client.ObjectKeyFromObject(server)
	in, err := r.inputs(ctx, server)
	if err != nil {
		return Synced{}, err
	}
	in.HoldRules = holdRules
	// The Secrets the last render referenced are read first; when this
	// render references others, even one that failed on them, it is done
	// again with them.
	var objs *Objects
	refs := r.refs.Refs(key)
	cache := r.ruleCache(key)
	if err := r.seedRuleCache(ctx, server, cache); err != nil {
		return Synced{}, err
	}
	for {
		var read store.Objects
		if read, err = store.Read(ctx, r.reader, refs); err != nil {
			return Synced{}, err
		}
		in.Secrets, in.ConfigMaps = read.Secrets, read.ConfigMaps
		objs, err = Render(in, r.workload, cache)
		var specErr *SpecError
		var seen []store.Ref
		switch {
		case err == nil:
			seen = objs.SecretRefs
		case errors.As(err, &specErr):
			seen = specErr.SecretRefs
		}
		if store.Subset(seen, refs) {
			break
		}
		refs = store.Union(refs, seen)
	}
	if err != nil {
		// Nothing changes until the server, or a Secret it references,
		// does: its spec is at fault, and what was written last stays.
		// The Secrets are remembered, so that creating or fixing one
		// brings the server back here.
		r.refs.Remember(key, refs)
		r.Metrics.Errors.Inc()
		r.Logger.Error("render", own.Key, key, "err", err)
		r.event(own.Object, nil, "InvalidSpec", err.Error())
		return Synced{Cond: metav1.Condition{
			Type: ConditionReconciled, Status: metav1.ConditionFalse, Reason: "InvalidSpec", Message: err.Error(),
		}}, nil
	}
	r.refs.Remember(key, objs.SecretRefs)
	r.warn(own, in, objs.Rejected)

	rules := rulefiles.Clone(objs.RuleShards) // As rendered: the writes set their metadata.
	sets, err := r.write(ctx, server, own, objs)
	if err != nil {
		rules = nil // Unknown: the next render writes them.
	}
	cache.written.Wrote(writtenFor(server), rules)
	cond := metav1.Condition{Type: ConditionReconciled, Status: metav1.ConditionTrue, Reason: "Reconciled",
		Message: fmt.Sprintf("configuration %.12s and %d rule file ConfigMaps written", objs.ConfigHash, len(objs.RuleShards))}
	if objs.RulesHeld {
		r.Logger.Debug("rule changes held back while the burst of changes lasts", own.Key, key)
		cond.Message = fmt.Sprintf("configuration %.12s written with the %d rule file ConfigMaps as written before: "+
			"the rules' changes are written once the burst of changes pauses", objs.ConfigHash, len(objs.RuleShards))
	}
	var recreating *kube.RecreatingError
	switch {
	case errors.As(err, &recreating):
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "RecreatingStatefulSet", err.Error()
		err = nil // The deletion's event brings the server back here.
	case err != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "WriteFailed", err.Error()
	case objs.Oversized != nil:
		// The rules, Service and StatefulSet are written; the last
		// configuration stays until a monitor changes.
		r.Metrics.Errors.Inc()
		r.Logger.Error("configuration too large", own.Key, key, "err", objs.Oversized)
		r.event(own.Object, nil, "ConfigTooLarge", objs.Oversized.Error())
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "ConfigTooLarge",
			fmt.Sprintf("%d rule file ConfigMaps written, the configuration not: %v", len(objs.RuleShards), objs.Oversized)
	}
	return Synced{Objs: objs, Sets: sets, Cond: cond, Err: err}, nil
}

// inputs reads from the cache what server's objects are rendered from, but
// for the Secrets.
func (r *Reconciler) inputs(ctx context.Context, server Target) (Inputs, error) {
	in := Inputs{Server: server.PrometheusServer, Layout: server.Layout, UserConfig: server.UserConfig, Namespaces: map[string]labels.Set{}}
	var nss corev1.NamespaceList
	if err := r.Client.List(ctx, &nss, client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("list namespaces: %w", err)
	}
	for _, ns := range nss.Items {
		in.Namespaces[ns.Name] = ns.Labels
	}
	for _, k := range SelectedKinds() {
		if err := k.list(ctx, r.Client, &in); err != nil {
			return in, err
		}
	}
	in.Running = map[string]*appsv1.StatefulSet{}
	for shard := range ShardCount(server) {
		var sts appsv1.StatefulSet
		err := r.Client.Get(ctx, types.NamespacedName{Namespace: server.Namespace, Name: ShardName(server, shard)}, &sts)
		if client.IgnoreNotFound(err) != nil {
			return in, fmt.Errorf("get StatefulSet %s/%s: %w", server.Namespace, ShardName(server, shard), err)
		}
		if err == nil {
			in.Running[sts.Name] = &sts
		}
	}
	if server.Layout.DaemonSet() {
		ds, err := r.liveDaemonSet(ctx, types.NamespacedName{Namespace: server.Namespace, Name: ShardName(server, 0)}, true)
		if err != nil {
			return in, err
		}
		if ds != nil {
			in.Running[ds.Name] = templateOf(ds)
		}
	}
	return in, nil
}

// seedRuleCache seeds cache, before its first render, with the rule
// ConfigMaps server has (rulefiles.Cache.Seed).
func (r *Reconciler) seedRuleCache(ctx context.Context, server Target, cache *RuleCache) error {
	if cache.rules.Seeded() {
		return nil
	}
	live, _, err := r.liveShards(ctx, server, nil)
	if err != nil {
		return err
	}
	cache.rules.Seed(live)
	return nil
}

// ruleCache returns the rule cache of a server.
func (r *Reconciler) ruleCache(key types.NamespacedName) *RuleCache {
	r.Mu.Lock()
	defer r.Mu.Unlock()
	c := r.caches[key]
	if c == nil {
		c = new(RuleCache)
		r.caches[key] = c
	}
	return c
}

// Forget drops what is kept about a deleted server.
func (r *Reconciler) Forget(key types.NamespacedName) {
	r.Mu.Lock()
	delete(r.caches, key)
	r.warned.Forget(key)
	r.Applied.Forget(key)
	r.Mu.Unlock()
	r.Coalescer.Forget(key)
	r.refs.Forget(key)
	for _, k := range SelectedKinds() {
		r.Metrics.Selected.DeleteLabelValues(key.Namespace, key.Name, k.Kind)
		r.Metrics.Rejected.DeleteLabelValues(key.Namespace, key.Name, k.Kind)
	}
	r.Metrics.ConfigApplied.DeleteLabelValues(key.Namespace, key.Name)
}

// BoolGauge is b as a gauge's value: 1 or 0.
func BoolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// warn emits a Warning Event on each rejected object, once per object
// and reason for a server (own), and logs it.
func (r *Reconciler) warn(own kube.Owner, in Inputs, rejected []promcfg.Rejection) {
	key := client.ObjectKeyFromObject(own.Object)
	for _, rej := range r.warned.New(key, rejected) {
		r.Logger.Warn("rejected", own.Key, key, "kind", rej.Kind, "namespace", rej.Namespace, "name", rej.Name, "reason", rej.Reason)
		if obj := rejectedObject(in, rej); obj != nil {
			r.event(obj, own.Object, "Rejected", fmt.Sprintf("left out of %s %s: %s", ownerKind(own.Object), key, rej.Reason))
		}
	}
}

// event emits a Warning Event about regarding (kube.Warn).
func (r *Reconciler) event(regarding, related runtime.Object, reason, note string) {
	kube.Warn(r.Recorder, regarding, related, reason, note)
}

// rejectedObject returns the candidate of in that rej names.
func rejectedObject(in Inputs, rej promcfg.Rejection) runtime.Object {
	if k, ok := SelectedKindOf(rej.Kind); ok {
		if obj := k.find(in, rej.Namespace, rej.Name); obj != nil {
			return obj
		}
	}
	return nil
}

// ownerKind is the kind of an owner, for messages.
func ownerKind(obj client.Object) string {
	if _, ok := obj.(*monitoringv1.Prometheus); ok {
		return monitoringv1.PrometheusesKind
	}
	return v1alpha1.Kind
}

// ownerServer returns the object of the reconciler's kind controlling
// obj, if any.
func (r *Reconciler) ownerServer(obj metav1.Object) *types.NamespacedName {
	c := metav1.GetControllerOf(obj)
	if c == nil || c.Kind != r.own.Kind || c.APIVersion != r.own.APIVersion {
		return nil
	}
	return &types.NamespacedName{Namespace: obj.GetNamespace(), Name: c.Name}
}
