package node

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/internal/testenv/node"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

const (
	// grafana is the Grafana-like pod of TestCollectorOnNode and its
	// ServiceAccount, in default, as the Grafana chart names them after
	// the release.
	grafana = "grafana"
	// dashboardsVolume is its emptyDir, where the sidecar writes.
	dashboardsVolume = "sc-dashboard-volume"
	// grafanaMount is where its grafana container reads the dashboards.
	grafanaMount = "/tmp/dashboards"
	// reloadPath is Grafana's, as kube-prometheus-stack's sidecar asks.
	reloadPath = "/api/admin/provisioning/dashboards/reload"
)

// TestCollectorOnNode runs the collector as Grafana's dashboards sidecar,
// with kube-prometheus-stack's environment, in a real pod: the podreload
// image's /bin/collector, a ServiceAccount bound by the chart's collector
// RBAC in the three namespaces it reads, the labelled ConfigMaps and a
// Secret of those namespaces written into the pod's emptyDir, and the
// reload asked of a server of the test (Grafana's reload endpoint, with
// basic auth) once they are all there; then an edit and a delete.
func TestCollectorOnNode(t *testing.T) {
	cl := startCluster(t, node.Options{})
	namespaces := []string{"default", "dashboards-a", "dashboards-b"}
	for _, ns := range append(namespaces[1:], "elsewhere") {
		require.NoError(t, cl.c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	labelled := map[string]string{"grafana_dashboard": "1"}
	objects := []client.Object{
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cluster", Labels: labelled},
			Data:       map[string]string{"cluster.json": `{"title":"cluster"}`},
		},
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "dashboards-a", Name: "nodes", Labels: labelled},
			Data:       map[string]string{"nodes.json": `{"title":"nodes"}`, "pods.json": `{"title":"pods"}`},
		},
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "dashboards-b", Name: "apiserver", Labels: labelled},
			Data:       map[string]string{"apiserver.json": `{"title":"apiserver"}`},
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "dashboards-b", Name: "private", Labels: labelled},
			Data:       map[string][]byte{"private.json": []byte(`{"title":"private"}`)},
		},
		// Not collected: no label, and a namespace not read.
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "dashboards-a", Name: "unlabelled"},
			Data:       map[string]string{"unlabelled.json": "{}"},
		},
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "elsewhere", Labels: labelled},
			Data:       map[string]string{"elsewhere.json": "{}"},
		},
	}
	for _, obj := range objects {
		require.NoError(t, cl.c.Create(t.Context(), obj), "create %T %s/%s", obj, obj.GetNamespace(), obj.GetName())
	}
	want := map[string]string{
		"cluster.json":   `{"title":"cluster"}`,
		"nodes.json":     `{"title":"nodes"}`,
		"pods.json":      `{"title":"pods"}`,
		"apiserver.json": `{"title":"apiserver"}`,
		"private.json":   `{"title":"private"}`,
	}

	cl.collectorRBAC(t, namespaces)
	reload := cl.reloadEndpoint(t)
	pod := cl.grafanaPod(t, reload, strings.Join(namespaces, ","))
	reload.watch(cl.node.VolumeDir(string(pod.UID), "kubernetes.io~empty-dir", dashboardsVolume))
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("collector's log:\n" + cl.podLogs(t, grafana, "grafana-sc-dashboard"))
		}
	})
	eventually(t, startTimeout, "pod "+grafana+" ready", func() (err error) {
		pod, err = cl.readyPod(t, "default", grafana)
		return err
	})

	t.Run("the files of every namespace are in the pod's volume, then one reload", func(t *testing.T) {
		reqs := reload.waitAfter(t, time.Time{})
		require.Empty(t, cmp.Diff(want, reqs[0].files), "files on disk when the reload came (-want +got)")
		// Where the grafana container reads them, through its own mounts.
		var grafanaID string
		for _, s := range pod.Status.ContainerStatuses {
			if s.Name == "grafana" {
				grafanaID = s.ContainerID
			}
		}
		pid, err := cl.node.ContainerPID(grafanaID)
		require.NoError(t, err)
		got, err := readFiles("/proc/" + strconv.Itoa(pid) + "/root" + grafanaMount)
		require.NoError(t, err)
		require.Empty(t, cmp.Diff(want, got), "files the grafana container reads (-want +got)")
	})

	t.Run("an edit is written, then reloaded", func(t *testing.T) {
		var cm corev1.ConfigMap
		require.NoError(t, cl.c.Get(t.Context(), client.ObjectKey{Namespace: "dashboards-a", Name: "nodes"}, &cm))
		cm.Data["nodes.json"] = `{"title":"nodes","version":2}`
		want["nodes.json"] = cm.Data["nodes.json"]
		edited := time.Now()
		// The start-up sync was one request for every file.
		require.Len(t, reload.before(edited), 1, "reloads at start-up")
		require.NoError(t, cl.c.Update(t.Context(), &cm))
		reqs := reload.waitAfter(t, edited)
		require.Empty(t, cmp.Diff(want, reqs[0].files), "files on disk when the first reload after the edit came (-want +got)")
	})

	t.Run("a delete removes its file, then reloads", func(t *testing.T) {
		deleted := time.Now()
		require.NoError(t, cl.c.Delete(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "dashboards-b", Name: "apiserver"}}))
		delete(want, "apiserver.json")
		reqs := reload.waitAfter(t, deleted)
		require.Empty(t, cmp.Diff(want, reqs[0].files), "files on disk when the first reload after the delete came (-want +got)")
	})

	t.Run("every reload was Grafana's, authenticated, and the collector never denied", func(t *testing.T) {
		for _, r := range reload.before(time.Now()) {
			require.Equal(t, http.MethodPost+" "+reloadPath+" admin:prom-operator", r.request)
			require.NoError(t, r.err)
		}
		require.NotContains(t, strings.ToLower(cl.podLogs(t, grafana, "grafana-sc-dashboard")), "forbidden",
			"an RBAC denial: the chart's collector RBAC misses a permission")
	})
}

// collectorRBAC applies the chart's collector RBAC
// (charts/podreload/templates/collector-rbac.yaml), as `helm template |
// kubectl apply --server-side` would, for the ServiceAccount grafana of
// default, bound in each of namespaces, and creates that ServiceAccount.
func (cl *cluster) collectorRBAC(t testing.TB, namespaces []string) {
	t.Helper()
	helm, err := toolbin.Path("helm")
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), helm, "template", "rbac", "../../charts/podreload", "--namespace", "default",
		"--show-only", "templates/collector-rbac.yaml",
		"--set-json", `collector.rbac.serviceAccounts=[{"name":"`+grafana+`","namespace":"default"}]`,
		"--set", "collector.rbac.namespaces={"+strings.Join(namespaces, ",")+"}")
	cmd.Env = append(cmd.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "helm template: %s", stderr.String())
	require.Equal(t, 1+len(namespaces), bytes.Count(out, []byte("\nkind: ")), "a ClusterRole and a RoleBinding per namespace:\n%s", out)
	cl.applyYAML(t, "the chart's collector RBAC", out)
	require.NoError(t, cl.c.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: grafana}}))
}

// grafanaPod creates the Grafana-like pod in default: a grafana container
// (the pause image) reading the dashboards from the emptyDir, and the
// collector as its grafana-sc-dashboard sidecar with the environment
// kube-prometheus-stack gives k8s-sidecar, reading namespaces (a
// comma-separated list) and asking reload to reload.
func (cl *cluster) grafanaPod(t testing.TB, reload *reloadEndpoint, namespaces string) *corev1.Pod {
	t.Helper()
	mount := corev1.VolumeMount{Name: dashboardsVolume, MountPath: grafanaMount}
	credentials := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: grafana}}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: grafana},
		StringData: map[string]string{"admin-user": "admin", "admin-password": "prom-operator"},
	}
	require.NoError(t, cl.c.Create(t.Context(), secret))
	env := []corev1.EnvVar{
		{Name: "METHOD", Value: "WATCH"},
		{Name: "LABEL", Value: "grafana_dashboard"},
		{Name: "LABEL_VALUE", Value: "1"},
		{Name: "FOLDER", Value: grafanaMount},
		{Name: "RESOURCE", Value: "both"},
		{Name: "NAMESPACE", Value: namespaces},
		{Name: "REQ_USERNAME", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: withKey(credentials, "admin-user")}},
		{Name: "REQ_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: withKey(credentials, "admin-password")}},
		{Name: "REQ_URL", Value: reload.url},
		{Name: "REQ_METHOD", Value: "POST"},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: grafana},
		Spec: corev1.PodSpec{
			ServiceAccountName: grafana,
			Containers: []corev1.Container{
				{
					Name:         "grafana",
					Image:        node.PauseImage,
					VolumeMounts: []corev1.VolumeMount{{Name: mount.Name, MountPath: mount.MountPath, ReadOnly: true}},
				},
				{
					Name:         "grafana-sc-dashboard",
					Image:        podreloadImage(t),
					Command:      []string{"/bin/collector"},
					Env:          env,
					VolumeMounts: []corev1.VolumeMount{mount},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
						Path: "/healthz", Port: intstr.FromInt32(8080),
					}}, PeriodSeconds: 1},
					SecurityContext: &corev1.SecurityContext{
						AllowPrivilegeEscalation: ptr.To(false),
						ReadOnlyRootFilesystem:   ptr.To(true),
						Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					},
				},
			},
			Volumes: []corev1.Volume{{Name: dashboardsVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	require.NoError(t, cl.c.Create(t.Context(), pod))
	return pod
}

// podreloadImage returns the podreload image deploy/controller.yaml runs,
// the one the node imports.
func podreloadImage(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("../../deploy/controller.yaml")
	require.NoError(t, err)
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var d appsv1.Deployment
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		if d.Kind == "Deployment" {
			return d.Spec.Template.Spec.Containers[0].Image
		}
	}
	t.Fatal("no Deployment in deploy/controller.yaml")
	return ""
}

// withKey returns a copy of s selecting key.
func withKey(s *corev1.SecretKeySelector, key string) *corev1.SecretKeySelector {
	c := *s
	c.Key = key
	return &c
}

// reloadEndpoint stands for Grafana's dashboards reload endpoint: a
// server of the test on this machine (node.HostIP), which pods reach
// directly. At each request it reads the files of the pod's volume, on
// the node, as they are when the request comes.
type reloadEndpoint struct {
	// url is what the collector is given as REQ_URL.
	url string

	mu       sync.Mutex
	dir      string
	received []reloadRequest
}

// reloadRequest is a request received: when, its method, path and basic
// auth credentials, and the files of the volume then (or why they could
// not be read).
type reloadRequest struct {
	at      time.Time
	request string
	files   map[string]string
	err     error
}

// reloadEndpoint starts a reloadEndpoint that goes with the test.
func (cl *cluster) reloadEndpoint(t testing.TB) *reloadEndpoint {
	t.Helper()
	e := &reloadEndpoint{}
	ln, err := net.Listen("tcp", net.JoinHostPort(node.HostIP, "0"))
	require.NoError(t, err)
	e.url = "http://" + ln.Addr().String() + reloadPath
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		user, password, _ := r.BasicAuth()
		req := reloadRequest{at: time.Now(), request: r.Method + " " + r.URL.Path + " " + user + ":" + password}
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.dir == "" {
			req.err = fmt.Errorf("a reload before the pod was created")
		} else {
			req.files, req.err = readFiles(e.dir)
		}
		e.received = append(e.received, req)
		rw.Header().Set("Content-Type", "application/json")
		_, _ = rw.Write([]byte(`{"message":"Dashboards config reloaded"}`))
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return e
}

// watch sets the directory read at each request.
func (e *reloadEndpoint) watch(dir string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dir = dir
}

// before returns the requests received before at.
func (e *reloadEndpoint) before(at time.Time) []reloadRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	var reqs []reloadRequest
	for _, r := range e.received {
		if r.at.Before(at) {
			reqs = append(reqs, r)
		}
	}
	return reqs
}

// waitAfter waits for a request received after since and returns those
// received after it, the first one read without error.
func (e *reloadEndpoint) waitAfter(t testing.TB, since time.Time) []reloadRequest {
	t.Helper()
	var reqs []reloadRequest
	eventually(t, time.Minute, "a reload after "+since.Format(time.RFC3339Nano), func() error {
		e.mu.Lock()
		defer e.mu.Unlock()
		reqs = reqs[:0]
		for _, r := range e.received {
			if r.at.After(since) {
				reqs = append(reqs, r)
			}
		}
		if len(reqs) == 0 {
			return fmt.Errorf("%d reloads, none after", len(e.received))
		}
		return nil
	})
	require.NoError(t, reqs[0].err)
	return reqs
}

// readFiles returns the content of the files under dir by path relative to
// it, but for hidden ones (the collector's temporary files).
func readFiles(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		files[rel] = string(b)
		return err
	})
	return files, err
}
