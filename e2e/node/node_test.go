// Package node runs podreload as a user would, on a real node
// (internal/testenv/node): the manifests of deploy/ and deploy/example
// applied with server-side apply, the controller and the Prometheus
// StatefulSet in real pods from the images of `make images`, configuration
// delivered by the real kubelet. It needs root and `make node-bins
// host-images`; `make test` does both.
package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/internal/testenv/node"
	"github.com/podreload/podreload/internal/testenv/toolbin"
	"github.com/podreload/podreload/internal/testenv/wait"
)

const (
	fieldOwner = "podreload-node-e2e"
	// server is the example PrometheusServer, its StatefulSet and pod prefix.
	server, serverPod = "example", "example-0"
	ruleName          = "example-rules"
	// scrapeJob is the example ServiceMonitor's job.
	scrapeJob = "serviceMonitor/default/podreload-controller/0"
	// startTimeout bounds a pod's start; projectionTimeout a change's way
	// through the kubelet's projection (its default resync is one minute,
	// plus its cache TTL).
	startTimeout, projectionTimeout = 3 * time.Minute, 4 * time.Minute
)

func TestMain(m *testing.M) {
	// The clients are controller-runtime's: errors to stderr, and no
	// "log.SetLogger(...) was never called" stack trace.
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent(),
		// client-go's and klog's background goroutines outlive the clients.
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"))
}

// cluster is the node with the clients of the test.
type cluster struct {
	node *node.Node
	kube kubernetes.Interface
	c    client.Client
	// source, when set, is the spec.reloader.source apply gives
	// PrometheusServers; empty keeps the manifests' (the default, api).
	source string
}

func startCluster(t testing.TB, opts node.Options) *cluster {
	t.Helper()
	n := node.Start(t, opts)
	kube, err := kubernetes.NewForConfig(n.Config)
	require.NoError(t, err)
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, monitoringv1.AddToScheme(scheme))
	require.NoError(t, monitoringv1alpha1.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	c, err := client.New(n.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	cl := &cluster{node: n, kube: kube, c: c}
	t.Cleanup(func() {
		// To stderr, now: the test's own report (go test prints it when
		// the test ends, after this) then follows it, its failures last,
		// where a CI log's tail shows them.
		if t.Failed() {
			fmt.Fprintf(os.Stderr, "%s failed: the node's pods and events\n%s", t.Name(), cl.describe(t))
		}
	})
	return cl
}

// apply applies the manifests a kustomization lists, in order, with
// server-side apply, retrying each object while its kind is not served yet
// (a custom resource right after its CRD); PrometheusServers get
// cl.source, if set.
func (cl *cluster) apply(t testing.TB, dir string) {
	t.Helper()
	var kust struct{ Resources []string }
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	require.NoError(t, err)
	require.NoError(t, sigsyaml.Unmarshal(b, &kust))
	for _, r := range kust.Resources {
		cl.applyFile(t, filepath.Join(dir, r))
	}
}

// applyFile applies the objects of a manifest file as apply does.
func (cl *cluster) applyFile(t testing.TB, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	cl.applyYAML(t, path, data)
}

// applyYAML applies the objects of data, YAML documents that source
// names, as apply does.
func (cl *cluster) applyYAML(t testing.TB, source string, data []byte) {
	t.Helper()
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err, source)
		}
		if len(obj.Object) == 0 {
			continue
		}
		cl.setSource(t, obj)
		eventually(t, time.Minute, "apply "+obj.GetKind()+" "+obj.GetName(), func() error {
			return cl.c.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(obj.DeepCopy()),
				client.FieldOwner(fieldOwner), client.ForceOwnership)
		})
	}
}

// setSource sets spec.reloader.source to cl.source in obj when it is a
// PrometheusServer and cl.source is set.
func (cl *cluster) setSource(t testing.TB, obj *unstructured.Unstructured) {
	t.Helper()
	if cl.source == "" || obj.GroupVersionKind().GroupKind() != v1alpha1.GroupVersion().WithKind(v1alpha1.Kind).GroupKind() {
		return
	}
	require.NoError(t, unstructured.SetNestedField(obj.Object, cl.source, "spec", "reloader", "source"))
}

// kubectl runs the real kubectl (bin/kubectl) against the node as its
// administrator, as a user would, and returns its output.
func (cl *cluster) kubectl(t testing.TB, args ...string) string {
	t.Helper()
	bin, err := toolbin.Path("kubectl")
	require.NoError(t, err)
	// Not cancelled with the test: a cleanup may run kubectl to tell why
	// it failed.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig=" + cl.node.Kubeconfig}, args...)...).CombinedOutput()
	require.NoError(t, err, "kubectl %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// eventually polls cond until it returns nil, failing the test with its
// last error after timeout.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	eventuallyEvery(t, timeout, 200*time.Millisecond, what, cond)
}

// eventuallyEvery is eventually, polling every interval.
func eventuallyEvery(t testing.TB, timeout, interval time.Duration, what string, cond func() error) {
	t.Helper()
	wait.Until(t, timeout, interval, what, cond)
}

// readyPod returns the pod name of namespace when all its containers are
// ready, else an error saying why not.
func (cl *cluster) readyPod(t testing.TB, namespace, name string) (*corev1.Pod, error) {
	pod, err := cl.kube.CoreV1().Pods(namespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if pod.DeletionTimestamp != nil {
		return nil, errors.New("pod is being deleted")
	}
	for _, s := range pod.Status.ContainerStatuses {
		if !s.Ready {
			return nil, fmt.Errorf("container %s not ready: %+v", s.Name, s.State)
		}
	}
	if len(pod.Status.ContainerStatuses) == 0 {
		return nil, fmt.Errorf("pod %s: %s", pod.Status.Phase, pod.Status.Message)
	}
	return pod, nil
}

// waitReplicas waits until the pods of default that pod names, one per
// replica from 0 to replicas-1, are ready, and returns their names.
func (cl *cluster) waitReplicas(t testing.TB, replicas int, pod func(replica int) string) []string {
	t.Helper()
	var pods []string
	for i := range replicas {
		name := pod(i)
		eventually(t, startTimeout, "pod "+name+" ready", func() error {
			_, err := cl.readyPod(t, "default", name)
			return err
		})
		pods = append(pods, name)
	}
	return pods
}

// claimUIDs returns the UIDs of the claims of default that claim names,
// one per replica from 0 to replicas-1, by claim name; each is bound (the
// callers ask once the replicas' pods ran).
func (cl *cluster) claimUIDs(t testing.TB, replicas int, claim func(replica int) string) map[string]types.UID {
	t.Helper()
	uids := map[string]types.UID{}
	for i := range replicas {
		name := claim(i)
		pvc, err := cl.kube.CoreV1().PersistentVolumeClaims("default").Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(t, err, "claim %s", name)
		require.Equal(t, corev1.ClaimBound, pvc.Status.Phase, name)
		uids[name] = pvc.UID
	}
	return uids
}

// describe says what the pods of the test namespaces are doing and the
// last events, for a failure.
func (cl *cluster) describe(t testing.TB) string {
	var b strings.Builder
	ctx := t.Context()
	if ctx.Err() != nil {
		return ""
	}
	for _, ns := range []string{"podreload-system", "default"} {
		pods, err := cl.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			fmt.Fprintf(&b, "list pods of %s: %v\n", ns, err)
			continue
		}
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "pod %s/%s %s %s\n", ns, p.Name, p.Status.Phase, p.Status.Message)
			for _, s := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
				st, _ := json.Marshal(s.State)
				fmt.Fprintf(&b, "  %s ready=%v restarts=%d %s\n", s.Name, s.Ready, s.RestartCount, st)
			}
		}
		events, err := cl.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, e := range events.Items {
				fmt.Fprintf(&b, "event %s %s/%s %s: %s\n", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
	}
	return b.String()
}

// prometheus gets path of the API of the pod's Prometheus through the API
// server's proxy, and decodes its data into v. The pod is reached on
// Prometheus' port, 9090, unless pod names another ("pod:9091", a proxy's
// in front of Prometheus).
func (cl *cluster) prometheus(t testing.TB, pod, path string, query url.Values, v any) error {
	if !strings.Contains(pod, ":") {
		pod += ":9090"
	}
	req := cl.kube.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/pods/" + pod + "/proxy" + path)
	for k, vs := range query {
		for _, q := range vs {
			req = req.Param(k, q)
		}
	}
	b, err := req.DoRaw(t.Context())
	if err != nil {
		return fmt.Errorf("GET %s: %w: %s", path, err, b)
	}
	var resp struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.Status != "success" {
		return fmt.Errorf("GET %s: %s", path, b)
	}
	return json.Unmarshal(resp.Data, v)
}

// targetUp returns nil once Prometheus reports every target of job up.
func (cl *cluster) targetUp(t testing.TB, pod, job string) error {
	var data struct {
		ActiveTargets []struct {
			ScrapePool string            `json:"scrapePool"`
			Labels     map[string]string `json:"labels"`
			Health     string            `json:"health"`
			LastError  string            `json:"lastError"`
		} `json:"activeTargets"`
	}
	if err := cl.prometheus(t, pod, "/api/v1/targets", nil, &data); err != nil {
		return err
	}
	n := 0
	for _, tg := range data.ActiveTargets {
		// The job label is the Service's name; the pool is the job's.
		if tg.ScrapePool != job {
			continue
		}
		if tg.Health != "up" {
			return fmt.Errorf("target %s is %s: %s", tg.Labels["instance"], tg.Health, tg.LastError)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("no target of job %s among %d", job, len(data.ActiveTargets))
	}
	return nil
}

// hasRule returns nil once the pod's Prometheus serves the recording rule.
func (cl *cluster) hasRule(t testing.TB, pod, record string) error {
	var data struct {
		Groups []struct {
			Rules []struct{ Name string } `json:"rules"`
		} `json:"groups"`
	}
	if err := cl.prometheus(t, pod, "/api/v1/rules", nil, &data); err != nil {
		return err
	}
	for _, g := range data.Groups {
		for _, r := range g.Rules {
			if r.Name == record {
				return nil
			}
		}
	}
	return fmt.Errorf("rule %s is not served", record)
}

// addRule adds the recording rule record to the example PrometheusRule.
func (cl *cluster) addRule(t testing.TB, record string) {
	t.Helper()
	var pr monitoringv1.PrometheusRule
	require.NoError(t, cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: ruleName}, &pr))
	patch := client.MergeFrom(pr.DeepCopy())
	pr.Spec.Groups[0].Rules = append(pr.Spec.Groups[0].Rules, monitoringv1.Rule{Record: record, Expr: intstr.FromString("vector(1)")})
	require.NoError(t, cl.c.Patch(t.Context(), &pr, patch))
}

// controllerLogs returns the log of deploy/'s controller container.
func (cl *cluster) controllerLogs(t testing.TB) string {
	t.Helper()
	return cl.logsOf(t, "podreload-system", "app.kubernetes.io/name=podreload-controller")
}

// logsOf returns the log of the controller container of the one pod of
// namespace that selector selects.
func (cl *cluster) logsOf(t testing.TB, namespace, selector string) string {
	t.Helper()
	ctx := context.WithoutCancel(t.Context()) // For a cleanup too.
	pods, err := cl.kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1)
	b, err := cl.kube.CoreV1().Pods(namespace).GetLogs(pods.Items[0].Name, &corev1.PodLogOptions{Container: "controller"}).DoRaw(ctx)
	require.NoError(t, err)
	return string(b)
}

// podLogs returns the logs of a container of a pod of the default namespace.
func (cl *cluster) podLogs(t testing.TB, pod, container string) string {
	t.Helper()
	b, err := cl.kube.CoreV1().Pods("default").GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(context.WithoutCancel(t.Context()))
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// followLogs follows the logs of a container of a pod of the default
// namespace until the container ends, and returns a function that returns
// what it read.
func (cl *cluster) followLogs(t testing.TB, pod, container string) func() string {
	t.Helper()
	var (
		mu  sync.Mutex
		buf bytes.Buffer
	)
	done := make(chan struct{})
	stream, err := cl.kube.CoreV1().Pods("default").GetLogs(pod, &corev1.PodLogOptions{Container: container, Follow: true}).Stream(t.Context())
	require.NoError(t, err)
	go func() {
		defer close(done)
		defer stream.Close()
		b := make([]byte, 32<<10)
		for {
			n, err := stream.Read(b)
			mu.Lock()
			buf.Write(b[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = stream.Close()
		<-done
	})
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}
}

// deployController applies deploy/ and waits for the controller's
// Deployment to be available.
func (cl *cluster) deployController(t testing.TB) {
	t.Helper()
	cl.apply(t, "../../deploy")
	eventually(t, startTimeout, "controller Deployment available", func() error {
		var d appsv1.Deployment
		if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: "podreload-system", Name: "podreload-controller"}, &d); err != nil {
			return err
		}
		if d.Status.AvailableReplicas != 1 {
			return fmt.Errorf("%d available replicas: %+v", d.Status.AvailableReplicas, d.Status.Conditions)
		}
		return nil
	})
}

// deployExample gives the example's claim a volume, applies deploy/example
// and waits for its pod to be ready.
func (cl *cluster) deployExample(t testing.TB) *corev1.Pod {
	t.Helper()
	// prometheus runs as nobody with fsGroup 2000 (controller/promserver/workload.go).
	require.NoError(t, cl.node.HostPathVolume(t.Context(), "example-storage", "default", "storage-"+serverPod, "1Gi", 65534, 2000))
	cl.apply(t, "../../deploy/example")
	var pod *corev1.Pod
	eventually(t, startTimeout, "pod "+serverPod+" ready", func() (err error) {
		pod, err = cl.readyPod(t, "default", serverPod)
		return err
	})
	return pod
}
