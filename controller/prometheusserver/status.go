package prometheusserver

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/sidecar"
)

// writeStatus writes the status of server, with cond, from objs and sets
// when they are not nil; nothing is written when the status is the same.
// The status is computed from the one the controller last wrote (the
// cache can be behind its own last write) and applied whole, with
// server-side apply by the controller's field manager, forcing: no
// read-modify-write, so no conflict to retry whoever wrote last, and the
// fields it set before and no longer does are removed.
func (k *serverKind) writeStatus(ctx context.Context, server *v1alpha1.PrometheusServer, objs *promserver.Objects, sets []*appsv1.StatefulSet, cond metav1.Condition) error {
	r := k.r
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(server.Namespace), client.MatchingLabels(promserver.SelectorLabels(promserver.OwnTarget(server)))); err != nil {
		return fmt.Errorf("list pods of PrometheusServer %s/%s: %w", server.Namespace, server.Name, err)
	}
	key := client.ObjectKeyFromObject(server)
	k.mu.Lock()
	last, ok := k.statuses[key]
	k.mu.Unlock()
	if ok {
		server.Status = *last.DeepCopy()
	}
	before := server.Status.ContentHash
	status := k.status(server, objs, sets, cond)
	var applied metav1.Condition
	status.ReplicaStatuses, applied = sidecar.Applied(status.ContentHash, pods.Items)
	applied.ObservedGeneration = server.Generation
	if cond.Status != metav1.ConditionTrue {
		// This generation is not all written: ConfigApplied does not
		// speak for it, so that `kubectl wait
		// --for=condition=ConfigApplied` (which compares the condition's
		// observedGeneration with the generation) waits instead of
		// returning for a change that is not live.
		applied.ObservedGeneration = 0
		if was := meta.FindStatusCondition(server.Status.Conditions, promserver.ConditionConfigApplied); was != nil {
			applied.ObservedGeneration = was.ObservedGeneration
		}
	}
	meta.SetStatusCondition(&status.Conditions, applied)
	r.Metrics.ConfigApplied.WithLabelValues(server.Namespace, server.Name).Set(promserver.BoolGauge(applied.Status == metav1.ConditionTrue))
	if !equality.Semantic.DeepEqual(status, server.Status) {
		if err := k.applyStatus(ctx, server, status, !ok); err != nil {
			return err
		}
		server.Status = status
	}
	k.mu.Lock()
	k.statuses[key] = server.Status
	k.mu.Unlock()
	r.Applied.Observe(key, before, server.Status.ContentHash, meta.IsStatusConditionTrue(server.Status.Conditions, promserver.ConditionConfigApplied))
	return nil
}

// applyStatus applies status as server's status, with server-side apply
// by the controller's field manager, forcing. The first apply of a server
// since the controller started (first) sets the fields status leaves
// empty explicitly, zero: an earlier version of the controller patched the
// status, and what it set stays until another apply owns it (a leftOut
// list emptied, a rejected count back to 0); owned, the next applies,
// without them, remove them.
func (k *serverKind) applyStatus(ctx context.Context, server *v1alpha1.PrometheusServer, status v1alpha1.PrometheusServerStatus, first bool) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		return fmt.Errorf("status of PrometheusServer %s/%s: %w", server.Namespace, server.Name, err)
	}
	u = prune(u)
	if first {
		for _, k := range []string{"serviceMonitors", "podMonitors", "probes", "scrapeConfigs", "rules"} {
			sel, _ := u[k].(map[string]any)
			if sel == nil {
				sel = map[string]any{}
				u[k] = sel
			}
			for _, f := range []string{"selected", "rejected"} {
				if _, ok := sel[f]; !ok {
					sel[f] = int64(0)
				}
			}
		}
		for k, zero := range map[string]any{"leftOut": []any{}, "leftOutCount": int64(0), "replicas": int64(0), "shards": int64(0),
			"readyReplicas": int64(0), "configHash": "", "contentHash": ""} {
			if _, ok := u[k]; !ok {
				u[k] = zero
			}
		}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion().String(),
		"kind":       v1alpha1.Kind,
		"metadata":   map[string]any{"name": server.Name, "namespace": server.Namespace},
		"status":     u,
	}}
	k.r.Writer.Count(v1alpha1.Kind, "apply-status")
	if err := k.r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(kube.Name), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply status of PrometheusServer %s/%s: %w", server.Namespace, server.Name, err)
	}
	return nil
}

// prune removes from u, in place, the null values and the objects left
// empty (the converter gives an empty Selection as null, which the API
// server refuses in an apply): a field not applied is zero, once no other
// field manager owns it.
func prune(u map[string]any) map[string]any {
	for k, v := range u {
		switch v := v.(type) {
		case nil:
			delete(u, k)
		case map[string]any:
			if len(prune(v)) == 0 {
				delete(u, k)
			}
		case []any:
			for _, e := range v {
				if m, ok := e.(map[string]any); ok {
					prune(m)
				}
			}
		}
	}
	return u
}

// reconcileStatus updates the status of the PrometheusServer req names
// from its pods' reports of what they apply (ConfigApplied and the
// replica statuses), without a render: the rest of the status is the one
// the controller last wrote. Before the first render, or when the server
// changed since the last one, it leaves the status to the render that
// comes.
func (k *serverKind) reconcileStatus(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r := k.r
	r.Work.Lock()
	defer r.Work.Unlock()
	k.mu.Lock()
	last, ok := k.statuses[req.NamespacedName]
	k.mu.Unlock()
	if !ok {
		return ctrl.Result{}, nil
	}
	var server v1alpha1.PrometheusServer
	if err := r.Client.Get(ctx, req.NamespacedName, &server); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cond := meta.FindStatusCondition(last.Conditions, promserver.ConditionReconciled)
	if server.Spec.Paused || cond == nil || cond.ObservedGeneration != server.Generation {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, k.writeStatus(ctx, &server, nil, nil, *cond)
}

// maxLeftOut bounds the objects status.leftOut lists; each one's reason
// is cut as an Event's note is (kube.MaxEventNote): 50 KiB at most.
const maxLeftOut = 50

// status is the status of server with cond, from objs when it is not nil
// and from the live StatefulSets of its shards, sets. It sets the gauges of
// selected and rejected objects.
func (k *serverKind) status(server *v1alpha1.PrometheusServer, objs *promserver.Objects, sets []*appsv1.StatefulSet, cond metav1.Condition) v1alpha1.PrometheusServerStatus {
	status := *server.Status.DeepCopy()
	status.ObservedGeneration = server.Generation
	cond.ObservedGeneration = server.Generation
	meta.SetStatusCondition(&status.Conditions, cond)
	if objs != nil {
		if objs.ConfigSecret != nil {
			status.ConfigHash = objs.ConfigHash
			status.ContentHash = objs.ContentHash
		}
		counts := map[string]*v1alpha1.Selection{}
		for _, k := range promserver.SelectedKinds() {
			c := k.Status(&status)
			*c = v1alpha1.Selection{Selected: int32(objs.Selected[k.Kind])}
			counts[k.Kind] = c
		}
		status.LeftOut, status.LeftOutCount = nil, int32(len(objs.Rejected))
		for i, rej := range objs.Rejected {
			counts[rej.Kind].Rejected++
			if i < maxLeftOut {
				status.LeftOut = append(status.LeftOut, v1alpha1.LeftOutObject{Kind: rej.Kind, Namespace: rej.Namespace, Name: rej.Name, Reason: kube.Truncate(rej.Reason, kube.MaxEventNote)})
			}
		}
		for kind, c := range counts {
			k.r.Metrics.Selected.WithLabelValues(server.Namespace, server.Name, kind).Set(float64(c.Selected))
			k.r.Metrics.Rejected.WithLabelValues(server.Namespace, server.Name, kind).Set(float64(c.Rejected))
		}
	}
	if objs == nil && len(sets) == 0 && meta.FindStatusCondition(status.Conditions, promserver.ConditionAvailable) != nil {
		return status // Nothing known about the pods: keep what was.
	}
	want, shards := ptr.Deref(server.Spec.Replicas, 1), promserver.ShardCount(promserver.OwnTarget(server))
	available := metav1.Condition{Type: promserver.ConditionAvailable, Status: metav1.ConditionFalse, Reason: "NoStatefulSet",
		Message: "the StatefulSet does not exist yet", ObservedGeneration: server.Generation}
	if len(sets) > 0 {
		status.Replicas, status.ReadyReplicas, status.Shards = 0, 0, int32(len(sets))
		ready := want > 0 && len(sets) >= shards
		for _, sts := range sets {
			status.Replicas += sts.Status.Replicas
			status.ReadyReplicas += sts.Status.ReadyReplicas
			ready = ready && sts.Status.ReadyReplicas >= want
		}
		available.Reason, available.Message = "ReplicasNotReady", fmt.Sprintf("%d of %d replicas ready", status.ReadyReplicas, want*int32(shards))
		if shards > 1 {
			available.Message += fmt.Sprintf(" (%d shards of %d, %d StatefulSets)", shards, want, len(sets))
		}
		if ready {
			available.Status, available.Reason = metav1.ConditionTrue, "ReplicasReady"
		}
	}
	meta.SetStatusCondition(&status.Conditions, available)
	return status
}
