package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/testlog"
	"github.com/podreload/podreload/internal/testenv/wait"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		goleak.IgnoreTopFunction("net/http.(*http2ClientConn).readLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestRun runs the binary's run against a real API server: METHOD=LIST
// writes every file, reloads once and exits 0; METHOD=WATCH serves
// /healthz, 200 once synced, and the metrics, and exits 0 when stopped.
func TestRun(t *testing.T) {
	cp := controlplane.Start(t)
	kube, err := kubernetes.NewForConfig(cp.Config)
	require.NoError(t, err)
	for i := range 3 {
		ns := fmt.Sprintf("ns-%d", i)
		_, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = kube.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "dash", Labels: map[string]string{"grafana_dashboard": "1"}},
			Data:       map[string]string{fmt.Sprintf("d%d.json", i): "{}"},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	var reloads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reloads.Add(1) }))
	t.Cleanup(srv.Close)
	env := func(dir string, more ...string) map[string]string {
		e := map[string]string{"LABEL": "grafana_dashboard", "FOLDER": dir, "NAMESPACE": "ns-0,ns-1,ns-2", "KUBECONFIG": cp.Kubeconfig, "REQ_URL": srv.URL, "LOG_LEVEL": "DEBUG"}
		for i := 0; i < len(more); i += 2 {
			e[more[i]] = more[i+1]
		}
		return e
	}

	t.Run("list", func(t *testing.T) {
		reloads.Store(0)
		dir := t.TempDir()
		var stderr bytes.Buffer
		require.Equal(t, 0, run(t.Context(), nil, lookup(env(dir, "METHOD", "LIST")), &stderr), stderr.String())
		for i := range 3 {
			require.FileExists(t, filepath.Join(dir, fmt.Sprintf("d%d.json", i)))
		}
		require.Equal(t, int32(1), reloads.Load())
		require.Contains(t, stderr.String(), `"msg":"initial sync done"`, "JSON logs by default")
	})

	// NAMESPACE unset: the pod's own, from its service account's files.
	t.Run("the pod's namespace", func(t *testing.T) {
		reloads.Store(0)
		dir := t.TempDir()
		nsFile := filepath.Join(t.TempDir(), "namespace")
		require.NoError(t, os.WriteFile(nsFile, []byte("ns-1\n"), 0o644))
		e := env(dir, "METHOD", "LIST")
		delete(e, "NAMESPACE")
		var stderr bytes.Buffer
		require.Equal(t, 0, run(t.Context(), []string{"--namespace-file=" + nsFile}, lookup(e), &stderr), stderr.String())
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, entries, 1)
		require.Equal(t, "d1.json", entries[0].Name())

		stderr.Reset()
		require.Equal(t, 2, run(t.Context(), []string{"--namespace-file=" + filepath.Join(dir, "none")}, lookup(e), &stderr))
		require.Equal(t, "collector: NAMESPACE is not set and the pod's namespace is unknown: open "+filepath.Join(dir, "none")+": no such file or directory\n", stderr.String())
	})

	t.Run("watch", func(t *testing.T) {
		reloads.Store(0)
		dir := t.TempDir()
		port := freePort(t)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan int, 1)
		logs := testlog.Output(t)
		go func() {
			done <- run(ctx, nil, lookup(env(dir, "HEALTH_PORT", strconv.Itoa(port), "HEALTH_HOST", "127.0.0.1", "LOG_FORMAT", "LOGFMT", "LOG_TZ", "UTC")), logs)
		}()
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		wait.Until(t, 30*time.Second, 20*time.Millisecond, "/healthz 200", func() error {
			resp, err := http.Get(base + "/healthz")
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || string(b) != "OK" {
				return fmt.Errorf("%d %s", resp.StatusCode, b)
			}
			return nil
		})
		wait.Until(t, 30*time.Second, 20*time.Millisecond, "the start-up reload", func() error {
			if n := reloads.Load(); n != 1 {
				return fmt.Errorf("%d reloads", n)
			}
			return nil
		})
		resp, err := http.Get(base + "/metrics")
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, m := range []string{"reloader_reloads_total 1", `collector_objects{resource="configmap"} 3`, "collector_files 3", "collector_build_info"} {
			require.Contains(t, string(b), m)
		}
		cancel()
		select {
		case code := <-done:
			require.Zero(t, code)
		case <-time.After(30 * time.Second):
			t.Fatal("run did not return")
		}
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, entries, 3)
	})
}

// TestHealthNotReady: /healthz answers 503 until the first sync, as
// k8s-sidecar's.
func TestHealthNotReady(t *testing.T) {
	h := newHealth(discardLogger(), "", prometheus.NewRegistry(), func() error { return fmt.Errorf("not synced yet") }, func() error { return nil })
	rec := httptest.NewRecorder()
	h.srv.Handler.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	require.Equal(t, 503, rec.Code)
	require.Equal(t, "NOT READY: not synced yet", strings.TrimSpace(rec.Body.String()))
	h = newHealth(discardLogger(), "", prometheus.NewRegistry(), func() error { return nil }, func() error { return fmt.Errorf("no working watch") })
	rec = httptest.NewRecorder()
	h.srv.Handler.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	require.Equal(t, 503, rec.Code)
	require.Equal(t, "NOT LIVE: no working watch", strings.TrimSpace(rec.Body.String()))
}
