package node

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/internal/testenv/node"
)

// TestClusterDNSOnNode checks the node's cluster DNS from a pod: a
// Prometheus (our image) in a StatefulSet discovers, with its DNS service
// discovery (which reads the pod's /etc/resolv.conf and follows its search
// path, as any resolver does), the Service kubernetes.default by its full
// name <svc>.<namespace>.svc.cluster.local at its cluster IP, and its own
// pod by <pod>.<governing Service>, the name Alertmanager's cluster peers
// are given, at the pod's IP.
func TestClusterDNSOnNode(t *testing.T) {
	cl := startCluster(t, node.Options{})
	const name = "dnsprobe"
	pod := name + "-0"
	config := `global: {scrape_interval: 5s}
scrape_configs:
- job_name: service
  dns_sd_configs: [{names: [kubernetes.default.svc.` + node.ClusterDomain + `], type: A, port: 443, refresh_interval: 5s}]
- job_name: statefulset-pod
  dns_sd_configs: [{names: [` + pod + `.` + name + `], type: A, port: 9090, refresh_interval: 5s}]
`
	cl.dnsProbe(t, name, config)
	var p *corev1.Pod
	eventually(t, startTimeout, "pod "+pod+" ready", func() (err error) {
		p, err = cl.readyPod(t, "default", pod)
		return err
	})

	t.Run("the kubelet gives the pod the cluster DNS", func(t *testing.T) {
		pid, err := cl.node.ContainerPID(p.Status.ContainerStatuses[0].ContainerID)
		require.NoError(t, err)
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/root/etc/resolv.conf")
		require.NoError(t, err)
		require.Contains(t, string(b), "nameserver "+node.DNSServiceIP+"\n")
		require.Contains(t, string(b), "search default.svc."+node.ClusterDomain+" svc."+node.ClusterDomain+" "+node.ClusterDomain+"\n")
	})
	kubernetes, err := cl.kube.CoreV1().Services("default").Get(t.Context(), "kubernetes", metav1.GetOptions{})
	require.NoError(t, err)
	for job, want := range map[string]string{
		"service":         kubernetes.Spec.ClusterIP + ":443",
		"statefulset-pod": p.Status.PodIP + ":9090",
	} {
		t.Run("job "+job+" resolves to "+want, func(t *testing.T) {
			eventually(t, time.Minute, "target "+want+" of job "+job, func() error {
				return cl.discovered(t, pod, job, want)
			})
		})
	}
	t.Run("the pod scrapes itself at the address its name resolved to", func(t *testing.T) {
		eventually(t, time.Minute, "target of statefulset-pod up", func() error {
			return cl.targetUp(t, pod, "statefulset-pod")
		})
	})
	t.Run("CoreDNS is never denied", func(t *testing.T) {
		require.NotContains(t, strings.ToLower(cl.node.Logs("coredns", 1000)), "forbidden")
	})
}

// dnsProbe creates in default a headless Service name and a StatefulSet
// name of one replica, governed by it, running our Prometheus image with
// the configuration config.
func (cl *cluster) dnsProbe(t testing.TB, name, config string) {
	t.Helper()
	labels := map[string]string{"app": name}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Data:       map[string]string{"prometheus.yml": config},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  labels,
			Ports:     []corev1.ServicePort{{Name: "web", Port: 9090}},
		},
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: appsv1.StatefulSetSpec{
			ServiceName: name,
			Replicas:    ptr.To[int32](1),
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:  "prometheus",
						Image: operatorPrometheusImage,
						Args:  []string{"--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"},
						Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 9090}},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "config", MountPath: "/etc/prometheus"},
							{Name: "data", MountPath: "/prometheus"},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: name},
						}}},
						{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
	for _, obj := range []client.Object{cm, svc, sts} {
		require.NoError(t, cl.c.Create(t.Context(), obj), "create %T %s", obj, name)
	}
}

// discovered returns nil once the pod's Prometheus has discovered, for
// job, exactly the target address want.
func (cl *cluster) discovered(t testing.TB, pod, job, want string) error {
	var data struct {
		ActiveTargets []struct {
			ScrapePool       string            `json:"scrapePool"`
			DiscoveredLabels map[string]string `json:"discoveredLabels"`
		} `json:"activeTargets"`
	}
	if err := cl.prometheus(t, pod, "/api/v1/targets", nil, &data); err != nil {
		return err
	}
	var got []string
	for _, tg := range data.ActiveTargets {
		if tg.ScrapePool == job {
			got = append(got, tg.DiscoveredLabels["__address__"])
		}
	}
	if len(got) != 1 || got[0] != want {
		return fmt.Errorf("job %s discovered %s, want %s", job, strings.Join(got, ", "), want)
	}
	return nil
}
