package prometheusserver

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/kube"
)

// testScrapeClasses follows spec.scrapeClasses on the real API server: the
// default class applies to a ServiceMonitor naming none, one naming a class
// the server lacks is left out (status, Event), two default classes refuse
// the spec (condition, Event) while the last configuration stays, the CRD
// refuses a duplicate name, and the fix brings both monitors in.
func (cp *controlPlane) testScrapeClasses(t *testing.T) {
	ns := cp.namespace(t, "classes", nil)
	run := cp.start(t, kube.Options{Namespaces: []string{ns}})
	cluster := monitoringv1.ScrapeClass{Name: "cluster", Default: ptr.To(true),
		Relabelings: []monitoringv1.RelabelConfig{{TargetLabel: "cluster", Replacement: ptr.To("eu-1")}}}
	istio := monitoringv1.ScrapeClass{Name: "istio",
		Relabelings: []monitoringv1.RelabelConfig{{TargetLabel: "mesh", Replacement: ptr.To("istio")}}}
	srv := server(ns, "main", func(s *v1alpha1.PrometheusServerSpec) {
		s.ServiceMonitorSelector = &metav1.LabelSelector{}
		s.ScrapeClasses = []monitoringv1.ScrapeClass{cluster}
	})
	mesh := serviceMonitor(ns, "mesh", nil)
	mesh.Spec.ScrapeClassName = ptr.To("istio")
	cp.create(t, srv, serviceMonitor(ns, "web", nil), mesh)

	config := cp.waitJobs(t, srv, "serviceMonitor/classes/web/0")
	require.Contains(t, config, "replacement: eu-1")
	const reason = `scrapeClass: "istio": the PrometheusServer has no scrape class of that name`
	eventually(t, func(c *assert.CollectT) {
		st := cp.status(t, srv)
		assert.Equal(c, v1alpha1.Selection{Selected: 2, Rejected: 1}, st.ServiceMonitors)
		assert.Equal(c, []v1alpha1.LeftOutObject{{Kind: "ServiceMonitor", Namespace: ns, Name: "mesh", Reason: reason}}, st.LeftOut)
	})
	eventually(t, func(c *assert.CollectT) {
		var events eventsv1.EventList
		assert.NoError(c, cp.c.List(t.Context(), &events, client.InNamespace(ns)))
		notes := map[string]string{}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == "Rejected" {
				notes[e.Regarding.Kind+"/"+e.Regarding.Name] = e.Note
			}
		}
		assert.Equal(c, map[string]string{"ServiceMonitor/mesh": "left out of PrometheusServer classes/main: " + reason}, notes)
	})
	require.Equal(t, 1.0, metricValue(t, run.reg, "podreload_controller_rejected_resources", "kind", "ServiceMonitor"))

	// The CRD keys the list by name.
	dup := srv.DeepCopy()
	require.NoError(t, cp.c.Get(t.Context(), client.ObjectKeyFromObject(dup), dup))
	dup.Spec.ScrapeClasses = append(dup.Spec.ScrapeClasses, cluster)
	require.True(t, apierrors.IsInvalid(cp.c.Update(t.Context(), dup)), "a duplicate scrape class name is refused")

	istio.Default = ptr.To(true)
	edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) { s.Spec.ScrapeClasses = append(s.Spec.ScrapeClasses, istio) })
	const want = `render config: spec.scrapeClasses[1].default: scrape classes "cluster" and "istio" are both the default, one at most may be`
	cp.waitReconciled(t, srv, metav1.ConditionFalse, "InvalidSpec", want)
	cp.waitServerEvent(t, srv, "InvalidSpec", want)
	require.Equal(t, config, cp.config(t, srv), "the last configuration stays")

	edit(t, cp.c, srv, func(s *v1alpha1.PrometheusServer) { s.Spec.ScrapeClasses[1].Default = nil })
	config = cp.waitJobs(t, srv, "serviceMonitor/classes/mesh/0", "serviceMonitor/classes/web/0")
	require.Contains(t, config, "replacement: istio")
	cp.waitReconciled(t, srv, metav1.ConditionTrue, "Reconciled", "")
	eventually(t, func(c *assert.CollectT) {
		assert.Empty(c, cp.status(t, srv).LeftOut)
	})
}
