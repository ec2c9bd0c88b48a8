package node

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/internal/testenv/node"
)

// TestAlertmanagerTakeoverOnNode is the acceptance of the Alertmanager
// takeover (issue 28). prometheus-operator's operator runs an Alertmanager
// of two replicas on persistent volumes from our image: the replicas
// gossip (their peers are named by the cluster DNS) and a silence created
// through one is in force on both. Annotated, the controller takes it over
// in place (the same claims, the silence in force on both replicas, our
// sidecar, ConfigApplied True); the example's PrometheusServer fires a real
// alert to the Alertmanager's Service, which an AlertmanagerConfig routes to
// a webhook receiver the test runs; the receiver edited, the next
// notification goes to the new one; a broken AlertmanagerConfig is left out
// with its Event while the other route keeps delivering. The annotation
// removed, the operator takes it back: the same claims, the silence still
// in force on both, our Role gone, the operator never denied.
//
// Beside it, taken over and handed back at the same times (issue 38): an
// Alertmanager of 3 replicas at v0.25.0 (older than v0.30, so rendered
// with its version's flags), with a container of its own and mutual TLS
// between the peers (spec.clusterTLS). Its cluster stays formed both ways:
// the silences made before the takeover on every replica, 3 peers over the
// TLS transport, the same claims, the container there.
func TestAlertmanagerTakeoverOnNode(t *testing.T) {
	cl := startCluster(t, node.Options{})
	cl.installAlertmanagerCRDs(t)
	op := cl.startOperator(t, "")
	const (
		name     = "handed"
		firing   = "PodreloadE2EFiring"
		silenced = "PodreloadE2ESilenced"
		// receiver is the operator's (and amconfig's) name of route-a's
		// receiver. Its URL is a secret, which the status does not show.
		receiver = "default/route-a/webhook"
		// older is the Alertmanager at v0.25.0 (createOlderAlertmanager).
		older = "older"
	)
	hookA, hookB := cl.webhookReceiver(t, "webhook-a"), cl.webhookReceiver(t, "webhook-b")
	// Before the Alertmanager: its first configuration routes to the
	// receiver (a change would take the kubelet's projection, a minute).
	cl.alertmanagerConfig(t, "route-a", name, firing, hookA.URL)
	cl.operatorAlertmanager(t, name, 2)
	old := cl.createOlderAlertmanager(t, older)
	cl.alertmanagerImagePod(t, "alertmanager-image")
	// While the operator's pods start: the controller and the example's
	// Prometheus, which fires the alert once the Alertmanager is ours.
	cl.deployController(t)
	cl.deployExample(t)
	pods := cl.waitAlertmanager(t, name, 2)
	claims := cl.alertmanagerClaimUIDs(t, name, 2)
	cl.waitOlder(t, old)

	t.Run("our image runs with its own defaults", func(t *testing.T) {
		eventually(t, startTimeout, "pod alertmanager-image ready", func() error {
			_, err := cl.readyPod(t, "default", "alertmanager-image")
			return err
		})
		cl.waitConfigHas(t, "alertmanager-image", "receiver: default", 10*time.Second)
	})

	t.Run("the operator's replicas gossip", func(t *testing.T) { cl.waitGossip(t, pods) })

	var silence string
	t.Run("a silence created through one replica is in force on both", func(t *testing.T) {
		silence = cl.createSilence(t, pods[0], silenced)
		cl.silencedOnAll(t, pods, silenced, silence)
	})
	require.NotEmpty(t, silence)

	t.Run("v0.25.0: the operator's 3 replicas gossip over TLS, the silences made through one on all", func(t *testing.T) {
		cl.makeOlderSilences(t, old)
		cl.checkOlder(t, old, false, false)
	})
	require.Len(t, old.silences, 2)

	taken := time.Now()
	cl.annotateAlertmanager(t, name, takeoverID)
	cl.annotateAlertmanager(t, older, takeoverID)
	t.Run("taken over: the pods roll onto the same claims, the silence in force", func(t *testing.T) {
		cl.waitPodsRunningOurs(t, name, pods, true)
		t.Logf("annotation to both replicas ready on our sidecar: %v", time.Since(taken).Round(time.Second))
		require.Equal(t, claims, cl.alertmanagerClaimUIDs(t, name, 2), "the same PVCs")
		for _, pod := range pods {
			p, err := cl.readyPod(t, "default", pod)
			require.NoError(t, err)
			require.True(t, slices.ContainsFunc(p.Spec.Containers, func(c corev1.Container) bool {
				return c.Name == "config-reloader" && strings.HasPrefix(c.Image, "ghcr.io/podreload/podreload:")
			}), "%s runs podreload's config-reloader: %+v", pod, p.Spec.Containers)
		}
		for i, pod := range pods {
			require.NoError(t, cl.silenceOnDisk(name, i, silence), "%s wrote the silence to its volume when it stopped", pod)
		}
		cl.waitGossip(t, pods)
		cl.silencedOnAll(t, pods, silenced, silence)
	})
	t.Run("ConfigApplied", func(t *testing.T) {
		eventually(t, 2*time.Minute, "ConfigApplied True", func() error {
			return cl.alertmanagerCondition(t, name, "ConfigApplied", monitoringv1.ConditionTrue)
		})
	})
	t.Run("v0.25.0 taken over: the same claims, the container and TLS kept, the cluster formed with the silences", func(t *testing.T) {
		cl.waitPodsRunningOurs(t, older, old.pods, true)
		t.Logf("annotation to the 3 replicas of v0.25.0 ready on our sidecar: %v", time.Since(taken).Round(time.Second))
		cl.checkOlder(t, old, true, true)
		for _, c := range []string{"Reconciled", "ConfigApplied", "Available"} {
			eventually(t, 2*time.Minute, c+" True", func() error {
				return cl.alertmanagerCondition(t, older, c, monitoringv1.ConditionTrue)
			})
		}
	})

	t.Run("the example's Prometheus fires an alert that reaches the webhook receiver", func(t *testing.T) {
		for _, pod := range pods {
			cl.waitConfigHas(t, pod, "- receiver: "+receiver+"\n", 30*time.Second)
		}
		sent := time.Now()
		cl.fireAlert(t, firing)
		m := hookA.waitNotification(t, firing, sent, 2*time.Minute)
		require.Equal(t, receiver, m.Receiver)
		// The example's external label: the alert is Prometheus'.
		require.Equal(t, "demo", m.Alerts[0].Labels["cluster"], "the alert %+v", m.Alerts[0])
		t.Logf("alert rule added to notification received: %v", time.Since(sent).Round(time.Millisecond))
	})

	var movedAt time.Time
	t.Run("the receiver edited, the next notification goes to the new one", func(t *testing.T) {
		edited := time.Now()
		cl.editWebhookURL(t, "route-a", hookB.URL)
		m := hookB.waitNotification(t, firing, edited, time.Minute)
		require.Equal(t, receiver, m.Receiver)
		// From when both replicas run the new configuration (and a
		// notification already sent then has arrived), none reaches
		// the old receiver: checked below, after more notifications.
		for _, pod := range pods {
			eventually(t, 30*time.Second, pod+" reloaded after the edit", func() error {
				at, err := cl.alertmanagerLastReload(t, pod)
				if err != nil {
					return err
				}
				if at.Before(edited) {
					return fmt.Errorf("last reload at %s, before the edit", at.Format(time.RFC3339Nano))
				}
				movedAt = latest(movedAt, at)
				return nil
			})
		}
		movedAt = movedAt.Add(time.Second)
		t.Logf("receiver edit to a notification at the new one: %v", m.at.Sub(edited).Round(time.Millisecond))
	})

	t.Run("a broken AlertmanagerConfig is left out, the other route keeps delivering (to the new receiver only)", func(t *testing.T) {
		cl.alertmanagerConfig(t, "broken", name, "PodreloadE2EBroken", "not a url")
		var note string
		eventually(t, time.Minute, "a Warning Event LeftOut on broken", func() error {
			events, err := cl.kube.EventsV1().Events("default").List(t.Context(), metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, e := range events.Items {
				if e.Type == corev1.EventTypeWarning && e.Reason == "LeftOut" && e.Regarding.Name == "broken" {
					note = e.Note
					return nil
				}
			}
			return errors.New("no LeftOut Event")
		})
		t.Logf("the Event: %s", note)
		require.Contains(t, note, "Alertmanager default/"+name, "the Event names the Alertmanager")
		require.Contains(t, note, "invalid URL", "the Event gives the parser's message")
		after := time.Now()
		m := hookB.waitNotification(t, firing, after, time.Minute)
		require.Equal(t, receiver, m.Receiver)
		require.False(t, movedAt.IsZero())
		require.True(t, hookA.lastAt().Before(movedAt), "the old receiver notified at %s, after both replicas reloaded (%s)", hookA.lastAt(), movedAt)
		for _, pod := range pods {
			var st alertmanagerStatus
			require.NoError(t, cl.alertmanager(t, pod, "GET", "/api/v2/status", nil, &st))
			require.Contains(t, st.Config.Original, "- receiver: "+receiver+"\n")
			require.NotContains(t, st.Config.Original, "default/broken/", "%s runs the broken AlertmanagerConfig", pod)
		}
		require.NoError(t, cl.alertmanagerCondition(t, name, "ConfigApplied", monitoringv1.ConditionTrue))
	})

	back := time.Now()
	cl.annotateAlertmanager(t, name, "")
	cl.annotateAlertmanager(t, older, "")
	t.Run("handed back: the operator's pods on the same claims, the silence in force", func(t *testing.T) {
		cl.waitPodsRunningOurs(t, name, pods, false)
		t.Logf("annotation removed to both replicas ready on the operator's sidecar: %v", time.Since(back).Round(time.Second))
		require.Equal(t, claims, cl.alertmanagerClaimUIDs(t, name, 2), "the same PVCs")
		cl.waitGossip(t, pods)
		cl.silencedOnAll(t, pods, silenced, silence)
		eventually(t, time.Minute, "the reloaders' Role deleted", func() error {
			err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "alertmanager-" + name + "-podreload"}, &rbacv1.Role{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			return errors.New("the Role is still there")
		})
	})

	t.Run("v0.25.0 handed back: the operator's pods on the same claims, the container and TLS kept, the cluster formed with the silences", func(t *testing.T) {
		cl.waitPodsRunningOurs(t, older, old.pods, false)
		t.Logf("annotation removed to the 3 replicas of v0.25.0 ready on the operator's sidecar: %v", time.Since(back).Round(time.Second))
		cl.checkOlder(t, old, false, true)
		for _, c := range []string{"Reconciled", "Available"} {
			eventually(t, 2*time.Minute, c+" True", func() error {
				return cl.alertmanagerCondition(t, older, c, monitoringv1.ConditionTrue)
			})
		}
	})

	t.Run("the operator was never denied", func(t *testing.T) {
		logs := op.Logs()
		require.NotContains(t, logs, "missing permission", "internal/testenv/operator/rbac misses a permission")
		require.NotContains(t, strings.ToLower(logs), "forbidden", "an RBAC denial: internal/testenv/operator/rbac misses a permission")
	})
}

// silencedOnAll posts the alert alertname to the Alertmanager of every
// pod of pods and waits until each has the silence id active and the
// alert suppressed by it. (Alertmanager keeps no alerts across restarts.)
func (cl *cluster) silencedOnAll(t testing.TB, pods []string, alertname, id string) {
	t.Helper()
	cl.postAlert(t, pods, map[string]string{"alertname": alertname, "namespace": "default"})
	for _, pod := range pods {
		eventually(t, 30*time.Second, "silence active in "+pod, func() error { return cl.silenceActive(t, pod, id) })
		eventually(t, 30*time.Second, alertname+" suppressed in "+pod, func() error { return cl.alertSilencedBy(t, pod, alertname, id) })
	}
}

// annotateAlertmanager sets the controller id of the Alertmanager name.
func (cl *cluster) annotateAlertmanager(t testing.TB, name, id string) {
	t.Helper()
	var am monitoringv1.Alertmanager
	require.NoError(t, cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: name}, &am))
	patch := client.MergeFrom(am.DeepCopy())
	if am.Annotations == nil {
		am.Annotations = map[string]string{}
	}
	am.Annotations["operator.prometheus.io/controller-id"] = id
	require.NoError(t, cl.c.Patch(t.Context(), &am, patch))
}

// alertmanagerCondition returns nil when the Alertmanager name has the
// condition typ with status.
func (cl *cluster) alertmanagerCondition(t testing.TB, name, typ string, status monitoringv1.ConditionStatus) error {
	var am monitoringv1.Alertmanager
	if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: name}, &am); err != nil {
		return err
	}
	return hasCondition(am.Status.Conditions, typ, status)
}

// fireAlert makes the example's Prometheus send its alerts to the
// Alertmanagers of the Service alertmanager-operated and fire the alert
// alertname (vector(1), in namespace default, which the
// AlertmanagerConfigs' namespace matcher wants), evaluated every second.
func (cl *cluster) fireAlert(t testing.TB, alertname string) {
	t.Helper()
	var ps v1alpha1.PrometheusServer
	require.NoError(t, cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: server}, &ps))
	patch := client.MergeFrom(ps.DeepCopy())
	ps.Spec.EvaluationInterval = "1s"
	ps.Spec.Alerting = &v1alpha1.AlertingSpec{Alertmanagers: []v1alpha1.AlertmanagerEndpoint{{
		Name: "alertmanager-operated", Port: intstr.FromString("web"), APIVersion: "v2",
	}}}
	require.NoError(t, cl.c.Patch(t.Context(), &ps, patch))

	var pr monitoringv1.PrometheusRule
	require.NoError(t, cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: ruleName}, &pr))
	rpatch := client.MergeFrom(pr.DeepCopy())
	pr.Spec.Groups[0].Rules = append(pr.Spec.Groups[0].Rules, monitoringv1.Rule{
		Alert: alertname, Expr: intstr.FromString("vector(1)"), Labels: map[string]string{"namespace": "default"},
	})
	require.NoError(t, cl.c.Patch(t.Context(), &pr, rpatch))
}

// editWebhookURL sets the URL of the webhook receiver of the
// AlertmanagerConfig name (alertmanagerConfig's).
func (cl *cluster) editWebhookURL(t testing.TB, name, url string) {
	t.Helper()
	var amc monitoringv1alpha1.AlertmanagerConfig
	require.NoError(t, cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: name}, &amc))
	patch := client.MergeFrom(amc.DeepCopy())
	amc.Spec.Receivers[0].WebhookConfigs[0].URL = ptr.To(url)
	require.NoError(t, cl.c.Patch(t.Context(), &amc, patch))
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

// latest returns the later of a and b.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// alertmanagerLastReload returns when the Alertmanager of pod last
// reloaded its configuration successfully, from its own metric.
func (cl *cluster) alertmanagerLastReload(t testing.TB, pod string) (time.Time, error) {
	return cl.lastReloadMetric(t, pod, 9093, "alertmanager_config_last_reload_success_timestamp_seconds")
}
