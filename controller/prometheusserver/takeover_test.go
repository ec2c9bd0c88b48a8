package prometheusserver

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	promkind "github.com/podreload/podreload/controller/prometheus"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/takeover"
)

// operatorWrittenStatefulSet is a StatefulSet as prometheus-operator writes one
// for p (started with --labels=team=a), with what podreload does not
// render: an environment variable, its input hash annotation.
func operatorWrittenStatefulSet(p *monitoringv1.Prometheus) *appsv1.StatefulSet {
	sel := map[string]string{
		"app.kubernetes.io/instance": p.Name, "app.kubernetes.io/managed-by": "prometheus-operator",
		"app.kubernetes.io/name": "prometheus", promserver.LabelOperatorName: p.Name, "prometheus": p.Name,
		"operator.prometheus.io/shard": "0", "team": "a",
	}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: p.Namespace, Name: "prometheus-" + p.Name,
			Labels:      map[string]string{"managed-by": "prometheus-operator", "operator.prometheus.io/mode": "server", "operator.prometheus.io/name": p.Name, "operator.prometheus.io/shard": "0", "app.kubernetes.io/managed-by": "prometheus-operator"},
			Annotations: map[string]string{"prometheus-operator-input-hash": "1234"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: monitoringv1.SchemeGroupVersion.String(), Kind: monitoringv1.PrometheusesKind,
				Name: p.Name, UID: p.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To[int32](2),
			ServiceName:         "prometheus-operated",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "prometheus", Image: "quay.io/prometheus/prometheus:v3.13.1",
					Env: []corev1.EnvVar{{Name: "OPERATOR_ONLY", Value: "1"}},
				}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "prometheus-" + p.Name + "-db"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
}

// operatorPrometheus is a Prometheus with 2 replicas, storage, and every
// rule and monitor of its namespace selected, handed to id.
func operatorPrometheus(ns, name, id string) *monitoringv1.Prometheus {
	p := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{promkind.AnnotationControllerID: id}}}
	p.Spec.Replicas = ptr.To[int32](2)
	p.Spec.ServiceMonitorSelector = &metav1.LabelSelector{}
	p.Spec.RuleSelector = &metav1.LabelSelector{}
	p.Spec.Storage = &monitoringv1.StorageSpec{VolumeClaimTemplate: monitoringv1.EmbeddedPersistentVolumeClaim{
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}}
	return p
}

// testTakeover hands a Prometheus, whose StatefulSet prometheus-operator
// wrote, to the controller, then back.
func (cp *controlPlane) testTakeover(t *testing.T) {
	ns := cp.namespace(t, "takeover", nil)
	p := operatorPrometheus(ns, "k8s", "other")
	cp.create(t, p, prometheusRule(ns, "first", nil, "up"))
	// Written by prometheus-operator: its field manager.
	opSTS := operatorWrittenStatefulSet(p)
	require.NoError(t, cp.c.Create(t.Context(), opSTS, client.FieldOwner(takeover.OperatorFieldManager)))
	run := cp.startTakingOver(t, kube.Options{Namespaces: []string{ns}}, &takeover.Options{ControllerID: "podreload"})

	// Not ours: nothing written, whatever the case or spaces of the id.
	for _, id := range []string{"other", "Podreload", " podreload", ""} {
		edit(t, cp.c, p, func(p *monitoringv1.Prometheus) { p.Annotations[promkind.AnnotationControllerID] = id })
	}
	for _, w := range run.settleOrNone(t) {
		require.NotContains(t, w, "/namespaces/"+ns+"/", "a write for a Prometheus not handed over")
	}

	edit(t, cp.c, p, func(p *monitoringv1.Prometheus) { p.Annotations[promkind.AnnotationControllerID] = "podreload" })
	stsKey := client.ObjectKey{Namespace: ns, Name: "prometheus-k8s"}
	var sts appsv1.StatefulSet
	eventually(t, func(c *assert.CollectT) {
		if !assert.NoError(c, cp.c.Get(t.Context(), stsKey, &sts)) {
			return
		}
		assert.True(c, slices.ContainsFunc(sts.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == "config-reloader" }), "our sidecar")
	})
	require.Equal(t, opSTS.UID, sts.UID, "adopted, not created again")
	require.Equal(t, opSTS.Spec.Selector, sts.Spec.Selector, "the selector, with the operator's --labels, kept")
	require.Equal(t, "a", sts.Spec.Template.Labels["team"])
	require.Equal(t, "prometheus-operated", sts.Spec.ServiceName)
	require.Len(t, sts.Spec.VolumeClaimTemplates, 1)
	require.Equal(t, "prometheus-k8s-db", sts.Spec.VolumeClaimTemplates[0].Name)
	require.NotContains(t, sts.Annotations, "prometheus-operator-input-hash", "the operator's fields are ours, and went")
	for _, c := range sts.Spec.Template.Spec.Containers {
		require.False(t, slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "OPERATOR_ONLY" }), "container %s: the operator's environment went", c.Name)
	}
	var full appsv1.StatefulSet // With its managed fields.
	require.NoError(t, cp.c.Get(t.Context(), stsKey, &full))
	for _, m := range full.ManagedFields {
		require.NotEqual(t, takeover.OperatorFieldManager, m.Manager, "prometheus-operator still manages fields")
	}
	var owners []string
	for _, o := range sts.OwnerReferences {
		owners = append(owners, o.Kind+"/"+o.Name)
	}
	require.Equal(t, []string{"Prometheus/k8s"}, owners)

	// The configuration and the rules, where prometheus-operator's pods read them.
	var secret corev1.Secret
	cp.waitFor(t, client.ObjectKey{Namespace: ns, Name: "prometheus-k8s"}, &secret)
	zr, err := gzip.NewReader(bytes.NewReader(secret.Data[promserver.ConfigSecretKey]))
	require.NoError(t, err)
	config, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.Contains(t, string(config), "/etc/prometheus/rules/prometheus-k8s-rulefiles-0/*.yaml")
	var rules corev1.ConfigMap
	cp.waitFor(t, client.ObjectKey{Namespace: ns, Name: "prometheus-k8s-rulefiles-0"}, &rules)
	require.Len(t, rules.Data, 1, "plain rule files, as the operator's pods read them")
	for k, v := range rules.Data {
		require.True(t, strings.HasPrefix(k, ns+"-first-"), k)
		require.Contains(t, v, "first:rule:0")
	}
	var svc corev1.Service
	cp.waitFor(t, client.ObjectKey{Namespace: ns, Name: "prometheus-operated"}, &svc)
	require.Len(t, svc.OwnerReferences, 1)
	require.Nil(t, svc.OwnerReferences[0].Controller, "the governing Service is shared")
	var role rbacv1.Role
	cp.waitFor(t, client.ObjectKey{Namespace: ns, Name: "prometheus-k8s-podreload"}, &role)

	eventually(t, func(c *assert.CollectT) {
		var live monitoringv1.Prometheus
		if !assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKeyFromObject(p), &live)) {
			return
		}
		rec := takeover.FindCondition(live.Status.Conditions, promserver.ConditionReconciled)
		if assert.NotNil(c, rec) {
			assert.Equal(c, monitoringv1.ConditionTrue, rec.Status, rec.Message)
		}
		assert.NotNil(c, takeover.FindCondition(live.Status.Conditions, promserver.ConditionConfigApplied))
		assert.Equal(c, int32(1), live.Status.Shards)
		assert.Equal(c, "app.kubernetes.io/instance=k8s,app.kubernetes.io/managed-by=prometheus-operator,app.kubernetes.io/name=prometheus,operator.prometheus.io/name=k8s,prometheus=k8s", live.Status.Selector)
	})

	// A replica's report updates ConfigApplied without a render.
	run.settleOrNone(t)
	renders := metricValue(t, run.reg, "podreload_controller_reconciles_total")
	want := promserver.ContentHash(secret.Data[promserver.ConfigSecretKey], []*corev1.ConfigMap{&rules})
	report, err := json.Marshal(contract.Applied{Hash: want, Time: time.Now().UTC().Format(time.RFC3339)})
	require.NoError(t, err)
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus-k8s-0",
			Labels:      map[string]string{promserver.LabelOperatorName: "k8s", kube.LabelName: promserver.App},
			Annotations: map[string]string{contract.AppliedAnnotation: string(report)}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "prometheus", Image: "prometheus"}}},
	}
	cp.create(t, &pod)
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	require.NoError(t, cp.c.Status().Update(t.Context(), &pod))
	eventually(t, func(c *assert.CollectT) {
		var live monitoringv1.Prometheus
		if assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKeyFromObject(p), &live)) {
			if applied := takeover.FindCondition(live.Status.Conditions, promserver.ConditionConfigApplied); assert.NotNil(c, applied) {
				assert.Equal(c, "every ready replica runs "+want[:12], applied.Message)
			}
		}
	})
	require.Equal(t, renders, metricValue(t, run.reg, "podreload_controller_reconciles_total"), "renders for a report")
	require.NoError(t, cp.c.Delete(t.Context(), &pod))

	// The claim template edited during the takeover: the live claims
	// are kept, said in an Event; the StatefulSet is neither deleted nor
	// refused.
	edit(t, cp.c, p, func(p *monitoringv1.Prometheus) {
		p.Spec.Storage.VolumeClaimTemplate.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	})
	eventually(t, func(c *assert.CollectT) {
		var events eventsv1.EventList
		if assert.NoError(c, cp.c.List(t.Context(), &events, client.InNamespace(ns))) {
			assert.True(c, slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool {
				return e.Reason == "ClaimTemplatesKept" && e.Regarding.Name == "k8s" && strings.Contains(e.Note, "StatefulSet "+ns+"/prometheus-k8s")
			}), "a ClaimTemplatesKept Event")
		}
	})
	var kept appsv1.StatefulSet
	require.NoError(t, cp.c.Get(t.Context(), stsKey, &kept))
	require.Equal(t, opSTS.UID, kept.UID, "the StatefulSet kept")
	require.Nil(t, kept.DeletionTimestamp)
	require.Equal(t, "1Gi", kept.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String())

	// A refused field: the condition, the Event, nothing written.
	refused := operatorPrometheus(ns, "refused", "podreload")
	refused.Spec.ShardingStrategy = &monitoringv1.ShardingStrategy{Mode: ptr.To(monitoringv1.TopologyShardingStrategyMode)}
	cp.create(t, refused)
	eventually(t, func(c *assert.CollectT) {
		var live monitoringv1.Prometheus
		if !assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKeyFromObject(refused), &live)) {
			return
		}
		cond := takeover.FindCondition(live.Status.Conditions, takeover.ConditionUnsupportedFields)
		if assert.NotNil(c, cond) {
			assert.Equal(c, monitoringv1.ConditionTrue, cond.Status)
			assert.Contains(c, cond.Message, "shardingStrategy")
		}
		var events eventsv1.EventList
		if assert.NoError(c, cp.c.List(t.Context(), &events, client.InNamespace(ns))) {
			assert.True(c, slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool {
				return e.Reason == takeover.ConditionUnsupportedFields && e.Regarding.Name == "refused" && strings.Contains(e.Note, "shardingStrategy")
			}), "an UnsupportedFields Event")
		}
	})
	err = cp.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "prometheus-refused"}, &appsv1.StatefulSet{})
	require.True(t, apierrors.IsNotFound(err), "no StatefulSet for a refused Prometheus: %v", err)

	// A StatefulSet of the name, controlled by something else: refused,
	// said in the status, and left alone.
	clash := operatorPrometheus(ns, "clash", "podreload")
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "someone-else"}}
	cp.create(t, other)
	theirs := operatorWrittenStatefulSet(clash)
	theirs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: other.Name, UID: other.UID, Controller: ptr.To(true)}}
	cp.create(t, theirs, clash)
	eventually(t, func(c *assert.CollectT) {
		var live monitoringv1.Prometheus
		if !assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKeyFromObject(clash), &live)) {
			return
		}
		rec := takeover.FindCondition(live.Status.Conditions, promserver.ConditionReconciled)
		if assert.NotNil(c, rec) {
			assert.Equal(c, monitoringv1.ConditionFalse, rec.Status)
			assert.Contains(c, rec.Message, "StatefulSet "+ns+"/prometheus-clash: it is controlled by ConfigMap someone-else")
		}
	})
	var untouched appsv1.StatefulSet
	require.NoError(t, cp.c.Get(t.Context(), client.ObjectKeyFromObject(theirs), &untouched))
	require.Equal(t, theirs.ResourceVersion, untouched.ResourceVersion, "their StatefulSet untouched")

	// Deleted mid-takeover, its StatefulSet written, the rest not yet:
	// forgotten, nothing written again (the garbage collector deletes
	// its objects; there is none here).
	// With prometheus-operator's status-cleanup finalizer, which the
	// controller removes: prometheus-operator no longer would.
	gone := operatorPrometheus(ns, "gone", "podreload")
	gone.Finalizers = []string{takeover.FinalizerStatusCleanup}
	cp.create(t, gone)
	cp.waitFor(t, client.ObjectKey{Namespace: ns, Name: "prometheus-gone"}, &appsv1.StatefulSet{})
	require.NoError(t, cp.c.Delete(t.Context(), gone))
	eventually(t, func(c *assert.CollectT) {
		err := cp.c.Get(t.Context(), client.ObjectKeyFromObject(gone), &monitoringv1.Prometheus{})
		assert.True(c, apierrors.IsNotFound(err), "the Prometheus gone, its finalizer removed: %v", err)
	})
	settled := len(run.settleOrNone(t))
	cp.create(t, prometheusRule(ns, "after-gone", nil, "up"))
	for _, w := range run.settleOrNone(t)[settled:] {
		require.NotContains(t, w, "/prometheus-gone", "a write for a Prometheus deleted")
	}

	// Handed back: our status fields and the Role (no pod runs our
	// sidecar: there is no kubelet here) go, nothing else.
	run.settle(t)
	edit(t, cp.c, p, func(p *monitoringv1.Prometheus) { p.Annotations[promkind.AnnotationControllerID] = "" })
	eventually(t, func(c *assert.CollectT) {
		var live monitoringv1.Prometheus
		if assert.NoError(c, cp.c.Get(t.Context(), client.ObjectKeyFromObject(p), &live)) {
			assert.Nil(c, takeover.FindCondition(live.Status.Conditions, promserver.ConditionConfigApplied), "our condition removed")
		}
		err := cp.c.Get(t.Context(), client.ObjectKeyFromObject(&role), &rbacv1.Role{})
		assert.True(c, apierrors.IsNotFound(err), "the Role deleted: %v", err)
	})
	run.settle(t)
	before := run.Writes()
	cp.create(t, prometheusRule(ns, "second", nil, "up"))
	for _, w := range run.settleOrNone(t)[len(before):] {
		for _, of := range []string{"/prometheus-k8s", "/prometheuses/k8s"} {
			require.NotContains(t, w, of, "a write for a Prometheus handed back")
		}
	}
	for name, obj := range map[string]client.Object{"prometheus-k8s": &appsv1.StatefulSet{}, "prometheus-k8s-rulefiles-0": &corev1.ConfigMap{}, "prometheus-operated": &corev1.Service{}} {
		require.NoError(t, cp.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj), "%T %s kept", obj, name)
	}
	require.NoError(t, cp.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "prometheus-k8s"}, &corev1.Secret{}), "the config Secret kept")
}
