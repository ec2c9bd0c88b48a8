package node

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// testEvents checks that the controller's pod, with deploy/'s RBAC, records
// both kinds of Event it sends: its leader election's (core/v1) and a
// left-out object's (events.k8s.io/v1).
func (cl *cluster) testEvents(t *testing.T) {
	eventually(t, time.Minute, "the leader election's Event", func() error {
		events, err := cl.kube.CoreV1().Events("podreload-system").List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(events.Items, func(e corev1.Event) bool { return e.Reason == "LeaderElection" }) {
			return fmt.Errorf("none among %d Events", len(events.Items))
		}
		return nil
	})

	sm := &monitoringv1.ServiceMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "left-out", Labels: map[string]string{"team": "example"}},
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "none"}},
			Endpoints: []monitoringv1.Endpoint{{Port: "metrics", RelabelConfigs: []monitoringv1.RelabelConfig{
				{SourceLabels: []monitoringv1.LabelName{"__address__"}, Regex: "(", TargetLabel: "x"},
			}}},
		},
	}
	require.NoError(t, cl.c.Create(t.Context(), sm))
	t.Cleanup(func() { _ = cl.c.Delete(t.Context(), sm) })
	eventually(t, time.Minute, "the left-out ServiceMonitor's Event", func() error {
		events, err := cl.kube.EventsV1().Events("default").List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		i := slices.IndexFunc(events.Items, func(e eventsv1.Event) bool {
			return e.Regarding.Kind == monitoringv1.ServiceMonitorsKind && e.Regarding.Name == sm.Name && e.Reason == "Rejected"
		})
		if i < 0 {
			return fmt.Errorf("none among %d Events", len(events.Items))
		}
		if e := events.Items[i]; e.Type != corev1.EventTypeWarning || !strings.Contains(e.Note, "relabelings[0].regex") {
			return fmt.Errorf("event %s %q", e.Type, e.Note)
		}
		return nil
	})
}

// testChart installs charts/podreload as `helm template | kubectl apply
// --server-side` would, beside the controller of deploy/, in a namespace
// of its own and watching another: its controller's pod becomes available
// with the chart's ServiceAccount and RBAC, and is never denied.
func (cl *cluster) testChart(t *testing.T) {
	const ns, watched, release = "podreload-chart", "chart-watched", "chart"
	for _, name := range []string{ns, watched} {
		require.NoError(t, client.IgnoreAlreadyExists(cl.c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})))
	}
	helm, err := toolbin.Path("helm")
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), helm, "template", release, "../../charts/podreload", "--namespace", ns,
		"--set", "namespaces={"+watched+"}")
	cmd.Env = append(cmd.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "helm template: %s", stderr.String())
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		require.NoError(t, cl.c.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(obj),
			client.FieldOwner(fieldOwner), client.ForceOwnership), "apply %s %s", obj.GetKind(), obj.GetName())
	}
	name := release + "-podreload-controller"
	eventually(t, startTimeout, "the chart's controller Deployment available", func() error {
		var d appsv1.Deployment
		if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
			return err
		}
		if d.Status.AvailableReplicas != 1 {
			return fmt.Errorf("%d available replicas: %+v", d.Status.AvailableReplicas, d.Status.Conditions)
		}
		return nil
	})
	logs := cl.logsOf(t, ns, "app.kubernetes.io/instance="+release)
	require.NotContains(t, strings.ToLower(logs), "forbidden", "an RBAC denial: the chart's RBAC misses a permission")
}
