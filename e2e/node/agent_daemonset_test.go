package node

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// daemonSetAgent creates in default, handed to the controller from the
// start, a PrometheusAgent name in DaemonSet mode (one agent per node)
// that remote-writes to writeURL what it scrapes of the receiver through
// the PodMonitor name, every agentScrape, and returns it.
func (cl *cluster) daemonSetAgent(t testing.TB, name, writeURL string) *monitoringv1alpha1.PrometheusAgent {
	t.Helper()
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"agent": name}}
	pm := &monitoringv1.PodMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: selector.MatchLabels},
		Spec: monitoringv1.PodMonitorSpec{
			Selector:            metav1.LabelSelector{MatchLabels: map[string]string{"app": receiverPod}},
			PodMetricsEndpoints: []monitoringv1.PodMetricsEndpoint{{Port: ptr.To("web")}},
		},
	}
	agent := &monitoringv1alpha1.PrometheusAgent{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: name,
			Annotations: map[string]string{"operator.prometheus.io/controller-id": takeoverID},
		},
		Spec: monitoringv1alpha1.PrometheusAgentSpec{
			Mode:                   ptr.To(monitoringv1alpha1.DaemonSetPrometheusAgentMode),
			CommonPrometheusFields: agentFields(selector, writeURL),
		},
	}
	for _, obj := range []client.Object{pm, agent} {
		require.NoError(t, cl.c.Create(t.Context(), obj), "create %T %s", obj, name)
	}
	return agent
}

// daemonSetPods waits until the DaemonSet of the agent name runs a ready
// pod on every node it schedules one to, and returns their names.
func (cl *cluster) daemonSetPods(t testing.TB, name string) []string {
	t.Helper()
	var pods []string
	eventually(t, startTimeout, "the DaemonSet prom-agent-"+name+" ready", func() error {
		var ds appsv1.DaemonSet
		if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "prom-agent-" + name}, &ds); err != nil {
			return err
		}
		if ds.Status.DesiredNumberScheduled == 0 || ds.Status.NumberReady != ds.Status.DesiredNumberScheduled ||
			ds.Status.UpdatedNumberScheduled != ds.Status.DesiredNumberScheduled || ds.Status.ObservedGeneration != ds.Generation {
			return fmt.Errorf("DaemonSet status %+v", ds.Status)
		}
		var list corev1.PodList
		if err := cl.c.List(t.Context(), &list, client.InNamespace("default"),
			client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(ds.Spec.Selector.MatchLabels)}); err != nil {
			return err
		}
		pods = pods[:0]
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil {
				pods = append(pods, p.Name)
			}
		}
		if len(pods) != int(ds.Status.DesiredNumberScheduled) {
			return fmt.Errorf("%d pods of %d", len(pods), ds.Status.DesiredNumberScheduled)
		}
		return nil
	})
	return pods
}

// editPodMonitor sets, on the endpoint of the PodMonitor name, a
// relabeling that writes value into the label edit of its targets.
func (cl *cluster) editPodMonitor(t testing.TB, name, value string) {
	t.Helper()
	var pm monitoringv1.PodMonitor
	require.NoError(t, cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: name}, &pm))
	patch := client.MergeFrom(pm.DeepCopy())
	pm.Spec.PodMetricsEndpoints[0].RelabelConfigs = []monitoringv1.RelabelConfig{{
		Action: "replace", TargetLabel: "edit", Replacement: ptr.To(value),
	}}
	require.NoError(t, cl.c.Patch(t.Context(), &pm, patch))
}

// agentConfigHas returns nil once the configuration the agent pod runs
// (its /api/v1/status/config) holds s.
func (cl *cluster) agentConfigHas(t testing.TB, pod, s string) error {
	var data struct {
		YAML string `json:"yaml"`
	}
	if err := cl.prometheus(t, pod, "/api/v1/status/config", nil, &data); err != nil {
		return err
	}
	if !strings.Contains(data.YAML, s) {
		return fmt.Errorf("%s runs a configuration without %q", pod, s)
	}
	return nil
}

// receiverHas returns nil once the receiver has a sample of up for job
// since since, with the label edit=edit, from every pod of pods.
func (cl *cluster) receiverHas(t testing.TB, job, edit string, pods []string, since time.Time) error {
	var data struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
		} `json:"result"`
	}
	window := time.Since(since).Round(time.Second) + time.Second
	q := url.Values{"query": {fmt.Sprintf("up{job=%q,edit=%q}[%ds]", job, edit, int(window.Seconds()))}}
	if err := cl.prometheus(t, receiverPod, "/api/v1/query", q, &data); err != nil {
		return err
	}
	from := map[string]bool{}
	for _, r := range data.Result {
		from[r.Metric["prometheus_replica"]] = true
	}
	for _, pod := range pods {
		if !from[pod] {
			return fmt.Errorf("no sample of job %s with edit=%q from %s in the receiver (from %v)", job, edit, pod, from)
		}
	}
	return nil
}

// testDaemonSetAgent is the node acceptance of issue 39's DaemonSet mode:
// a PrometheusAgent in DaemonSet mode runs an agent on the node, which
// scrapes the receiver, a pod of that node, and remote-writes its samples
// to it; a PodMonitor edit is applied by every agent pod (the samples
// carry the label it adds), and ConfigApplied is True.
func (cl *cluster) testDaemonSetAgent(t *testing.T, writeURL string) {
	const name = "nodeagent"
	cl.daemonSetAgent(t, name, writeURL)
	pods := cl.daemonSetPods(t, name)
	eventually(t, 2*time.Minute, "the node's agent samples in the receiver", func() error {
		return cl.receiverHasReplicas(t, agentJob(name), pods)
	})
	edited := time.Now()
	cl.editPodMonitor(t, name, "first")
	for _, pod := range pods {
		eventually(t, time.Minute, "the edit applied by "+pod, func() error { return cl.agentConfigHas(t, pod, "replacement: first") })
	}
	eventually(t, time.Minute, "the edited samples of every agent pod in the receiver", func() error {
		return cl.receiverHas(t, agentJob(name), "first", pods, edited)
	})
	t.Logf("PodMonitor edit applied by the %d agent pods and its samples in the receiver %v after the edit", len(pods), time.Since(edited).Round(time.Millisecond))
	eventually(t, time.Minute, "ConfigApplied True", func() error {
		err := cl.agentCondition(t, name, "ConfigApplied", monitoringv1.ConditionTrue)
		if err == nil {
			return nil
		}
		return errors.Join(err, errors.New("(a DaemonSet agent's ConfigApplied counts its pods' reports)"))
	})
}
