package handoff

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/operator"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// The config-reloader images the previous release's controller and the
// current one default to: an upgrade changes it, as --reloader-image
// follows the controller's version.
const (
	previousReloaderImage = reloaderRepository + ":previous"
	currentReloaderImage  = reloaderRepository + ":current"
)

// testUpgrade runs the previous release's controller (bin/previous/,
// built from the git history at the commit CHANGELOG.md names) on a
// PrometheusServer of each source (API and volume), a Prometheus it took
// over from prometheus-operator and two Alertmanagers, to steady state; then replaces it
// with the current one, as `helm upgrade` replaces the Deployment's image
// (SIGTERM, then the new process), and asserts that the current
// controller writes nothing but statuses: no StatefulSet, Secret,
// ConfigMap, Service, Role or RoleBinding rewritten (their
// resourceVersions unchanged, no such write in the audit log), so no pod
// rolls, although the config-reloader image changed; but for the roll
// CHANGELOG.md lists for this release (rolled).
func testUpgrade(t testing.TB, e *env, fig figure) {
	previous, err := toolbin.Path("previous/controller")
	require.NoError(t, err, "`make bin/previous/controller` builds it")
	ns := e.namespace(t, "upgrade")
	createMonitors(t, e.c, ns)
	s := e.newPrometheus(t, ns, "k8s", "")
	operator.Start(t, e.cp.Kubeconfig, "", "--namespaces="+ns)
	s.waitOperatorWrote(t)
	for _, source := range []string{"api", "volume"} {
		srv := &v1alpha1.PrometheusServer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: source}}
		srv.Spec.Replicas = new(int32(replicas))
		srv.Spec.ServiceMonitorSelector, srv.Spec.RuleSelector = &metav1.LabelSelector{}, &metav1.LabelSelector{}
		srv.Spec.Reloader.Source = source
		require.NoError(t, e.c.Create(t.Context(), srv))
	}
	// Alertmanagers taken over: one of a version of its own, one without,
	// which CHANGELOG.md says rolls once onto v0.34.0, prometheus-operator
	// v0.94.1's default (the roll this test expects, and no other).
	for name, version := range map[string]string{"pinned": "v0.31.1", "unpinned": ""} {
		am := &monitoringv1.Alertmanager{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Annotations: map[string]string{takeover.AnnotationControllerID: controllerID}}}
		am.Spec.Replicas, am.Spec.Version = new(int32(replicas)), version
		require.NoError(t, e.c.Create(t.Context(), am))
	}
	kubeconfig := e.kubeconfig(t, e.cp.Config.Host, "")
	old := e.startBinary(t, previous, previousReloaderImage, kubeconfig, ns)
	s.annotate(t, controllerID)
	s.waitTakenOver(t, 0)
	e.waitServersReconciled(t, ns, "api", "volume")
	e.waitStatefulSets(t, ns, "alertmanager-pinned", "alertmanager-unpinned")
	e.settled(t, ns)
	before := e.objectVersions(t, ns)

	old.stop(t)
	upgraded := time.Now()
	current := e.startBinary(t, e.controllerBin, currentReloaderImage, kubeconfig, ns)
	// Each object reconciled by the current controller, then no write.
	current.waitReconciles(t, map[string]float64{"PrometheusServer": 2, "Prometheus": 1, "Alertmanager": 2})
	e.settled(t, ns)
	fig("the upgrade: the current controller's start → settled", time.Since(upgraded))

	for _, ev := range e.audit(t, ns) {
		if ev.writer() != controller.Name || ev.StageTimestamp.Time.Before(upgraded) || !ev.succeeded() {
			continue
		}
		switch r := ev.ObjectRef; {
		case r.Subresource == "status", r.Resource == "events", r.Resource == "leases":
		case r.Resource == "statefulsets" && r.Name == rolled:
		default:
			t.Errorf("the current controller wrote %s %s %s/%s after the upgrade: beyond a status", ev.Verb, r.Resource, r.Namespace, r.Name)
		}
	}
	after := e.objectVersions(t, ns)
	require.NotEqual(t, before["StatefulSet/"+rolled], after["StatefulSet/"+rolled], "the roll CHANGELOG.md lists")
	var sts appsv1.StatefulSet
	require.NoError(t, e.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: rolled}, &sts))
	require.Equal(t, "quay.io/prometheus/alertmanager:v0.34.0", sts.Spec.Template.Spec.Containers[0].Image)
	delete(before, "StatefulSet/"+rolled)
	delete(after, "StatefulSet/"+rolled)
	require.Equal(t, before, after, "objects rewritten by the upgrade (kind/name → resourceVersion)")
	for _, name := range []string{"api", "volume", s.stsName(), "alertmanager-pinned"} {
		var sts appsv1.StatefulSet
		require.NoError(t, e.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &sts))
		for _, c := range slices.Concat(sts.Spec.Template.Spec.InitContainers, sts.Spec.Template.Spec.Containers) {
			if c.Name == "config-reloader" || c.Name == "init-config-reloader" {
				require.Equal(t, previousReloaderImage, c.Image, "StatefulSet %s: the pods keep the config-reloader they run", name)
			}
		}
	}
}

// rolled is the StatefulSet the upgrade to this release rolls, as
// CHANGELOG.md says: the Alertmanager without spec.version's, onto
// Alertmanager v0.34.0.
const rolled = "alertmanager-unpinned"

// waitStatefulSets waits until the StatefulSets names of ns exist.
func (e *env) waitStatefulSets(t testing.TB, ns string, names ...string) {
	t.Helper()
	for _, name := range names {
		eventually(t, "StatefulSet "+ns+"/"+name, func() error {
			return e.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &appsv1.StatefulSet{})
		})
	}
}

// waitServersReconciled waits until each PrometheusServer of names in ns
// says Reconciled True for its generation.
func (e *env) waitServersReconciled(t testing.TB, ns string, names ...string) {
	t.Helper()
	for _, name := range names {
		eventually(t, "PrometheusServer "+ns+"/"+name+" reconciled", func() error {
			var srv v1alpha1.PrometheusServer
			if err := e.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &srv); err != nil {
				return err
			}
			c := meta.FindStatusCondition(srv.Status.Conditions, "Reconciled")
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != srv.Generation {
				return fmt.Errorf("Reconciled: %+v", c)
			}
			return nil
		})
	}
}

// settled waits until the audit log shows no write in ns for 2 s.
func (e *env) settled(t testing.TB, ns string) {
	t.Helper()
	eventually(t, "no write in "+ns+" for 2 s", func() error {
		events := e.audit(t, ns)
		if len(events) == 0 {
			return fmt.Errorf("no write yet")
		}
		if last := events[len(events)-1].StageTimestamp.Time; time.Since(last) < 2*time.Second {
			return fmt.Errorf("last write %s ago", time.Since(last).Round(time.Millisecond))
		}
		return nil
	})
}

// objectVersions returns the resourceVersion of each StatefulSet, Secret,
// ConfigMap, Service, Role and RoleBinding of ns, by kind and name.
func (e *env) objectVersions(t testing.TB, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	lists := map[string]client.ObjectList{
		"StatefulSet": &appsv1.StatefulSetList{}, "Secret": &corev1.SecretList{}, "ConfigMap": &corev1.ConfigMapList{},
		"Service": &corev1.ServiceList{}, "Role": &rbacv1.RoleList{}, "RoleBinding": &rbacv1.RoleBindingList{},
	}
	for _, kind := range slices.Sorted(maps.Keys(lists)) {
		list := lists[kind]
		require.NoError(t, e.c.List(t.Context(), list, client.InNamespace(ns)))
		items, err := meta.ExtractList(list)
		require.NoError(t, err)
		for _, it := range items {
			o := it.(client.Object)
			out[kind+"/"+o.GetName()] = o.GetResourceVersion()
		}
	}
	return out
}

// waitReconciles waits until the controller counts, for each kind of
// want, at least that many reconciles (podreload_controller_reconciles_total).
func (p *controllerProc) waitReconciles(t testing.TB, want map[string]float64) {
	t.Helper()
	for kind, n := range want {
		eventually(t, fmt.Sprintf("%v reconciles of %s", n, kind), func() error {
			v, err := p.metric(t, fmt.Sprintf("podreload_controller_reconciles_total{kind=%q}", kind))
			if err == nil && v < n {
				err = fmt.Errorf("%v reconciles", v)
			}
			return err
		})
	}
}

// metric returns the value of the series (its name and labels as the
// text format writes them) the controller exposes.
func (p *controllerProc) metric(t testing.TB, series string) (float64, error) {
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+p.addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("%s: no series %s", p.addr, series)
}
