package prometheusserver

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/kube"
)

func probe(ns, name string, labels map[string]string) *monitoringv1.Probe {
	return &monitoringv1.Probe{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: monitoringv1.ProbeSpec{
			ProberSpec: monitoringv1.ProberSpec{URL: "blackbox:9115"},
			Module:     "http_2xx",
			Targets: monitoringv1.ProbeTargets{StaticConfig: &monitoringv1.ProbeTargetStaticConfig{
				Targets: []string{"https://example.com"},
			}},
		},
	}
}

func scrapeConfig(ns, name string, labels map[string]string) *monitoringv1alpha1.ScrapeConfig {
	return &monitoringv1alpha1.ScrapeConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: monitoringv1alpha1.ScrapeConfigSpec{StaticConfigs: []monitoringv1alpha1.StaticConfig{
			{Targets: []monitoringv1alpha1.Target{"node-1:9100"}},
		}},
	}
}

// testProbesAndScrapeConfigs: the upstream Probe and ScrapeConfig CRDs of
// deploy/crds are served, and the controller selects their objects as it
// selects monitors, follows changes to them and to their namespaces, and
// leaves out a ScrapeConfig of a discovery it does not render, saying so.
func (cp *controlPlane) testProbesAndScrapeConfigs(t *testing.T) {
	a := cp.namespace(t, "kinds-a", labelsOf("team", "x"))
	b := cp.namespace(t, "kinds-b", nil)
	run := cp.start(t, kube.Options{Namespaces: []string{a, b}})

	srv := server(a, "main", func(s *v1alpha1.PrometheusServerSpec) {
		s.ProbeSelector = &metav1.LabelSelector{MatchLabels: labelsOf("probe", "yes")}
		s.ScrapeConfigSelector = &metav1.LabelSelector{}
		s.ScrapeConfigNamespaceSelector = &metav1.LabelSelector{MatchLabels: labelsOf("team", "x")}
	})
	aSites := probe(a, "sites", labelsOf("probe", "yes"))
	aOther := probe(a, "other", nil)
	bSites := probe(b, "sites", labelsOf("probe", "yes")) // Not the server's namespace.
	aNodes := scrapeConfig(a, "nodes", nil)
	bNodes := scrapeConfig(b, "nodes", nil)
	consul := scrapeConfig(a, "consul", nil)
	consul.Spec.ConsulSDConfigs = []monitoringv1alpha1.ConsulSDConfig{{Server: "consul:8500"}}
	cp.create(t, aSites, aOther, bSites, aNodes, bNodes, consul, srv)

	const reason = "unsupported service discovery consulSDConfigs: only staticConfigs, fileSDConfigs, httpSDConfigs, kubernetesSDConfigs and dnsSDConfigs are rendered"
	config := cp.waitJobs(t, srv, "probe/kinds-a/sites", "scrapeConfig/kinds-a/nodes")
	require.Contains(t, config, "replacement: blackbox:9115")
	eventually(t, func(c *assert.CollectT) {
		st := cp.status(t, srv)
		assert.Equal(c, v1alpha1.Selection{Selected: 1}, st.Probes)
		assert.Equal(c, v1alpha1.Selection{Selected: 2, Rejected: 1}, st.ScrapeConfigs)
		assert.Equal(c, []v1alpha1.LeftOutObject{{Kind: "ScrapeConfig", Namespace: a, Name: "consul", Reason: reason}}, st.LeftOut)
	})
	require.Equal(t, 1.0, metricValue(t, run.reg, "podreload_controller_selected_resources", "kind", "Probe"))
	require.Equal(t, 1.0, metricValue(t, run.reg, "podreload_controller_rejected_resources", "kind", "ScrapeConfig"))
	eventually(t, func(c *assert.CollectT) {
		var events eventsv1.EventList
		assert.NoError(c, cp.c.List(t.Context(), &events, client.InNamespace(a)))
		notes := map[string]string{}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == "Rejected" {
				notes[e.Regarding.Kind+"/"+e.Regarding.Name] = e.Note
			}
		}
		assert.Equal(c, map[string]string{"ScrapeConfig/consul": "left out of PrometheusServer kinds-a/main: " + reason}, notes)
	})

	// Each change reaches the configuration.
	edit(t, cp.c, aSites, func(p *monitoringv1.Probe) { p.Spec.Interval = "42s" })
	eventually(t, func(c *assert.CollectT) {
		assert.Contains(c, cp.config(t, srv), "scrape_interval: 42s")
	})
	edit(t, cp.c, aOther, func(p *monitoringv1.Probe) { p.Labels = labelsOf("probe", "yes") })
	cp.waitJobs(t, srv, "probe/kinds-a/sites", "probe/kinds-a/other", "scrapeConfig/kinds-a/nodes")
	edit(t, cp.c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: b}}, func(ns *corev1.Namespace) { ns.Labels = labelsOf("team", "x") })
	cp.waitJobs(t, srv, "probe/kinds-a/sites", "probe/kinds-a/other", "scrapeConfig/kinds-a/nodes", "scrapeConfig/kinds-b/nodes")
	edit(t, cp.c, consul, func(sc *monitoringv1alpha1.ScrapeConfig) { sc.Spec.ConsulSDConfigs = nil })
	cp.waitJobs(t, srv, "probe/kinds-a/sites", "probe/kinds-a/other", "scrapeConfig/kinds-a/consul", "scrapeConfig/kinds-a/nodes", "scrapeConfig/kinds-b/nodes")
	edit(t, cp.c, bNodes, func(sc *monitoringv1alpha1.ScrapeConfig) {
		sc.Spec.StaticConfigs[0].Targets = []monitoringv1alpha1.Target{"node-9:9100"}
	})
	eventually(t, func(c *assert.CollectT) {
		assert.Contains(c, cp.config(t, srv), "node-9:9100")
	})
	require.NoError(t, cp.c.Delete(t.Context(), aSites))
	cp.waitJobs(t, srv, "probe/kinds-a/other", "scrapeConfig/kinds-a/consul", "scrapeConfig/kinds-a/nodes", "scrapeConfig/kinds-b/nodes")
	eventually(t, func(c *assert.CollectT) {
		st := cp.status(t, srv)
		assert.Equal(c, v1alpha1.Selection{Selected: 1}, st.Probes)
		assert.Equal(c, v1alpha1.Selection{Selected: 3}, st.ScrapeConfigs)
		assert.Empty(c, st.LeftOut)
	})
}
