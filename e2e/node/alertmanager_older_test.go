package node

// The steps of TestAlertmanagerTakeoverOnNode on its second Alertmanager
// (issue 38): 3 replicas of an Alertmanager older than v0.30, with a
// container of its own and mutual TLS between the peers, taken over and
// handed back with its cluster formed.

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/internal/testenv/node"
	"github.com/podreload/podreload/internal/testenv/selfsigned"
)

const (
	// olderAlertmanagerImage is our image of Alertmanager v0.25.0 (`make
	// host-images`, ALERTMANAGER_V025_IMAGE), olderAlertmanagerVersion its
	// version: older than v0.30, the oldest that builds with our Go.
	olderAlertmanagerImage, olderAlertmanagerVersion = "quay.io/prometheus/alertmanager:" + olderAlertmanagerVersion, "v0.25.0"
	// olderExtraContainer is the Alertmanager's container of its own
	// (spec.containers), olderPeerName the name its peers' certificate
	// is for and the one they verify.
	olderExtraContainer, olderPeerName = "sidecar", "alertmanager-peer"
	// clusterTLSFlag is the flag, with its file, by which the operator and
	// the controller give Alertmanager spec.clusterTLS.
	clusterTLSFlag = "--cluster.tls-config=/etc/alertmanager/cluster_tls_config/cluster-tls-config.yaml"
)

// olderAlertmanager is an Alertmanager of the operator at v0.25.0 of
// olderReplicas replicas with spec.containers and spec.clusterTLS, and
// what the test keeps of it.
type olderAlertmanager struct {
	name string
	// pods are its replicas' pods, claims the UIDs of their claims,
	// silences the IDs of the silences made before the takeover.
	pods     []string
	claims   map[string]types.UID
	silences []string
}

// olderReplicas is the number of replicas of the older Alertmanager.
const olderReplicas = 3

// createOlderAlertmanager creates in default the Secret of a
// certificate that its peers present and trust (olderPeerName) and the
// Alertmanager name (operatorAlertmanager's, without AlertmanagerConfigs)
// of olderReplicas replicas at olderAlertmanagerVersion, running besides
// Alertmanager and its config-reloader a container olderExtraContainer
// (the pause image), its peers in mutual TLS with that certificate. Its
// pods are not waited for.
func (cl *cluster) createOlderAlertmanager(t testing.TB, name string) *olderAlertmanager {
	t.Helper()
	certPEM, keyPEM := selfsigned.PeerCert(t, olderPeerName)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-peer-tls"},
		Data:       map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": certPEM},
	}
	require.NoError(t, cl.c.Create(t.Context(), secret))
	key := func(k string) *corev1.SecretKeySelector {
		return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret.Name}, Key: k}
	}
	cl.operatorAlertmanager(t, name, olderReplicas, func(am *monitoringv1.Alertmanager) {
		am.Spec.Image, am.Spec.Version = ptr.To(olderAlertmanagerImage), olderAlertmanagerVersion
		am.Spec.AlertmanagerConfigSelector = nil
		am.Spec.Containers = []corev1.Container{{Name: olderExtraContainer, Image: node.PauseImage}}
		am.Spec.ClusterTLS = &monitoringv1.ClusterTLSConfig{
			ServerTLS: monitoringv1.WebTLSConfig{
				KeySecret:      *key("tls.key"),
				Cert:           monitoringv1.SecretOrConfigMap{Secret: key("tls.crt")},
				ClientCA:       monitoringv1.SecretOrConfigMap{Secret: key("ca.crt")},
				ClientAuthType: ptr.To(monitoringv1.RequireAndVerifyClientCert),
			},
			ClientTLS: monitoringv1.SafeTLSConfig{
				CA:         monitoringv1.SecretOrConfigMap{Secret: key("ca.crt")},
				Cert:       monitoringv1.SecretOrConfigMap{Secret: key("tls.crt")},
				KeySecret:  key("tls.key"),
				ServerName: ptr.To(olderPeerName),
			},
		}
	})
	return &olderAlertmanager{name: name}
}

// waitOlder waits until the replicas of o run, and keeps their pods and
// the UIDs of their claims.
func (cl *cluster) waitOlder(t testing.TB, o *olderAlertmanager) {
	t.Helper()
	o.pods = cl.waitAlertmanager(t, o.name, olderReplicas)
	o.claims = cl.alertmanagerClaimUIDs(t, o.name, olderReplicas)
}

// makeOlderSilences makes two silences through the first replica of o and
// waits until every replica has them (gossip).
func (cl *cluster) makeOlderSilences(t testing.TB, o *olderAlertmanager) {
	t.Helper()
	for _, alertname := range []string{"PodreloadE2EOlderA", "PodreloadE2EOlderB"} {
		o.silences = append(o.silences, cl.createSilence(t, o.pods[0], alertname))
	}
	cl.olderSilencesActive(t, o)
}

// olderSilencesActive waits until every replica of o has every silence
// of o.silences active.
func (cl *cluster) olderSilencesActive(t testing.TB, o *olderAlertmanager) {
	t.Helper()
	require.Len(t, o.silences, 2)
	for _, pod := range o.pods {
		for _, id := range o.silences {
			eventually(t, 30*time.Second, "silence "+id+" active in "+pod, func() error { return cl.silenceActive(t, pod, id) })
		}
	}
}

// checkOlder checks o once its pods run podreload's sidecar (ours) or the
// operator's: on the same claims, Alertmanager at olderAlertmanagerVersion
// with spec.clusterTLS beside the container of its own, the replicas
// gossiping over the TLS transport with every peer, and every silence
// made before in force on every replica. restarted says the replicas
// restarted since the silences were made: each wrote them on its volume.
func (cl *cluster) checkOlder(t testing.TB, o *olderAlertmanager, ours, restarted bool) {
	t.Helper()
	require.Equal(t, o.claims, cl.alertmanagerClaimUIDs(t, o.name, olderReplicas), "the same PVCs")
	for _, pod := range o.pods {
		p, err := cl.readyPod(t, "default", pod)
		require.NoError(t, err)
		require.NoError(t, olderPodSpec(p, ours), "pod %s", pod)
	}
	if restarted {
		require.NoError(t, cl.olderOnDisk(o), "each replica wrote the silences to its volume when it stopped")
	}
	cl.waitGossip(t, o.pods)
	require.NoError(t, cl.olderStatus(t, o))
	for _, pod := range o.pods {
		eventually(t, time.Minute, pod+" gossips over TLS", func() error { return cl.gossipsOverTLS(t, pod) })
	}
	cl.olderSilencesActive(t, o)
}

// olderPodSpec returns nil when the pod of the older Alertmanager runs
// Alertmanager at olderAlertmanagerVersion with the cluster's TLS
// configuration, the container of its own, and podreload's
// config-reloader (ours) or the operator's.
func olderPodSpec(p *corev1.Pod, ours bool) error {
	find := func(name string) *corev1.Container {
		if i := slices.IndexFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == name }); i >= 0 {
			return &p.Spec.Containers[i]
		}
		return nil
	}
	am, extra, reloader := find("alertmanager"), find(olderExtraContainer), find("config-reloader")
	switch {
	case am == nil || extra == nil || reloader == nil:
		return fmt.Errorf("containers alertmanager, %s and config-reloader wanted: %+v", olderExtraContainer, p.Spec.Containers)
	case am.Image != olderAlertmanagerImage:
		return fmt.Errorf("alertmanager runs %s", am.Image)
	case !slices.Contains(am.Args, clusterTLSFlag):
		return fmt.Errorf("alertmanager's arguments have no %s: %q", clusterTLSFlag, am.Args)
	case extra.Image != node.PauseImage:
		return fmt.Errorf("%s runs %s", olderExtraContainer, extra.Image)
	case ours != strings.HasPrefix(reloader.Image, "ghcr.io/podreload/podreload:"):
		return fmt.Errorf("config-reloader runs %s, podreload's wanted: %v", reloader.Image, ours)
	}
	return nil
}

// gossipsOverTLS returns nil when the Alertmanager of pod has received
// gossip through its TLS transport (the one spec.clusterTLS sets up; a
// plain-text memberlist has no such metric).
func (cl *cluster) gossipsOverTLS(t testing.TB, pod string) error {
	const metric = "alertmanager_tls_transport_packet_bytes_received_total"
	out, err := cl.kube.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/pods/" + pod + ":9093/proxy/metrics").DoRaw(t.Context())
	if err != nil {
		return fmt.Errorf("GET /metrics of %s: %w", pod, err)
	}
	for line := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(line, metric+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return fmt.Errorf("parse %s: %w", line, err)
			}
			if f == 0 {
				return fmt.Errorf("%s is 0 in %s", metric, pod)
			}
			return nil
		}
	}
	return fmt.Errorf("no %s in the /metrics of %s", metric, pod)
}

// olderOnDisk returns nil when every replica of o has written every
// silence of o.silences into the snapshot on its volume (at its
// shutdown).
func (cl *cluster) olderOnDisk(o *olderAlertmanager) error {
	var errs []error
	for i := range o.pods {
		for _, id := range o.silences {
			errs = append(errs, cl.silenceOnDisk(o.name, i, id))
		}
	}
	return errors.Join(errs...)
}

// olderStatus returns nil when the API of the first replica of o reports
// what the takeover must keep: Alertmanager's version and a cluster of
// olderReplicas peers.
func (cl *cluster) olderStatus(t testing.TB, o *olderAlertmanager) error {
	var st struct {
		alertmanagerStatus
		VersionInfo struct {
			Version string `json:"version"`
		} `json:"versionInfo"`
	}
	if err := cl.alertmanager(t, o.pods[0], http.MethodGet, "/api/v2/status", nil, &st); err != nil {
		return err
	}
	if "v"+st.VersionInfo.Version != olderAlertmanagerVersion {
		return fmt.Errorf("%s runs Alertmanager %s", o.pods[0], st.VersionInfo.Version)
	}
	if len(st.Cluster.Peers) != olderReplicas {
		return fmt.Errorf("%s has peers %+v", o.pods[0], st.Cluster.Peers)
	}
	return nil
}
