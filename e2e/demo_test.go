package e2e

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
)

// TestDemo is what `make demo` runs: the whole pipeline, narrated. A real
// kube-apiserver and etcd, the controller binary, the example manifests of
// deploy/example, and the pod the controller renders, run on loopback:
// the config-reloader reads the config Secret and the rule ConfigMaps from
// the API server (the API source, the default), expands the configuration
// and reloads the real Prometheus. It asserts every state it prints, so it is a test like the
// others.
func TestDemo(t *testing.T) {
	say := func(format string, args ...any) { fmt.Fprintf(os.Stdout, format+"\n", args...) }
	show := func(e *examplePipeline) {
		s, err := e.observe(t.Context())
		require.NoError(t, err)
		say("    Prometheus serves: scrape jobs %v", s.jobs)
		say("    Prometheus serves: external label prometheus_replica=%q", s.replica)
		names := slices.Sorted(func(yield func(string) bool) {
			for g := range s.groups {
				if !yield(g) {
					return
				}
			}
		})
		for _, g := range names {
			say("    Prometheus serves: rule group %q: %v", g, s.groups[g])
		}
		say("    config-reloader: %v reload(s)", e.reloads(t))
	}

	say("==> Starting a real kube-apiserver and etcd, the podreload controller, applying deploy/example,")
	say("    and starting on loopback the pod the controller rendered: the init config-reloader reads the")
	say("    config Secret and the rule ConfigMaps from the API server as the pod's service account, writes")
	say("    them, then Prometheus and the config-reloader sidecar start with the rendered StatefulSet's arguments")
	begin := time.Now()
	e := startExample(t)
	want := map[string][]string{"example": {"job:up:sum", "ExampleTargetDown"}}
	e.waitGroups(t, "example rules", want)
	say("    up and serving in %v", time.Since(begin).Round(time.Millisecond))
	show(e)

	say("\n==> kubectl edit prometheusrule example-rules: adding the recording rule job:up:count")
	want = map[string][]string{"example": {"job:up:sum", "ExampleTargetDown", "job:up:count"}}
	d := e.timeRuleChange(t, func() {
		e.editRule(t, "example-rules", func(r *monitoringv1.PrometheusRule) {
			r.Spec.Groups[0].Rules = append(r.Spec.Groups[0].Rules, record("job:up:count", "count by (job) (up)"))
		})
	}, want)
	say("    arrived in %v", d)
	show(e)

	say("\n==> kubectl apply: a second PrometheusRule, with an invalid expression")
	require.NoError(t, e.cl.c.Create(t.Context(), exampleRule("broken", "broken", map[string]string{"team": "example"}, record("job:broken", "sum(up"))))
	eventually(t, "the rule rejected", func() error {
		var srv v1alpha1.PrometheusServer
		if err := e.cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "example"}, &srv); err != nil {
			return err
		}
		if got := srv.Status.Rules; got != (v1alpha1.Selection{Selected: 2, Rejected: 1}) {
			return fmt.Errorf("status rules %+v", got)
		}
		return nil
	})
	say("    the controller left it out: PrometheusServer status rules {selected: 2, rejected: 1}, and a Warning Event:")
	say("    %s", e.rejectedEvent(t, "broken"))
	say("    Prometheus keeps its rules:")
	show(e)
	say("\n==> Done: stopping Prometheus, the sidecar, the controller and the control plane")
}
