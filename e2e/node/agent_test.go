package node

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// receiverPod is the Prometheus the agents remote-write to, with
	// --web.enable-remote-write-receiver.
	receiverPod = "receiver"
	// agentScrape and agentFlush are the agents' scrape interval and
	// remote write batch deadline: a series of the receiver may miss no
	// more than their sum.
	agentScrape, agentFlush = 2 * time.Second, time.Second
)

// agentPod is the pod of replica replica of the PrometheusAgent name in
// StatefulSet mode (prom-agent-<name>-<i>).
func agentPod(name string, replica int) string {
	return "prom-agent-" + name + "-" + strconv.Itoa(replica)
}

// agentClaimName is the claim of the WAL volume of a replica of the
// PrometheusAgent name: its volumeClaimTemplate (prom-agent-<name>-db).
func agentClaimName(name string, replica int) string {
	return "prom-agent-" + name + "-db-" + agentPod(name, replica)
}

// agentJob is the job label of the targets of the PodMonitor name of
// default: its namespace and name (the scrape pool is
// podMonitor/default/<name>/0).
func agentJob(name string) string { return "default/" + name }

// testAgentTakeover is the node acceptance of issue 39's StatefulSet mode:
// prometheus-operator runs a PrometheusAgent of two replicas on persistent
// volumes, remote-writing what it scrapes of the receiver to the receiver;
// annotated, the controller takes it over in place (the same claims,
// ConfigApplied True); the annotation removed, the operator takes it back.
// Through both rolls the receiver's series of the scraped target, the two
// replicas together, has no gap longer than a scrape interval plus the
// remote write flush. Then an agent in DaemonSet mode, on the same
// receiver (testDaemonSetAgent).
func (cl *cluster) testAgentTakeover(t *testing.T) {
	const name = "agent"
	ctx := t.Context()
	writeURL := cl.receiver(t)
	cl.operatorVolumes(t, 2, func(i int) string { return agentClaimName(name, i) }, "prometheus-db")
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"agent": name}}
	pm := &monitoringv1.PodMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: selector.MatchLabels},
		Spec: monitoringv1.PodMonitorSpec{
			Selector:            metav1.LabelSelector{MatchLabels: map[string]string{"app": receiverPod}},
			PodMetricsEndpoints: []monitoringv1.PodMetricsEndpoint{{Port: ptr.To("web")}},
		},
	}
	agent := &monitoringv1alpha1.PrometheusAgent{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       monitoringv1alpha1.PrometheusAgentSpec{CommonPrometheusFields: agentFields(selector, writeURL)},
	}
	agent.Spec.Replicas = ptr.To[int32](2)
	agent.Spec.Storage = &monitoringv1.StorageSpec{VolumeClaimTemplate: monitoringv1.EmbeddedPersistentVolumeClaim{
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(operatorStorageClass),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi"),
			}},
		},
	}}
	for _, obj := range []client.Object{pm, agent} {
		require.NoError(t, cl.c.Create(ctx, obj), "create %T %s", obj, name)
	}
	pods := cl.waitReplicas(t, 2, func(i int) string { return agentPod(name, i) })
	claims := cl.claimUIDs(t, 2, func(i int) string { return agentClaimName(name, i) })
	eventually(t, 2*time.Minute, "the agents' samples in the receiver", func() error {
		return cl.receiverHasReplicas(t, agentJob(name), pods)
	})
	start := time.Now()

	cl.annotateAgent(t, name, takeoverID)
	t.Run("the agent taken over: its pods roll onto the same claims", func(t *testing.T) {
		cl.waitPodsRunningOurs(t, name, pods, true)
		require.Equal(t, claims, cl.claimUIDs(t, 2, func(i int) string { return agentClaimName(name, i) }), "the same PVCs")
		eventually(t, 2*time.Minute, "ConfigApplied True", func() error {
			return cl.agentCondition(t, name, "ConfigApplied", monitoringv1.ConditionTrue)
		})
	})
	cl.annotateAgent(t, name, "")
	t.Run("the agent handed back: the operator's pods on the same claims", func(t *testing.T) {
		cl.waitPodsRunningOurs(t, name, pods, false)
		require.Equal(t, claims, cl.claimUIDs(t, 2, func(i int) string { return agentClaimName(name, i) }), "the same PVCs")
	})
	t.Run("no gap in the receiver's series", func(t *testing.T) {
		// Samples a flush after the last roll.
		time.Sleep(agentScrape + 2*agentFlush)
		gap, at := cl.receiverLongestGap(t, agentJob(name), start)
		t.Logf("longest gap in the receiver's up samples across the takeover and the hand-back: %v at %s", gap, at.Format(time.RFC3339Nano))
		require.LessOrEqual(t, gap, agentScrape+agentFlush, "the longest gap, at %s", at.Format(time.RFC3339Nano))
	})
	t.Run("an agent per node (DaemonSet mode)", func(t *testing.T) { cl.testDaemonSetAgent(t, writeURL) })
}

// agentFields are the fields of the test's agents: our Prometheus image,
// the PodMonitors selector selects, a scrape every agentScrape, a remote
// write to writeURL flushed every agentFlush, run as operatorUID.
func agentFields(selector *metav1.LabelSelector, writeURL string) monitoringv1.CommonPrometheusFields {
	return monitoringv1.CommonPrometheusFields{
		Image:              ptr.To(operatorPrometheusImage),
		Version:            operatorPrometheusVersion,
		ServiceAccountName: "prometheus",
		PodMonitorSelector: selector,
		ScrapeInterval:     monitoringv1.Duration(agentScrape.String()),
		RemoteWrite: []monitoringv1.RemoteWriteSpec{{
			URL:         monitoringv1.URL(writeURL),
			QueueConfig: &monitoringv1.QueueConfig{BatchSendDeadline: ptr.To(monitoringv1.Duration(agentFlush.String()))},
		}},
		SecurityContext: &corev1.PodSecurityContext{
			RunAsUser: ptr.To[int64](operatorUID), RunAsGroup: ptr.To[int64](operatorGID),
			FSGroup: ptr.To[int64](operatorGID), RunAsNonRoot: ptr.To(true),
		},
	}
}

// receiver runs the Prometheus the agents remote-write to (receiverPod,
// labelled app=receiver, its web port named web) and returns its
// remote write URL.
func (cl *cluster) receiver(t testing.TB) string {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: receiverPod, Labels: map[string]string{"app": receiverPod}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "prometheus", Image: operatorPrometheusImage, ImagePullPolicy: corev1.PullNever,
			// An empty configuration: it scrapes nothing of its own.
			Args:         []string{"--config.file=/dev/null", "--storage.tsdb.path=/data", "--web.enable-remote-write-receiver"},
			Ports:        []corev1.ContainerPort{{Name: "web", ContainerPort: 9090}},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: "/-/ready", Port: intstr.FromString("web"),
			}}, PeriodSeconds: 1},
		}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	require.NoError(t, cl.c.Create(t.Context(), pod))
	var ready *corev1.Pod
	eventually(t, startTimeout, "the receiver ready", func() error {
		var err error
		ready, err = cl.readyPod(t, "default", receiverPod)
		return err
	})
	return "http://" + ready.Status.PodIP + ":9090/api/v1/write"
}

// receiverSamples are the timestamps of the receiver's samples of up for
// job since since, by replica (the prometheus_replica external label).
func (cl *cluster) receiverSamples(t testing.TB, job string, since time.Time) (map[string][]time.Time, error) {
	return cl.seriesSamples(t, receiverPod, fmt.Sprintf("up{job=%q}", job), "prometheus_replica", since)
}

// seriesSamples are the timestamps of the samples of the series selector
// selects in the pod's Prometheus since since, by the value of their
// label by.
func (cl *cluster) seriesSamples(t testing.TB, pod, selector, by string, since time.Time) (map[string][]time.Time, error) {
	var data struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		} `json:"result"`
	}
	window := time.Since(since).Round(time.Second) + time.Second
	q := url.Values{"query": {fmt.Sprintf("%s[%ds]", selector, int(window.Seconds()))}}
	if err := cl.prometheus(t, pod, "/api/v1/query", q, &data); err != nil {
		return nil, err
	}
	out := map[string][]time.Time{}
	for _, r := range data.Result {
		for _, v := range r.Values {
			ts, ok := v[0].(float64)
			if !ok {
				return nil, fmt.Errorf("a sample's timestamp %v", v[0])
			}
			out[r.Metric[by]] = append(out[r.Metric[by]], time.UnixMilli(int64(ts*1000)))
		}
	}
	return out, nil
}

// receiverHasReplicas returns nil once the receiver has samples of job
// from every pod of pods (the prometheus_replica external label).
func (cl *cluster) receiverHasReplicas(t testing.TB, job string, pods []string) error {
	samples, err := cl.receiverSamples(t, job, time.Now().Add(-time.Minute))
	if err != nil {
		return err
	}
	for _, pod := range pods {
		if len(samples[pod]) == 0 {
			return fmt.Errorf("no sample of job %s from %s in the receiver (from %d replicas)", job, pod, len(samples))
		}
	}
	return nil
}

// receiverLongestGap is the longest time between two samples of up for
// job in the receiver since since, the series of every replica merged,
// and when it began.
func (cl *cluster) receiverLongestGap(t testing.TB, job string, since time.Time) (time.Duration, time.Time) {
	t.Helper()
	samples, err := cl.receiverSamples(t, job, since)
	require.NoError(t, err)
	var all []time.Time
	for _, ts := range samples {
		all = append(all, ts...)
	}
	require.NotEmpty(t, all, "samples of %s", job)
	return widestGap(all)
}

// widestGap is the longest time between two successive instants of all
// (sorted here), and when it began.
func widestGap(all []time.Time) (time.Duration, time.Time) {
	slices.SortFunc(all, time.Time.Compare)
	var gap time.Duration
	var at time.Time
	for i := 1; i < len(all); i++ {
		if d := all[i].Sub(all[i-1]); d > gap {
			gap, at = d, all[i-1]
		}
	}
	return gap, at
}

// annotateAgent sets the controller id of the PrometheusAgent name.
func (cl *cluster) annotateAgent(t testing.TB, name, id string) {
	t.Helper()
	var a monitoringv1alpha1.PrometheusAgent
	require.NoError(t, cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: name}, &a))
	patch := client.MergeFrom(a.DeepCopy())
	if a.Annotations == nil {
		a.Annotations = map[string]string{}
	}
	a.Annotations["operator.prometheus.io/controller-id"] = id
	require.NoError(t, cl.c.Patch(t.Context(), &a, patch))
}

// agentCondition returns nil when the PrometheusAgent name has the
// condition typ with status.
func (cl *cluster) agentCondition(t testing.TB, name, typ string, status monitoringv1.ConditionStatus) error {
	var a monitoringv1alpha1.PrometheusAgent
	if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: name}, &a); err != nil {
		return err
	}
	return hasCondition(a.Status.Conditions, typ, status)
}
