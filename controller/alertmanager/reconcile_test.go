package alertmanager

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/controller/alertmanager/amconfig"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/sidecar"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/metricvalue"
	"github.com/podreload/podreload/internal/testenv/testlog"
)

// deadline bounds every wait for the controller to converge.
const deadline = 30 * time.Second

// eventually waits until check passes, trying every 20 ms, within deadline.
func eventually(t *testing.T, check func(c *assert.CollectT), msgAndArgs ...any) {
	t.Helper()
	require.EventuallyWithT(t, check, deadline, 20*time.Millisecond, msgAndArgs...)
}

// start runs a controller of the Alertmanagers handed to podreload in
// namespaces until the test ends; it returns the registry of its metrics.
func start(t *testing.T, cfg *rest.Config, namespaces ...string) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	logger := slog.New(slog.NewTextHandler(testlog.Output(t), &slog.HandlerOptions{Level: slog.LevelInfo}))
	m, err := kube.NewManager(logger, reg, kube.Options{Config: cfg, Namespaces: namespaces, Names: []string{App}, AddToScheme: []func(*runtime.Scheme) error{AddToScheme}})
	require.NoError(t, err)
	require.NoError(t, Setup(m, logger, reg, Options{ControllerID: "podreload", ReloaderImage: "podreload:test"}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	eventually(t, func(c *assert.CollectT) { assert.NoError(c, m.Ready()) }, "caches synced")
	return reg
}

// operatorStatefulSet is a StatefulSet as prometheus-operator writes one
// for am (started with --labels=team=a), with what podreload does not
// render: an environment variable, its input hash annotation.
func operatorStatefulSet(am *monitoringv1.Alertmanager) *appsv1.StatefulSet {
	sel := map[string]string{
		"alertmanager": am.Name, "app.kubernetes.io/instance": am.Name, "app.kubernetes.io/managed-by": "prometheus-operator",
		"app.kubernetes.io/name": "alertmanager", "team": "a",
	}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: am.Namespace, Name: "alertmanager-" + am.Name,
			Labels:      map[string]string{"managed-by": "prometheus-operator", "app.kubernetes.io/managed-by": "prometheus-operator", "app.kubernetes.io/name": "alertmanager"},
			Annotations: map[string]string{"prometheus-operator-input-hash": "1234"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: monitoringv1.SchemeGroupVersion.String(), Kind: monitoringv1.AlertmanagersKind,
				Name: am.Name, UID: am.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To[int32](3),
			ServiceName:         "alertmanager-operated",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "alertmanager", Image: "quay.io/prometheus/alertmanager:v0.33.1",
					Env: []corev1.EnvVar{{Name: "OPERATOR_ONLY", Value: "1"}},
				}}},
			},
			VolumeClaimTemplates: claimTemplates(am),
		},
	}
}

const baseConfig = "route:\n  receiver: team\nreceivers:\n- name: team\n"

// TestReconciler runs the controller against a real kube-apiserver and
// etcd: an Alertmanager prometheus-operator wrote is taken over, its
// configuration generated, an AlertmanagerConfig left out, a bad base
// kept out, an Alertmanager with a refused field left alone, and the
// first handed back.
func TestReconciler(t *testing.T) {
	env := controlplane.Start(t, filepath.Join("..", "..", "deploy", "crds"))
	t.Run("take over, generate, refuse, hand back", func(t *testing.T) { testTakeover(t, env) })
	t.Run("web TLS", func(t *testing.T) { testWebTLS(t, env) })
	t.Run("cluster TLS", func(t *testing.T) { testClusterTLS(t, env) })
	t.Run("volume source", func(t *testing.T) { testVolumeSource(t, env) })
	t.Run("global configuration", func(t *testing.T) { testGlobal(t, env) })
	t.Run("from prometheus-operator and back", func(t *testing.T) { testOperator(t, env) })
	t.Run("AlertmanagerConfig bindings", func(t *testing.T) { testBindings(t, env) })
	t.Run("a field of a newer prometheus-operator's CRD", func(t *testing.T) { testNewerCRD(t, env) })
	t.Run("a field of a newer prometheus-operator's AlertmanagerConfig CRD", func(t *testing.T) { testNewerConfigCRD(t, env) })
	t.Run("AlertmanagerConfigs that reference files", func(t *testing.T) { testFileSystemMode(t, env) })
}

func testTakeover(t *testing.T, env *controlplane.ControlPlane) {
	c := controlplane.NewClient(t, env.Config, AddToScheme)
	ctx := t.Context()
	ns := "am-takeover"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))

	am := testAlertmanager(ns, "main", "other")
	am.Spec.AlertmanagerConfigSelector = &metav1.LabelSelector{}
	require.NoError(t, c.Create(ctx, am))
	require.NoError(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alertmanager-main"},
		Data:       map[string][]byte{"alertmanager.yaml": []byte(baseConfig), "team.tmpl": []byte(`{{ define "x" }}x{{ end }}`)},
	}))
	amc := &monitoringv1alpha1.AlertmanagerConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "broken"}}
	amc.Spec.Route = &monitoringv1alpha1.Route{Receiver: "hook"}
	amc.Spec.Receivers = []monitoringv1alpha1.Receiver{{Name: "hook", WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
		URLSecret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}, Key: "url"},
	}}}}
	require.NoError(t, c.Create(ctx, amc))
	opSTS := operatorStatefulSet(am)
	require.NoError(t, c.Create(ctx, opSTS, client.FieldOwner(takeover.OperatorFieldManager)))
	refused := testAlertmanager(ns, "refused", "podreload")
	refused.Spec.Containers = []corev1.Container{{Name: "config-reloader", Image: "x"}}
	require.NoError(t, c.Create(ctx, refused))

	other := "am-takeover-team"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other, Labels: map[string]string{"team": "a"}}}))
	reg := start(t, env.Config, ns, other)

	// Refused: its condition and Event, nothing written.
	eventually(t, func(ct *assert.CollectT) {
		var live monitoringv1.Alertmanager
		if !assert.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(refused), &live)) {
			return
		}
		cond := takeover.FindCondition(live.Status.Conditions, takeover.ConditionUnsupportedFields)
		if assert.NotNil(ct, cond) {
			assert.Contains(ct, cond.Message, "not supported yet: spec.containers (docs/prometheus-operator.md)")
		}
		assert.True(ct, hasEvent(t, c, ns, "refused", takeover.ConditionUnsupportedFields, "spec.containers"), "the UnsupportedFields Event")
	})
	for _, name := range []string{"alertmanager-refused", "alertmanager-refused-generated"} {
		require.True(t, apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{})), name)
	}
	require.True(t, apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alertmanager-refused"}, &appsv1.StatefulSet{})))

	// Not handed over yet: untouched.
	var sts appsv1.StatefulSet
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(opSTS), &sts))
	require.Equal(t, "1234", sts.Annotations["prometheus-operator-input-hash"])

	controlplane.Edit(t, c, am, func(a *monitoringv1.Alertmanager) { a.Annotations[takeover.AnnotationControllerID] = "podreload" })
	eventually(t, func(ct *assert.CollectT) {
		if !assert.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(opSTS), &sts)) {
			return
		}
		assert.True(ct, slices.ContainsFunc(sts.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == "config-reloader" }), "our sidecar")
	})
	require.Equal(t, opSTS.UID, sts.UID, "adopted, not created again")
	require.Equal(t, opSTS.Spec.Selector, sts.Spec.Selector, "the selector, with the operator's --labels, kept")
	require.Equal(t, "a", sts.Spec.Template.Labels["team"])
	require.Equal(t, "alertmanager-main-db", sts.Spec.VolumeClaimTemplates[0].Name)
	require.NotContains(t, sts.Annotations, "prometheus-operator-input-hash", "the operator's fields are ours, and went")
	for _, ctr := range sts.Spec.Template.Spec.Containers {
		require.False(t, slices.ContainsFunc(ctr.Env, func(e corev1.EnvVar) bool { return e.Name == "OPERATOR_ONLY" }), "container %s: the operator's environment went", ctr.Name)
	}
	var full appsv1.StatefulSet // With its managed fields.
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(opSTS), &full))
	for _, m := range full.ManagedFields {
		require.NotEqual(t, takeover.OperatorFieldManager, m.Manager, "prometheus-operator still manages fields")
	}
	amArgs := sts.Spec.Template.Spec.Containers[0].Args
	require.Contains(t, amArgs, "--cluster.peer=alertmanager-main-2.alertmanager-operated:9094")
	require.Contains(t, amArgs, "--cluster.label="+ns+"/main")
	require.Contains(t, sts.Spec.Template.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "alertmanager-main-db", MountPath: "/alertmanager", SubPath: "alertmanager-db"})

	// The generated configuration: amconfig's, gzipped, with the template.
	var generated corev1.Secret
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alertmanager-main-generated"}, &generated))
	var live monitoringv1.Alertmanager
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(am), &live))
	var liveAMC monitoringv1alpha1.AlertmanagerConfig
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(amc), &liveAMC))
	want, err := amconfig.Generate(ctx, amconfig.Input{Alertmanager: &live, Base: []byte(baseConfig),
		Configs: []*monitoringv1alpha1.AlertmanagerConfig{&liveAMC}, Resolver: &resolver{reader: c}})
	require.NoError(t, err)
	require.Equal(t, string(want.Config), gunzip(t, generated.Data["alertmanager.yaml.gz"]))
	require.Equal(t, `{{ define "x" }}x{{ end }}`, string(generated.Data["team.tmpl"]), "the configSecret's other keys, as prometheus-operator copies them")
	require.True(t, metav1.IsControlledBy(&generated, &live))

	// The AlertmanagerConfig left out: its Event and the gauge.
	require.Len(t, want.LeftOut, 1, "a webhook URL from a Secret that does not exist")
	eventually(t, func(ct *assert.CollectT) {
		assert.True(ct, hasEvent(t, c, ns, "broken", "LeftOut", "left out of Alertmanager "+ns+"/main: "), "the LeftOut Event on the AlertmanagerConfig")
	})
	require.InDelta(t, 1, metricvalue.Sum(t, reg, "podreload_controller_alertmanagerconfigs_left_out"), 0)
	// One created later, in a namespace of the namespace selector: the
	// watches bring it in.
	controlplane.Edit(t, c, am, func(a *monitoringv1.Alertmanager) {
		a.Spec.AlertmanagerConfigNamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	})
	late := amc.DeepCopy()
	late.ObjectMeta = metav1.ObjectMeta{Namespace: other, Name: "late"}
	require.NoError(t, c.Create(ctx, late))
	eventually(t, func(ct *assert.CollectT) {
		assert.True(ct, hasEvent(t, c, other, "late", "LeftOut", "left out of Alertmanager "+ns+"/main: "), "the LeftOut Event on the AlertmanagerConfig created later")
	})

	// The governing Service, shared, and the reloaders' Role.
	var svc corev1.Service
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alertmanager-operated"}, &svc))
	require.Len(t, svc.Spec.Ports, 3)
	require.Equal(t, corev1.ProtocolUDP, svc.Spec.Ports[2].Protocol)
	var role rbacv1.Role
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alertmanager-main-podreload"}, &role))
	require.Equal(t, []string{"alertmanager-main-generated"}, role.Rules[0].ResourceNames)

	// The status: prometheus-operator's, Reconciled, and ConfigApplied.
	eventually(t, func(ct *assert.CollectT) {
		if !assert.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(am), &live)) {
			return
		}
		rec := takeover.FindCondition(live.Status.Conditions, conditionReconciled)
		if assert.NotNil(ct, rec) {
			assert.Equal(ct, monitoringv1.ConditionTrue, rec.Status)
		}
		assert.NotNil(ct, takeover.FindCondition(live.Status.Conditions, sidecar.ConditionConfigApplied))
		assert.NotNil(ct, takeover.FindCondition(live.Status.Conditions, string(monitoringv1.Available)))
		assert.Equal(ct, "alertmanager=main,app.kubernetes.io/instance=main,app.kubernetes.io/managed-by=prometheus-operator,app.kubernetes.io/name=alertmanager", live.Status.Selector)
	})

	// Durations of zero: dropped, and said in the condition, as
	// prometheus-operator v0.94 does.
	controlplane.Edit(t, c, &live, func(a *monitoringv1.Alertmanager) {
		a.Spec.Retention, a.Spec.ClusterPeerTimeout = "0s", "0s"
	})
	eventually(t, func(ct *assert.CollectT) {
		if !assert.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(am), &live)) || !assert.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(opSTS), &sts)) {
			return
		}
		rec := takeover.FindCondition(live.Status.Conditions, conditionReconciled)
		if assert.NotNil(ct, rec) {
			assert.Equal(ct, monitoringv1.ConditionTrue, rec.Status)
			assert.Equal(ct, "IgnoredFields", rec.Reason)
			assert.Equal(ct, "The following fields were ignored: retention (zero value not supported), clusterPeerTimeout (zero value not supported)", rec.Message)
		}
		assert.Contains(ct, sts.Spec.Template.Spec.Containers[0].Args, "--data.retention=120h")
	})
	controlplane.Edit(t, c, &live, func(a *monitoringv1.Alertmanager) { a.Spec.Retention, a.Spec.ClusterPeerTimeout = "", "" })

	// A base that does not load: the last good configuration stays.
	before := generated.Data["alertmanager.yaml.gz"]
	var base corev1.Secret
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alertmanager-main"}, &base))
	controlplane.Edit(t, c, &base, func(s *corev1.Secret) { s.Data["alertmanager.yaml"] = []byte("route: [\n") })
	eventually(t, func(ct *assert.CollectT) {
		if !assert.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(am), &live)) {
			return
		}
		rec := takeover.FindCondition(live.Status.Conditions, conditionReconciled)
		if assert.NotNil(ct, rec) {
			assert.Equal(ct, monitoringv1.ConditionFalse, rec.Status)
			assert.Equal(ct, "InvalidConfiguration", rec.Reason)
			assert.Contains(ct, rec.Message, "the last good configuration is kept: alertmanager "+ns+"/main: base configuration")
		}
		assert.True(ct, hasEvent(t, c, ns, "main", "InvalidConfiguration", "the last good configuration is kept"))
	})
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(&generated), &generated))
	require.Equal(t, before, generated.Data["alertmanager.yaml.gz"], "the last good configuration kept")
	require.Positive(t, metricvalue.Sum(t, reg, "podreload_controller_reconcile_errors_total", "kind", "Alertmanager"), "the configuration that does not load is counted")
	require.Positive(t, metricvalue.Sum(t, reg, "podreload_controller_reconciles_total", "kind", "Alertmanager"), "the reconciles of Alertmanagers are counted")

	// A replica reports what its Alertmanager runs (as its reloader does,
	// no kubelet runs here): ConfigApplied follows it.
	applied, err := json.Marshal(contract.Applied{Hash: contract.Sum(before, nil), Time: "2026-11-27T05:00:00Z"})
	require.NoError(t, err)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alertmanager-main-0", Labels: sts.Spec.Template.Labels,
			Annotations: map[string]string{kube.AnnotationInputHash: "x", contract.AppliedAnnotation: string(applied)}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "alertmanager", Image: "x"}}},
	}
	require.NoError(t, c.Create(ctx, pod))
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	require.NoError(t, c.Status().Update(ctx, pod))
	eventually(t, func(ct *assert.CollectT) {
		if !assert.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(am), &live)) {
			return
		}
		if cond := takeover.FindCondition(live.Status.Conditions, sidecar.ConditionConfigApplied); assert.NotNil(ct, cond) {
			assert.Equal(ct, monitoringv1.ConditionTrue, cond.Status)
			assert.Contains(ct, cond.Message, "every ready replica runs")
		}
	})
	require.InDelta(t, 1, metricvalue.Sum(t, reg, "podreload_controller_alertmanager_config_applied"), 0)

	// Taken over and deleted, with prometheus-operator's status-cleanup
	// finalizer, which the controller removes: prometheus-operator no
	// longer would.
	gone := testAlertmanager(ns, "gone", "podreload")
	gone.Finalizers = []string{takeover.FinalizerStatusCleanup}
	require.NoError(t, c.Create(ctx, gone))
	eventually(t, func(ct *assert.CollectT) {
		assert.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alertmanager-gone"}, &appsv1.StatefulSet{}))
	})
	require.NoError(t, c.Delete(ctx, gone))
	eventually(t, func(ct *assert.CollectT) {
		err := c.Get(ctx, client.ObjectKeyFromObject(gone), &monitoringv1.Alertmanager{})
		assert.True(ct, apierrors.IsNotFound(err), "the Alertmanager gone, its finalizer removed: %v", err)
	})

	// One change of the StatefulSet's spec through the takeover and every
	// change since (an apply that changes nothing keeps the generation):
	// one rolling update.
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(opSTS), &sts))
	require.Equal(t, opSTS.Generation+1, sts.Generation, "one rolling update")

	// Hand back: our status fields go; a pod running our sidecar keeps the
	// reloaders' Role until it goes; nothing else is deleted.
	controlplane.Edit(t, c, am, func(a *monitoringv1.Alertmanager) { delete(a.Annotations, takeover.AnnotationControllerID) })
	eventually(t, func(ct *assert.CollectT) {
		if assert.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(am), &live)) {
			assert.Nil(ct, takeover.FindCondition(live.Status.Conditions, sidecar.ConditionConfigApplied), "our condition removed")
		}
	})
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(&role), &role), "a pod still runs our sidecar")
	require.NoError(t, c.Delete(ctx, pod, client.GracePeriodSeconds(0)))
	eventually(t, func(ct *assert.CollectT) {
		assert.True(ct, apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(&role), &rbacv1.Role{})), "the Role deleted")
	})
	for _, obj := range []client.Object{&appsv1.StatefulSet{}, &corev1.Secret{}} {
		name := "alertmanager-main"
		if _, ok := obj.(*corev1.Secret); ok {
			name += "-generated"
		}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj), "nothing else deleted")
	}
}

// hasEvent reports whether an Event with reason about the object name of
// ns has a note containing note.
func hasEvent(t *testing.T, c client.Client, ns, name, reason, note string) bool {
	var events eventsv1.EventList
	if err := c.List(t.Context(), &events, client.InNamespace(ns)); err != nil {
		return false
	}
	return slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool {
		return e.Reason == reason && e.Regarding.Name == name && strings.Contains(e.Note, note)
	})
}

func gunzip(t *testing.T, b []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	out, err := io.ReadAll(zr)
	require.NoError(t, err)
	return string(out)
}

// TestSetupWithoutCRD: on a cluster without prometheus-operator's CRDs
// the controller runs all the same, and says why no Alertmanager is taken
// over.
func TestSetupWithoutCRD(t *testing.T) {
	env := controlplane.Start(t)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	m, err := kube.NewManager(logger, prometheus.NewRegistry(), kube.Options{Config: env.Config, Names: []string{App}, AddToScheme: []func(*runtime.Scheme) error{AddToScheme}})
	require.NoError(t, err)
	require.NoError(t, Setup(m, logger, prometheus.NewRegistry(), Options{ControllerID: "podreload"}))
	require.Contains(t, logs.String(), `msg="prometheus-operator's CRD is not installed: no object of its kind is taken over (install it and restart the controller)" kind=Alertmanager err=`)
}

// TestWithoutAlertmanagerConfigCRD: with the Alertmanager CRD and not the
// AlertmanagerConfig one, an Alertmanager with a selector is taken over,
// selecting none.
func TestWithoutAlertmanagerConfigCRD(t *testing.T) {
	dir := t.TempDir()
	crd, err := os.ReadFile(filepath.Join("..", "..", "deploy", "crds", "monitoring.coreos.com_alertmanagers.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "monitoring.coreos.com_alertmanagers.yaml"), crd, 0o600))
	env := controlplane.Start(t, dir)
	c := controlplane.NewClient(t, env.Config, AddToScheme)
	ctx := t.Context()
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "no-amc"}}))
	am := testAlertmanager("no-amc", "main", "podreload")
	am.Spec.AlertmanagerConfigSelector = &metav1.LabelSelector{}
	require.NoError(t, c.Create(ctx, am))
	// One whose base is an AlertmanagerConfig: none can exist.
	global := testAlertmanager("no-amc", "global", "podreload")
	global.Spec.AlertmanagerConfiguration = &monitoringv1.AlertmanagerConfiguration{Name: "global"}
	require.NoError(t, c.Create(ctx, global))
	start(t, env.Config, "no-amc")
	eventually(t, func(ct *assert.CollectT) {
		var live monitoringv1.Alertmanager
		if !assert.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(am), &live)) {
			return
		}
		if rec := takeover.FindCondition(live.Status.Conditions, conditionReconciled); assert.NotNil(ct, rec) {
			assert.Equal(ct, monitoringv1.ConditionTrue, rec.Status, rec.Message)
		}
	})
	waitReconciled(t, c, global, metav1.ConditionFalse, "InvalidConfiguration",
		"nothing is written until a configuration is generated: alertmanager no-amc/global: spec.alertmanagerConfiguration: AlertmanagerConfig no-amc/global: the AlertmanagerConfig CRD is not installed")
	// No configuration ever generated: no StatefulSet whose pods would wait
	// for it, nor any other object.
	for _, obj := range []client.Object{&appsv1.StatefulSet{}, &corev1.Secret{}} {
		name := "alertmanager-global"
		if _, ok := obj.(*corev1.Secret); ok {
			name = "alertmanager-global-generated"
		}
		err := c.Get(ctx, client.ObjectKey{Namespace: "no-amc", Name: name}, obj)
		require.True(t, apierrors.IsNotFound(err), "%T %s: %v", obj, name, err)
	}

	// The same for a base that does not load, until it is fixed.
	base := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "no-amc", Name: "alertmanager-broken"},
		Data: map[string][]byte{"alertmanager.yaml": []byte("route: [\n")}}
	require.NoError(t, c.Create(ctx, base))
	broken := testAlertmanager("no-amc", "broken", "podreload")
	require.NoError(t, c.Create(ctx, broken))
	waitReconciled(t, c, broken, metav1.ConditionFalse, "InvalidConfiguration", "nothing is written until a configuration is generated: ")
	err = c.Get(ctx, client.ObjectKey{Namespace: "no-amc", Name: "alertmanager-broken"}, &appsv1.StatefulSet{})
	require.True(t, apierrors.IsNotFound(err), "no StatefulSet before a configuration: %v", err)
	controlplane.Edit(t, c, base, func(s *corev1.Secret) { s.Data["alertmanager.yaml"] = []byte(baseConfig) })
	waitReconciled(t, c, broken, metav1.ConditionTrue, "Reconciled", "")
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "no-amc", Name: "alertmanager-broken"}, &appsv1.StatefulSet{}))
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "no-amc", Name: "alertmanager-broken-generated"}, &corev1.Secret{}))
}
