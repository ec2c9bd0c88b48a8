package node

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podreload/podreload/internal/testenv/node"
)

// TestAlertmanagerOperatorOnNode runs prometheus-operator's operator at
// the pinned version on the node and checks that it runs an Alertmanager
// of two replicas on persistent volumes from our image: the replicas
// gossip (their peers are named by the cluster DNS), a silence created
// through one is in force on both and survives a rolling restart (on the
// same claims, in the snapshot on the volumes), and an alert posted to
// Alertmanager's API is routed by an AlertmanagerConfig to a webhook
// receiver the test runs: what the Alertmanager takeover's acceptance
// (issue 28) starts from.
func TestAlertmanagerOperatorOnNode(t *testing.T) {
	cl := startCluster(t, node.Options{})
	cl.installAlertmanagerCRDs(t)
	op := cl.startOperator(t, "")
	const (
		name     = "operated"
		routed   = "PodreloadE2ERouted"
		silenced = "PodreloadE2ESilenced"
	)
	// Before the Alertmanager: its first configuration routes to the
	// receiver (a change would take the kubelet's projection, a minute).
	hook := cl.webhookReceiver(t, "webhook-a")
	cl.alertmanagerConfig(t, "route-a", name, routed, hook.URL)
	cl.operatorAlertmanager(t, name, 2)
	cl.alertmanagerImagePod(t, "alertmanager-image")
	pods := cl.waitAlertmanager(t, name, 2)
	claims := cl.alertmanagerClaimUIDs(t, name, 2)

	t.Run("our image runs with its own defaults", func(t *testing.T) {
		eventually(t, startTimeout, "pod alertmanager-image ready", func() error {
			_, err := cl.readyPod(t, "default", "alertmanager-image")
			return err
		})
		cl.waitConfigHas(t, "alertmanager-image", "receiver: default", 10*time.Second)
	})

	t.Run("both replicas gossip", func(t *testing.T) { cl.waitGossip(t, pods) })

	var silence string
	t.Run("a silence created through one replica is in force on both", func(t *testing.T) {
		silence = cl.createSilence(t, pods[0], silenced)
		cl.postAlert(t, pods, map[string]string{"alertname": silenced, "namespace": "default"})
		for _, pod := range pods {
			eventually(t, 30*time.Second, "silence active in "+pod, func() error { return cl.silenceActive(t, pod, silence) })
			eventually(t, 30*time.Second, silenced+" suppressed in "+pod, func() error { return cl.alertSilencedBy(t, pod, silenced, silence) })
		}
	})
	require.NotEmpty(t, silence)

	t.Run("an alert routed by an AlertmanagerConfig reaches the webhook receiver", func(t *testing.T) {
		// The operator's name of the AlertmanagerConfig's receiver (its
		// URL is a secret, which the status does not show). In the first
		// configuration unless the operator saw the Alertmanager before
		// the AlertmanagerConfig: then through the kubelet's projection.
		const receiver = "default/route-a/webhook"
		for _, pod := range pods {
			cl.waitConfigHas(t, pod, "- receiver: "+receiver+"\n", projectionTimeout)
		}
		posted := time.Now()
		cl.postAlert(t, pods, map[string]string{"alertname": routed, "namespace": "default"})
		m := hook.waitNotification(t, routed, time.Minute)
		require.Equal(t, receiver, m.Receiver)
		t.Logf("alert posted to notification received: %v", time.Since(posted).Round(time.Millisecond))
	})

	t.Run("a rolling restart keeps the claims and the silence", func(t *testing.T) {
		restarted := time.Now()
		cl.restartAlertmanager(t, name, pods)
		t.Logf("rolling restart of both replicas: %v", time.Since(restarted).Round(time.Second))
		require.Equal(t, claims, cl.alertmanagerClaimUIDs(t, name, 2), "the same PVCs")
		cl.waitGossip(t, pods)
		// The alerts are not kept: post it again.
		cl.postAlert(t, pods, map[string]string{"alertname": silenced, "namespace": "default"})
		for i, pod := range pods {
			require.NoError(t, cl.silenceOnDisk(name, i, silence), "%s wrote the silence to its volume when it stopped", pod)
			eventually(t, 30*time.Second, "silence active in "+pod, func() error { return cl.silenceActive(t, pod, silence) })
			eventually(t, 30*time.Second, silenced+" suppressed in "+pod, func() error { return cl.alertSilencedBy(t, pod, silenced, silence) })
		}
	})

	t.Run("the operator was never denied", func(t *testing.T) {
		logs := op.Logs()
		require.NotContains(t, logs, "missing permission", "internal/testenv/operator/rbac misses a permission")
		require.NotContains(t, strings.ToLower(logs), "forbidden", "an RBAC denial: internal/testenv/operator/rbac misses a permission")
	})
}

// alertmanagerImagePod creates in default a pod name running our
// Alertmanager image with nothing but its image's entrypoint, default
// arguments, user and directories.
func (cl *cluster) alertmanagerImagePod(t testing.TB, name string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "alertmanager",
			Image: alertmanagerImage,
			Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 9093}},
			ReadinessProbe: &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/-/ready", Port: intstr.FromString("web")}},
				PeriodSeconds: 1,
			},
		}}},
	}
	require.NoError(t, cl.c.Create(t.Context(), pod))
}
