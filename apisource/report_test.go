package apisource

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/internal/testenv/testlog"
	"github.com/podreload/podreload/reloader"
)

// createPod creates a pod (no node runs it) for a sidecar to report on.
func (e *env) createPod(t *testing.T, ns, name string) {
	_, err := e.kube.CoreV1().Pods(ns).Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "prometheus", Image: "prometheus"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// startReporter runs a Reporter on ns/pod with tokenFile until the test ends.
func (e *env) startReporter(t *testing.T, ns, pod, tokenFile, caFile string, logs *testlog.Buffer) (*Reporter, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	r, err := NewReporter(slog.New(slog.NewJSONHandler(logs, nil)), reg, ReporterOptions{
		Config:    Config{Server: e.cp.Config.Host, TokenFile: tokenFile, CAFile: caFile},
		Namespace: ns, Name: pod,
	})
	require.NoError(t, err)
	run(t, r.Run)
	return r, reg
}

// run runs f until the test ends.
func run(t *testing.T, f func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// prom is Prometheus' reload endpoint: it counts the reloads, and rejects
// them while rejecting is set.
type prom struct {
	url       *url.URL
	rejecting atomic.Bool
	reloads   atomic.Int32
}

// startProm serves a prom until the test ends.
func startProm(t *testing.T) *prom {
	p := &prom{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		p.reloads.Add(1)
		if p.rejecting.Load() {
			http.Error(w, "failed to reload config: parsing YAML file", http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	var err error
	p.url, err = url.Parse(srv.URL + "/-/reload")
	require.NoError(t, err)
	return p
}

// annotationIs waits until the pod's contract.AppliedAnnotation satisfies ok, and returns it.
func (e *env) annotationIs(t *testing.T, ns, pod string, what string, ok func(contract.Applied) bool) contract.Applied {
	t.Helper()
	var (
		got contract.Applied
		raw string
	)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		p, err := e.kube.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{})
		require.NoError(t, err)
		raw = p.Annotations[contract.AppliedAnnotation]
		got = contract.Applied{}
		if raw != "" && json.Unmarshal([]byte(raw), &got) == nil && ok(got) {
			return got
		}
	}
	t.Fatalf("annotation %s of %s/%s: want %s, have %q", contract.AppliedAnnotation, ns, pod, what, raw)
	return got
}

// The sidecar's whole path: the API source reads the Secret and the
// ConfigMap, the reloader applies them, and the reporter writes in the pod
// the hash the controller computes from the same objects.
func TestReporter(t *testing.T) {
	e := newEnv(t)
	ns := e.namespace(t)
	e.createPod(t, ns, "prom-0")
	e.createPod(t, ns, "other")
	token, ca := e.cp.ServiceAccount(t, ns, "sidecar", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"prom-0"}, Verbs: []string{"patch"}},
	})
	ctx := t.Context()
	_, err := e.kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string][]byte{"config": []byte("v: 1\n")}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rules-0", Labels: map[string]string{"rules": "yes"}}, Data: map[string]string{"a.yaml": "a1"}}
	cm, err = e.kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	require.NoError(t, err)

	prom := startProm(t)

	src, _ := e.source(t, ns, nil)
	var logs testlog.Buffer
	rep, reg := e.startReporter(t, ns, "prom-0", token, ca, &logs)
	dir := t.TempDir()
	rel, err := reloader.New(nil, prometheus.NewRegistry(), reloader.Options{
		Source: src, ConfigOutput: filepath.Join(dir, "prometheus.env.yaml"), RulesDir: filepath.Join(dir, "rules"),
		Trigger: &reloader.HTTPTrigger{URL: prom.url, Timeout: 5 * time.Second}, QuietWindow: 10 * time.Millisecond,
		Retries: -1, KeepAccepted: true, OnApplied: rep.Report,
	})
	require.NoError(t, err)
	run(t, rel.Run)

	first := contract.Sum([]byte("v: 1\n"), map[string]string{"rules-0/a.yaml": "a1"})
	got := e.annotationIs(t, ns, "prom-0", "hash "+first, func(a contract.Applied) bool { return a.Hash == first })
	require.Nil(t, got.Rejection)
	accepted, err := time.Parse(time.RFC3339, got.Time)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), accepted, time.Minute)

	// The next change gives the next hash.
	cm.Data["a.yaml"] = "a2"
	_, err = e.kube.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	second := contract.Sum([]byte("v: 1\n"), map[string]string{"rules-0/a.yaml": "a2"})
	e.annotationIs(t, ns, "prom-0", "hash "+second, func(a contract.Applied) bool { return a.Hash == second && a.Rejection == nil })

	// A rejection shows, with the hash Prometheus still runs.
	prom.rejecting.Store(true)
	_, err = e.kube.CoreV1().Secrets(ns).Update(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string][]byte{"config": []byte("v: [\n")}}, metav1.UpdateOptions{})
	require.NoError(t, err)
	got = e.annotationIs(t, ns, "prom-0", "a rejection", func(a contract.Applied) bool { return a.Rejection != nil })
	require.Equal(t, second, got.Hash)
	require.Equal(t, "status 500: failed to reload config: parsing YAML file", got.Rejection.Message)
	_, err = time.Parse(time.RFC3339, got.Rejection.Time)
	require.NoError(t, err)
	require.Zero(t, testutil.ToFloat64(rep.errors))
	require.Equal(t, 1, testutil.CollectAndCount(reg, "reloader_report_errors_total"))

	// Forbidden: the Role names prom-0 only. Said with the API server's
	// message, counted, retried.
	var otherLogs testlog.Buffer
	other, _ := e.startReporter(t, ns, "other", token, ca, &otherLogs)
	other.Report(reloader.Applied{Hash: first, Time: time.Now()})
	want, err := json.Marshal(`patch pod ` + ns + `/other: API server answered 403: pods "other" is forbidden: User "system:serviceaccount:` + ns + `:sidecar" cannot patch resource "pods" in API group "" in the namespace "` + ns + `"`)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return testutil.ToFloat64(other.errors) >= 2 }, 20*time.Second, 20*time.Millisecond, "retried")
	require.Contains(t, otherLogs.String(), `"msg":"report what Prometheus runs"`)
	require.Contains(t, otherLogs.String(), `"err":`+string(want))
	p, err := e.kube.CoreV1().Pods(ns).Get(ctx, "other", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotContains(t, p.Annotations, contract.AppliedAnnotation)
}

// Report never waits for the API server, and only the latest report waits
// to be written.
func TestReporterKeepsTheLatest(t *testing.T) {
	var (
		mu      sync.Mutex
		patches []string
	)
	entered, release := make(chan struct{}), make(chan struct{})
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		patches = append(patches, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type")+" "+string(body))
		first := len(patches) == 1
		mu.Unlock()
		if first {
			close(entered)
			<-release
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(api.Close)
	rep, err := NewReporter(nil, prometheus.NewRegistry(), ReporterOptions{Config: Config{Server: api.URL}, Namespace: "ns", Name: "prom-0"})
	require.NoError(t, err)
	run(t, rep.Run)

	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	rep.Report(reloader.Applied{Hash: "h1", Time: at})
	<-entered
	rep.Report(reloader.Applied{Hash: "h2", Time: at})
	rep.Report(reloader.Applied{Hash: "h2", Time: at, Rejection: &reloader.Rejection{Message: "bad", Time: at.Add(time.Second)}})
	close(release)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(patches) == 2
	}, 10*time.Second, 5*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	const prefix = `PATCH /api/v1/namespaces/ns/pods/prom-0 application/merge-patch+json {"metadata":{"annotations":{"podreload.dev/applied":`
	require.Equal(t, []string{
		prefix + `"{\"hash\":\"h1\",\"time\":\"2026-11-25T10:00:00Z\"}"}}}`,
		prefix + `"{\"hash\":\"h2\",\"time\":\"2026-11-25T10:00:00Z\",\"rejection\":{\"message\":\"bad\",\"time\":\"2026-11-25T10:00:01Z\"}}"}}}`,
	}, patches)
}
