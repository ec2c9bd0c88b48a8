package node

// The steps of the Alertmanager tests on the node, shared by the
// takeover's acceptance (TestAlertmanagerTakeoverOnNode, issue 28) and its
// benchmark (BenchmarkAlertmanagerConfigEdit): they drive an Alertmanager
// of two replicas on persistent volumes, check that its replicas gossip
// (which needs the cluster DNS), create and check silences, run a webhook
// receiver that the pods reach, route alerts posted to Alertmanager's API
// to it with an AlertmanagerConfig and wait for the notification.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/internal/testenv/node"
)

const (
	// alertmanagerImage is our image of Alertmanager (`make host-images`,
	// ALERTMANAGER_IMAGE); alertmanagerVersion its version, from which the
	// operator derives Alertmanager's flags.
	alertmanagerImage, alertmanagerVersion = "quay.io/prometheus/alertmanager:" + alertmanagerVersion, "v0.34.0"
	// alertmanagerConfigLabel selects the AlertmanagerConfigs of an
	// Alertmanager: alertmanagerConfigLabel=<its name>.
	alertmanagerConfigLabel = "alertmanager"
	// alertmanagerSubPath is the sub-path of the data volume prometheus-operator
	// mounts at /alertmanager.
	alertmanagerSubPath = "alertmanager-db"
)

// alertmanagerPod is the pod of replica of the Alertmanager name.
func alertmanagerPod(name string, replica int) string {
	return "alertmanager-" + name + "-" + strconv.Itoa(replica)
}

// alertmanagerClaimName is the claim of the data volume of a replica of
// the Alertmanager name: its volumeClaimTemplate (default name
// alertmanager-<name>-db) and the StatefulSet's pod.
func alertmanagerClaimName(name string, replica int) string {
	return "alertmanager-" + name + "-db-" + alertmanagerPod(name, replica)
}

// installAlertmanagerCRDs applies deploy/crds' CRDs of Alertmanager and
// AlertmanagerConfig and waits until they are served: before the
// operator starts, which runs its Alertmanager controller only if they
// are.
func (cl *cluster) installAlertmanagerCRDs(t testing.TB) {
	t.Helper()
	for gv, r := range map[string]string{"monitoring.coreos.com/v1": "alertmanagers", "monitoring.coreos.com/v1alpha1": "alertmanagerconfigs"} {
		cl.applyFile(t, "../../deploy/crds/monitoring.coreos.com_"+r+".yaml")
		eventually(t, time.Minute, gv+"/"+r+" served", func() error {
			list, err := cl.kube.Discovery().ServerResourcesForGroupVersion(gv)
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(list.APIResources, func(a metav1.APIResource) bool { return a.Name == r }) {
				return fmt.Errorf("%s/%s not served", gv, r)
			}
			return nil
		})
	}
}

// operatorAlertmanager creates in default, for prometheus-operator (or the
// controller, by its annotation) to run, an Alertmanager name of replicas
// replicas on our Alertmanager image, selecting the AlertmanagerConfigs
// labelled alertmanagerConfigLabel=name, run as operatorUID:operatorGID,
// with persistent storage: a StorageClass operatorStorageClass and, bound
// in advance to each replica's claim (alertmanagerClaimName), a hostPath
// volume of that class (operatorVolumeName) with the sub-path the operator
// mounts; each of edit changes it before it is created. The pods are not
// waited for: see waitAlertmanager.
func (cl *cluster) operatorAlertmanager(t testing.TB, name string, replicas int, edit ...func(*monitoringv1.Alertmanager)) *monitoringv1.Alertmanager {
	t.Helper()
	ctx := t.Context()
	cl.operatorVolumes(t, replicas, func(i int) string { return alertmanagerClaimName(name, i) }, alertmanagerSubPath)
	am := &monitoringv1.Alertmanager{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: monitoringv1.AlertmanagerSpec{
			Replicas: ptr.To(int32(replicas)),
			Image:    ptr.To(alertmanagerImage),
			Version:  alertmanagerVersion,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser: ptr.To[int64](operatorUID), RunAsGroup: ptr.To[int64](operatorGID),
				FSGroup: ptr.To[int64](operatorGID), RunAsNonRoot: ptr.To(true),
			},
			Storage: &monitoringv1.StorageSpec{VolumeClaimTemplate: monitoringv1.EmbeddedPersistentVolumeClaim{
				Spec: corev1.PersistentVolumeClaimSpec{
					StorageClassName: ptr.To(operatorStorageClass),
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceStorage: resource.MustParse("1Gi"),
					}},
				},
			}},
			AlertmanagerConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{alertmanagerConfigLabel: name}},
		},
	}
	for _, e := range edit {
		e(am)
	}
	require.NoError(t, cl.c.Create(ctx, am), "create Alertmanager %s", name)
	return am
}

// waitAlertmanager waits until the replicas pods of the Alertmanager name
// are ready, and returns their names.
func (cl *cluster) waitAlertmanager(t testing.TB, name string, replicas int) []string {
	t.Helper()
	return cl.waitReplicas(t, replicas, func(i int) string { return alertmanagerPod(name, i) })
}

// alertmanagerClaimUIDs returns the UIDs of the data claims of the
// replicas of the Alertmanager name, by claim name.
func (cl *cluster) alertmanagerClaimUIDs(t testing.TB, name string, replicas int) map[string]types.UID {
	t.Helper()
	return cl.claimUIDs(t, replicas, func(i int) string { return alertmanagerClaimName(name, i) })
}

// alertmanager calls the API of the Alertmanager of the pod of default
// through the API server's proxy: method on path (/api/v2/...) with the
// JSON of body, if not nil, and decodes the JSON answer into out, if not
// nil.
func (cl *cluster) alertmanager(t testing.TB, pod, method, path string, body, out any) error {
	req := cl.kube.CoreV1().RESTClient().Verb(method).AbsPath("/api/v1/namespaces/default/pods/" + pod + ":9093/proxy" + path)
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		req = req.Body(b).SetHeader("Content-Type", "application/json")
	}
	b, err := req.DoRaw(t.Context())
	if err != nil {
		return fmt.Errorf("%s %s of %s: %w: %s", method, path, pod, err, b)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s of %s: %w: %s", method, path, pod, err, b)
	}
	return nil
}

// alertmanagerStatus is what the tests read of Alertmanager's
// /api/v2/status.
type alertmanagerStatus struct {
	Cluster struct {
		Status string `json:"status"`
		Peers  []struct {
			Name    string `json:"name"`
			Address string `json:"address"`
		} `json:"peers"`
	} `json:"cluster"`
	Config struct {
		Original string `json:"original"`
	} `json:"config"`
}

// waitGossip waits until the Alertmanager of every pod of pods has joined
// its cluster and sees every pod of pods as a peer, itself included: the
// operator names the peers <pod>.<governing Service>:9094, which resolve
// through the cluster DNS only.
func (cl *cluster) waitGossip(t testing.TB, pods []string) {
	t.Helper()
	for _, pod := range pods {
		eventually(t, 2*time.Minute, pod+" gossips with "+strconv.Itoa(len(pods))+" peers", func() error {
			var st alertmanagerStatus
			if err := cl.alertmanager(t, pod, http.MethodGet, "/api/v2/status", nil, &st); err != nil {
				return err
			}
			if st.Cluster.Status != "ready" || len(st.Cluster.Peers) != len(pods) {
				return fmt.Errorf("cluster %s with peers %+v", st.Cluster.Status, st.Cluster.Peers)
			}
			return nil
		})
	}
}

// waitConfigHas waits until the configuration the Alertmanager of pod
// runs (/api/v2/status) holds s.
func (cl *cluster) waitConfigHas(t testing.TB, pod, s string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, "configuration of "+pod+" with "+s, func() error {
		var st alertmanagerStatus
		if err := cl.alertmanager(t, pod, http.MethodGet, "/api/v2/status", nil, &st); err != nil {
			return err
		}
		if !strings.Contains(st.Config.Original, s) {
			return fmt.Errorf("no %q in:\n%s", s, st.Config.Original)
		}
		return nil
	})
}

// createSilence creates, through the Alertmanager of pod, a silence of an
// hour of the alerts named alertname, and returns its ID.
func (cl *cluster) createSilence(t testing.TB, pod, alertname string) string {
	t.Helper()
	now := time.Now().UTC()
	silence := map[string]any{
		"matchers":  []map[string]any{{"name": "alertname", "value": alertname, "isRegex": false, "isEqual": true}},
		"startsAt":  now.Format(time.RFC3339),
		"endsAt":    now.Add(time.Hour).Format(time.RFC3339),
		"createdBy": "podreload e2e",
		"comment":   "survives restarts and hand-offs",
	}
	var out struct {
		SilenceID string `json:"silenceID"`
	}
	require.NoError(t, cl.alertmanager(t, pod, http.MethodPost, "/api/v2/silences", silence, &out))
	require.NotEmpty(t, out.SilenceID)
	return out.SilenceID
}

// silenceActive returns nil when the Alertmanager of pod has the silence
// id, active.
func (cl *cluster) silenceActive(t testing.TB, pod, id string) error {
	var s struct {
		ID     string `json:"id"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	}
	if err := cl.alertmanager(t, pod, http.MethodGet, "/api/v2/silence/"+id, nil, &s); err != nil {
		return err
	}
	if s.ID != id || s.Status.State != "active" {
		return fmt.Errorf("silence %s of %s: %+v", id, pod, s)
	}
	return nil
}

// postAlert posts, firing for an hour, an alert with labels to the
// Alertmanager of every pod of pods, as Prometheus sends its alerts to
// every replica.
func (cl *cluster) postAlert(t testing.TB, pods []string, labels map[string]string) {
	t.Helper()
	now := time.Now().UTC()
	alerts := []map[string]any{{
		"labels":   labels,
		"startsAt": now.Format(time.RFC3339),
		"endsAt":   now.Add(time.Hour).Format(time.RFC3339),
	}}
	for _, pod := range pods {
		require.NoError(t, cl.alertmanager(t, pod, http.MethodPost, "/api/v2/alerts", alerts, nil))
	}
}

// alertSilencedBy returns nil when the Alertmanager of pod has the alert
// named alertname suppressed by the silence id.
func (cl *cluster) alertSilencedBy(t testing.TB, pod, alertname, id string) error {
	var alerts []struct {
		Labels map[string]string `json:"labels"`
		Status struct {
			State      string   `json:"state"`
			SilencedBy []string `json:"silencedBy"`
		} `json:"status"`
	}
	if err := cl.alertmanager(t, pod, http.MethodGet, "/api/v2/alerts", nil, &alerts); err != nil {
		return err
	}
	for _, a := range alerts {
		if a.Labels["alertname"] != alertname {
			continue
		}
		if a.Status.State != "suppressed" || !slices.Contains(a.Status.SilencedBy, id) {
			return fmt.Errorf("alert %s in %s is %s, silenced by %v, want suppressed by %s", alertname, pod, a.Status.State, a.Status.SilencedBy, id)
		}
		return nil
	}
	return fmt.Errorf("no alert %s in %s", alertname, pod)
}

// alertmanagerConfig creates in default an AlertmanagerConfig name for
// the Alertmanager am (its label alertmanagerConfigLabel) routing the
// alerts named alertname to a webhook receiver at url, at once (group
// wait of a second), and again every 5 s while they fire: the next
// notification after an edit shows where the receiver now points.
func (cl *cluster) alertmanagerConfig(t testing.TB, name, am, alertname, url string) *monitoringv1alpha1.AlertmanagerConfig {
	t.Helper()
	amc := &monitoringv1alpha1.AlertmanagerConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{alertmanagerConfigLabel: am}},
		Spec: monitoringv1alpha1.AlertmanagerConfigSpec{
			Route: &monitoringv1alpha1.Route{
				Receiver:       "webhook",
				Matchers:       []monitoringv1alpha1.Matcher{{Name: "alertname", Value: alertname, MatchType: monitoringv1alpha1.MatchEqual}},
				GroupWait:      ptr.To(monitoringv1.NonEmptyDuration("1s")),
				GroupInterval:  ptr.To(monitoringv1.NonEmptyDuration("1s")),
				RepeatInterval: ptr.To(monitoringv1.NonEmptyDuration("5s")),
			},
			Receivers: []monitoringv1alpha1.Receiver{{
				Name:           "webhook",
				WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{URL: ptr.To(url)}},
			}},
		},
	}
	require.NoError(t, cl.c.Create(t.Context(), amc), "create AlertmanagerConfig %s", name)
	return amc
}

// webhookReceiver is a webhook receiver of Alertmanager run by the test on
// this machine (node.HostIP), reached by the pods through a Service of its
// own, without selector: its URL names it by the cluster DNS.
type webhookReceiver struct {
	// URL is what an Alertmanager is configured with.
	URL string

	mu       sync.Mutex
	received []webhookMessage
}

// webhookMessage is what the receiver reads of a notification, and when
// it received it.
type webhookMessage struct {
	at       time.Time
	Receiver string `json:"receiver"`
	Status   string `json:"status"`
	Alerts   []struct {
		Status string            `json:"status"`
		Labels map[string]string `json:"labels"`
	} `json:"alerts"`
}

// webhookReceiver starts a webhook receiver and creates its Service name
// in default; both go with the test.
func (cl *cluster) webhookReceiver(t testing.TB, name string) *webhookReceiver {
	t.Helper()
	w := &webhookReceiver{URL: "http://" + name + ".default.svc." + node.ClusterDomain + "/"}
	ln, err := net.Listen("tcp", net.JoinHostPort(node.HostIP, "0"))
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		m := webhookMessage{at: time.Now()}
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		w.mu.Lock()
		w.received = append(w.received, m)
		w.mu.Unlock()
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	port := int32(ln.Addr().(*net.TCPAddr).Port)

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{
			discoveryv1.LabelServiceName: name,
			discoveryv1.LabelManagedBy:   "podreload-e2e",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{node.HostIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(port)}},
	}
	for _, obj := range []client.Object{svc, slice} {
		require.NoError(t, cl.c.Create(t.Context(), obj), "create %T %s", obj, name)
	}
	return w
}

// lastAt returns when the receiver received its last notification.
func (w *webhookReceiver) lastAt() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var last time.Time
	for _, m := range w.received {
		if m.at.After(last) {
			last = m.at
		}
	}
	return last
}

// waitNotification waits until the receiver has been notified, after
// since, of the alert named alertname, firing, and returns the
// notification.
func (w *webhookReceiver) waitNotification(t testing.TB, alertname string, since time.Time, timeout time.Duration) webhookMessage {
	t.Helper()
	var found webhookMessage
	eventually(t, timeout, "a notification of "+alertname+" at "+w.URL, func() error {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, m := range w.received {
			if m.at.Before(since) {
				continue
			}
			for _, a := range m.Alerts {
				if a.Labels["alertname"] == alertname && a.Status == "firing" {
					found = m
					return nil
				}
			}
		}
		return fmt.Errorf("%d notifications, none of %s since %s", len(w.received), alertname, since.Format(time.RFC3339Nano))
	})
	return found
}

// silenceOnDisk returns nil when the Alertmanager of the replica of name
// has written the silence id into the snapshot of its silences on its
// volume (it does at its shutdown, and every 15 minutes).
func (cl *cluster) silenceOnDisk(name string, replica int, id string) error {
	p := filepath.Join(cl.node.HostPathDir(operatorVolumeName(alertmanagerClaimName(name, replica))), alertmanagerSubPath, "silences")
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if !bytes.Contains(b, []byte(id)) {
		return fmt.Errorf("no silence %s in %s (%d bytes)", id, p, len(b))
	}
	return nil
}
