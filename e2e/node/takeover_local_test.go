package node

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/podreload/podreload/internal/testenv/toolbin"
)

const (
	// localName is TestTakeoverOnNode's Prometheus on 127.0.0.1
	// (listenLocal) behind a proxy, discovering its targets through
	// EndpointSlices; localService the Service of its proxy, which its
	// ServiceMonitor scrapes (job localService).
	localName, localService = "local", "local-proxy"
	// proxyImage is the image of internal/testenv/node/proxy (`make
	// host-images`), proxyPort the port the proxy serves on, in front of
	// Prometheus' 127.0.0.1:9090.
	proxyImage, proxyPort = "podreload.dev/proxy:1", 9091
	// localUp is the query of a sample of localPrometheus' scrape of
	// itself through its proxy.
	localUp = `up{job="` + localService + `"} == 1`
)

// proxyImageArchive is the archive of proxyImage.
func proxyImageArchive(t testing.TB) string {
	t.Helper()
	path, err := toolbin.Path(filepath.Join("images", "proxy-"+runtime.GOARCH+".tar"))
	require.NoError(t, err, "`make bin/images/proxy-%s.tar` builds it", runtime.GOARCH)
	return path
}

// localPrometheus creates in default, for the operator to run, the
// Prometheus localName of one replica as operatorPrometheus does, with
// spec.listenLocal, spec.serviceDiscoveryRole EndpointSlice and, in
// kube-rbac-proxy's place, a container of proxyImage serving Prometheus
// on proxyPort, its readiness Prometheus' own through the proxy.
// Prometheus' probes are commands that succeed: the operator's, for
// listenLocal, run curl or wget through sh in the Prometheus container,
// which the upstream image (busybox) has and ours has not. Its
// ServiceMonitor scrapes Prometheus through the proxy, selecting a Service
// localService of the proxy's port.
func (cl *cluster) localPrometheus(t testing.TB) {
	t.Helper()
	labels := map[string]string{"podreload.dev/e2e": localService}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: localService, Labels: labels},
		Spec: corev1.ServiceSpec{
			// The operator's labels of the pods of the Prometheus, kept
			// by the takeover.
			Selector: map[string]string{"app.kubernetes.io/name": "prometheus", "app.kubernetes.io/instance": localName},
			Ports:    []corev1.ServicePort{{Name: "proxy", Port: proxyPort, TargetPort: intstr.FromString("proxy")}},
		},
	}
	require.NoError(t, cl.c.Create(t.Context(), svc))
	succeeds := func() *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/prometheus", "--version"}}}}
	}
	cl.operatorPrometheus(t, localName, 1, func(p *monitoringv1.Prometheus, sm *monitoringv1.ServiceMonitor) {
		p.Spec.ListenLocal = true
		p.Spec.ServiceDiscoveryRole = ptr.To(monitoringv1.EndpointSliceRole)
		p.Spec.Containers = []corev1.Container{
			{Name: "prometheus", StartupProbe: succeeds(), ReadinessProbe: succeeds(), LivenessProbe: succeeds()},
			{
				Name:  "proxy",
				Image: proxyImage,
				Args:  []string{"--listen-address=:" + strconv.Itoa(proxyPort), "--upstream=http://127.0.0.1:9090"},
				Ports: []corev1.ContainerPort{{Name: "proxy", ContainerPort: proxyPort, Protocol: corev1.ProtocolTCP}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/-/ready", Port: intstr.FromString("proxy")}},
					PeriodSeconds: 5,
				},
			},
		}
		sm.Spec.Selector = metav1.LabelSelector{MatchLabels: labels}
		sm.Spec.Endpoints = []monitoringv1.Endpoint{{Port: "proxy"}}
	})
}

// localState is what the takeover of localPrometheus must keep: its
// pod and the UIDs of its claims.
type localState struct {
	pod    string
	claims map[string]types.UID
}

// waitLocalPrometheus waits until localPrometheus' pod is ready and has
// scraped itself through its proxy (localUp), and returns its state.
func (cl *cluster) waitLocalPrometheus(t testing.TB) localState {
	t.Helper()
	pod := cl.waitOperatorPrometheus(t, localName, 1)[0]
	eventually(t, 2*time.Minute, localUp+" in "+pod, func() error { return cl.hasSeries(t, proxied(pod), localUp) })
	return localState{pod: pod, claims: cl.operatorClaimUIDs(t, localName, 1)}
}

// proxied is pod's Prometheus reached through its proxy (cl.prometheus).
func proxied(pod string) string { return pod + ":" + strconv.Itoa(proxyPort) }

// checkLocal waits until the pod of localPrometheus is ready and runs the
// controller's sidecar (ours) or the operator's, its StatefulSet rolled
// out, then checks that the pod keeps the claims of st, runs the
// proxy, serves Prometheus on 127.0.0.1 only but through the proxy, with
// a sample at each instant of at, and that Prometheus discovers its
// target through EndpointSlices and scrapes it.
func (cl *cluster) checkLocal(t *testing.T, st localState, ours bool, at ...time.Time) {
	cl.waitPodsRunningOurs(t, localName, []string{st.pod}, ours)
	eventually(t, 5*time.Minute, "StatefulSet prometheus-"+localName+" rolled out", func() error {
		return cl.rolledOut(t, "prometheus-"+localName, 1)
	})
	cl.waitPodsRunningOurs(t, localName, []string{st.pod}, ours)
	require.Equal(t, st.claims, cl.operatorClaimUIDs(t, localName, 1), "the same PVC")

	pod, err := cl.kube.CoreV1().Pods("default").Get(t.Context(), st.pod, metav1.GetOptions{})
	require.NoError(t, err)
	i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == "proxy" })
	require.GreaterOrEqual(t, i, 0, "no proxy container in %s", st.pod)
	require.Equal(t, proxyImage, pod.Spec.Containers[i].Image)
	i = slices.IndexFunc(pod.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool { return s.Name == "proxy" })
	require.GreaterOrEqual(t, i, 0, "no status of the proxy container in %s", st.pod)
	require.NotNil(t, pod.Status.ContainerStatuses[i].State.Running, "the proxy container: %+v", pod.Status.ContainerStatuses[i].State)
	require.True(t, pod.Status.ContainerStatuses[i].Ready, "the proxy container ready")

	// listenLocal: nothing on the pod's address but the proxy.
	err = cl.prometheus(t, st.pod+":9090", "/api/v1/status/buildinfo", nil, &struct{}{})
	require.ErrorContains(t, err, "connection refused", "Prometheus on the pod's address, port 9090")
	require.NoError(t, cl.prometheus(t, proxied(st.pod), "/api/v1/status/buildinfo", nil, &struct{}{}), "Prometheus through the proxy")
	for _, instant := range at {
		require.NoError(t, cl.seriesAt(t, proxied(st.pod), localUp, instant), "%s: a sample of %s", st.pod, instant.Format(time.RFC3339))
	}

	job := operatorScrapeJob(localName)
	roles, err := cl.scrapeRoles(t, proxied(st.pod), job)
	require.NoError(t, err)
	require.Equal(t, []string{"endpointslice"}, roles, "the kubernetes_sd_configs roles of %s", job)
	eventually(t, time.Minute, "target of "+job+" up in "+st.pod, func() error { return cl.targetUp(t, proxied(st.pod), job) })
}

// deleteLocalPrometheus deletes the objects of localPrometheus and waits
// until its pod st.pod is gone.
func (cl *cluster) deleteLocalPrometheus(t testing.TB, st localState) {
	t.Helper()
	cl.deleteOperatorPrometheus(t, localName, []string{st.pod}, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: localService}})
}

// deleteOperatorPrometheus deletes the Prometheus name of default, the
// ServiceMonitor and PrometheusRule operatorPrometheus made for it, and
// extra, and waits until its pods are gone.
func (cl *cluster) deleteOperatorPrometheus(t testing.TB, name string, pods []string, extra ...client.Object) {
	t.Helper()
	meta := metav1.ObjectMeta{Namespace: "default", Name: name}
	for _, obj := range append([]client.Object{
		&monitoringv1.Prometheus{ObjectMeta: meta}, &monitoringv1.ServiceMonitor{ObjectMeta: meta}, &monitoringv1.PrometheusRule{ObjectMeta: meta},
	}, extra...) {
		require.NoError(t, cl.c.Delete(t.Context(), obj), "delete %T", obj)
	}
	for _, pod := range pods {
		eventually(t, 2*time.Minute, "pod "+pod+" gone", func() error {
			err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: pod}, &corev1.Pod{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			return errors.New("the pod is still there")
		})
	}
}

// rolledOut returns nil once the StatefulSet sts of default has replicas
// ready replicas, all of its current revision.
func (cl *cluster) rolledOut(t testing.TB, sts string, replicas int32) error {
	var s appsv1.StatefulSet
	if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: sts}, &s); err != nil {
		return err
	}
	if s.Status.ObservedGeneration != s.Generation || s.Status.UpdateRevision != s.Status.CurrentRevision ||
		s.Status.UpdatedReplicas != replicas || s.Status.ReadyReplicas != replicas {
		return fmt.Errorf("rolling out: %+v", s.Status)
	}
	return nil
}

// scrapeRoles returns the roles of the kubernetes_sd_configs of the scrape
// job of the configuration the pod's Prometheus runs.
func (cl *cluster) scrapeRoles(t testing.TB, pod, job string) ([]string, error) {
	var data struct {
		YAML string `json:"yaml"`
	}
	if err := cl.prometheus(t, pod, "/api/v1/status/config", nil, &data); err != nil {
		return nil, err
	}
	var cfg struct {
		ScrapeConfigs []struct {
			JobName    string `json:"job_name"`
			Kubernetes []struct {
				Role string `json:"role"`
			} `json:"kubernetes_sd_configs"`
		} `json:"scrape_configs"`
	}
	if err := sigsyaml.Unmarshal([]byte(data.YAML), &cfg); err != nil {
		return nil, fmt.Errorf("parse the configuration: %w", err)
	}
	for _, sc := range cfg.ScrapeConfigs {
		if sc.JobName == job {
			var roles []string
			for _, k := range sc.Kubernetes {
				roles = append(roles, k.Role)
			}
			return roles, nil
		}
	}
	return nil, errors.New("no scrape job " + job)
}
