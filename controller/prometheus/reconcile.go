package prometheus

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
	"github.com/podreload/podreload/controller/store"
)

const (
	// conditionReconciled is True when the objects of a PrometheusServer
	// match its spec and the objects it selects.
	conditionReconciled = "Reconciled"
	// conditionAvailable is True when every replica of a PrometheusServer
	// is ready.
	conditionAvailable = "Available"
)

// reconciler is the Reconciler of PrometheusServers.
type reconciler struct {
	client client.Client
	reader client.Reader
	// metadata reads the cached metadata of Secrets.
	metadata client.Reader
	recorder recorder.EventRecorder
	logger   *slog.Logger
	metrics  *metrics
	workload WorkloadOptions
	// writer writes the objects of the servers.
	writer *kube.Writer
	// coalescer spaces the renders of a server in a burst of events.
	coalescer *coalescer

	// work is held by a render and by a status update without one
	// (reconcileStatus), which run in two controllers.
	work sync.Mutex

	mu sync.Mutex
	// caches are the rule caches, by server.
	caches map[types.NamespacedName]*ruleCache
	// refs are the Secrets and ConfigMaps each server's last render
	// referenced.
	refs *store.Tracker
	// warned are the rejections of each server already told in an Event.
	warned map[types.NamespacedName]map[promcfg.Rejection]struct{}
	// written is the content each server's status last showed written.
	written map[types.NamespacedName]written
	// front is the kind whose servers the reconciler renders.
	front front
	// own is the kind of the objects the servers come from, as the
	// owner references of what is written for them name it.
	own metav1.TypeMeta
}

// front is a kind that runs Prometheus, as the reconciler sees it: its
// reconcile of one object, which renders it with sync, and the servers
// its objects are rendered as, which the events map to.
type front interface {
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
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	wait, holdRules := r.coalescer.wait(req.NamespacedName)
	if wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	r.work.Lock()
	defer r.work.Unlock()
	start := time.Now()
	r.metrics.reconciles.Inc()
	err := r.front.Reconcile(ctx, req.NamespacedName, holdRules)
	r.coalescer.rendered(req.NamespacedName, err != nil)
	r.metrics.duration.Observe(time.Since(start).Seconds())
	if err != nil {
		r.metrics.errors.Inc() // controller-runtime logs it, and retries.
	}
	return ctrl.Result{}, err
}

// synced is what sync rendered and wrote.
type synced struct {
	// objs are the objects rendered; nil when the spec cannot be.
	objs *objects
	// sets are the live StatefulSets, by shard.
	sets []*appsv1.StatefulSet
	// cond is the Reconciled condition.
	cond metav1.Condition
	// err is the error of the writes, which cond tells too.
	err error
}

// sync renders the objects of server and writes them for own, its
// Kubernetes object (the PrometheusServer, or the Prometheus it was
// converted from), which the Events are about. With holdRules, the rule
// ConfigMaps stay as this controller last wrote them, when it knows
// (ruleCache.writtenRules): the configuration and the status describe
// them, not the rules' changes, which a later render writes. It returns an
// error only when the inputs cannot be read; what the render and the
// writes gave is in synced.
func (r *reconciler) sync(ctx context.Context, server target, own kube.Owner, holdRules bool) (synced, error) {
	key := client.ObjectKeyFromObject(server)
	in, err := r.inputs(ctx, server)
	if err != nil {
		return synced{}, err
	}
	in.HoldRules = holdRules
	// The Secrets the last render referenced are read first; when this
	// render references others, even one that failed on them, it is done
	// again with them.
	var objs *objects
	refs := r.refs.Refs(key)
	cache := r.ruleCache(key)
	if err := r.seedRuleCache(ctx, server, cache); err != nil {
		return synced{}, err
	}
	for {
		var read store.Objects
		if read, err = store.Read(ctx, r.reader, refs); err != nil {
			return synced{}, err
		}
		in.Secrets, in.ConfigMaps = read.Secrets, read.ConfigMaps
		objs, err = render(in, r.workload, cache)
		var specErr *specError
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
		r.metrics.errors.Inc()
		r.logger.Error("render", own.Key, key, "err", err)
		r.event(own.Object, nil, "InvalidSpec", err.Error())
		return synced{cond: metav1.Condition{
			Type: conditionReconciled, Status: metav1.ConditionFalse, Reason: "InvalidSpec", Message: err.Error(),
		}}, nil
	}
	r.refs.Remember(key, objs.SecretRefs)
	r.warn(own, in, objs.Rejected)

	rules := cloneConfigMaps(objs.RuleShards) // As rendered: the writes set their metadata.
	sets, err := r.write(ctx, server, own, objs)
	if err == nil {
		cache.wroteRules(server, rules)
	} else {
		cache.wroteRules(server, nil) // Unknown: the next render writes them.
	}
	cond := metav1.Condition{Type: conditionReconciled, Status: metav1.ConditionTrue, Reason: "Reconciled",
		Message: fmt.Sprintf("configuration %.12s and %d rule file ConfigMaps written", objs.ConfigHash, len(objs.RuleShards))}
	if objs.RulesHeld {
		r.logger.Debug("rule changes held back while the burst of changes lasts", own.Key, key)
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
		r.metrics.errors.Inc()
		r.logger.Error("configuration too large", own.Key, key, "err", objs.Oversized)
		r.event(own.Object, nil, "ConfigTooLarge", objs.Oversized.Error())
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "ConfigTooLarge",
			fmt.Sprintf("%d rule file ConfigMaps written, the configuration not: %v", len(objs.RuleShards), objs.Oversized)
	}
	return synced{objs: objs, sets: sets, cond: cond, err: err}, nil
}

// inputs reads from the cache what server's objects are rendered from, but
// for the Secrets.
func (r *reconciler) inputs(ctx context.Context, server target) (inputs, error) {
	in := inputs{Server: server.PrometheusServer, Layout: server.layout, Namespaces: map[string]labels.Set{}}
	var nss corev1.NamespaceList
	if err := r.client.List(ctx, &nss, client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("list namespaces: %w", err)
	}
	for _, ns := range nss.Items {
		in.Namespaces[ns.Name] = ns.Labels
	}
	for _, k := range selectedKinds() {
		if err := k.list(ctx, r.client, &in); err != nil {
			return in, err
		}
	}
	return in, nil
}

// seedRuleCache seeds cache, before its first render, with the rule
// ConfigMaps server has (rulefiles.Cache.Seed).
func (r *reconciler) seedRuleCache(ctx context.Context, server target, cache *ruleCache) error {
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
func (r *reconciler) ruleCache(key types.NamespacedName) *ruleCache {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.caches[key]
	if c == nil {
		c = new(ruleCache)
		r.caches[key] = c
	}
	return c
}

// forget drops what is kept about a deleted server.
func (r *reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.caches, key)
	delete(r.warned, key)
	delete(r.written, key)
	r.mu.Unlock()
	r.coalescer.forget(key)
	r.refs.Forget(key)
	for _, k := range selectedKinds() {
		r.metrics.selected.DeleteLabelValues(key.Namespace, key.Name, k.kind)
		r.metrics.rejected.DeleteLabelValues(key.Namespace, key.Name, k.kind)
	}
	r.metrics.configApplied.DeleteLabelValues(key.Namespace, key.Name)
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// warn emits a Warning Event on each rejected object, once per object
// and reason for a server (own), and logs it.
func (r *reconciler) warn(own kube.Owner, in inputs, rejected []promcfg.Rejection) {
	key := client.ObjectKeyFromObject(own.Object)
	r.mu.Lock()
	old := r.warned[key]
	now := make(map[promcfg.Rejection]struct{}, len(rejected))
	for _, rej := range rejected {
		now[rej] = struct{}{}
	}
	r.warned[key] = now
	r.mu.Unlock()
	for _, rej := range rejected {
		if _, ok := old[rej]; ok {
			continue
		}
		r.logger.Warn("rejected", own.Key, key, "kind", rej.Kind, "namespace", rej.Namespace, "name", rej.Name, "reason", rej.Reason)
		if obj := rejectedObject(in, rej); obj != nil {
			r.event(obj, own.Object, "Rejected", fmt.Sprintf("left out of %s %s: %s", ownerKind(own.Object), key, rej.Reason))
		}
	}
}

// event emits a Warning Event about regarding.
func (r *reconciler) event(regarding, related runtime.Object, reason, note string) {
	r.recorder.Eventf(regarding, related, corev1.EventTypeWarning, reason, "Reconcile", "%s", kube.Truncate(note, kube.MaxEventNote))
}

// rejectedObject returns the candidate of in that rej names.
func rejectedObject(in inputs, rej promcfg.Rejection) runtime.Object {
	if k, ok := selectedKindOf(rej.Kind); ok {
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
func (r *reconciler) ownerServer(obj metav1.Object) *types.NamespacedName {
	c := metav1.GetControllerOf(obj)
	if c == nil || c.Kind != r.own.Kind || c.APIVersion != r.own.APIVersion {
		return nil
	}
	return &types.NamespacedName{Namespace: obj.GetNamespace(), Name: c.Name}
}
