package collect

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/testlog"
	"github.com/podreload/podreload/internal/testenv/wait"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		// Idle HTTP/2 connections of the clients close on their own.
		goleak.IgnoreTopFunction("net/http.(*http2ClientConn).readLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

// env is a real API server and an admin client of it.
type env struct {
	cp   *controlplane.ControlPlane
	kube *kubernetes.Clientset
	cfg  *rest.Config
}

func start(t testing.TB) *env {
	t.Helper()
	cp := controlplane.Start(t)
	kube, err := kubernetes.NewForConfig(cp.Config)
	require.NoError(t, err)
	return &env{cp: cp, kube: kube, cfg: cp.Config}
}

func (e *env) namespace(t testing.TB, name string) string {
	t.Helper()
	_, err := e.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return name
}

func (e *env) configMap(t testing.TB, ns, name string, labels map[string]string, data map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Data: data}
	_, err := e.kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{})
	require.NoError(t, err)
}

// dashboard returns the label of the dashboards.
func dashboard() map[string]string { return map[string]string{"grafana_dashboard": "1"} }

// reloadServer is a reload endpoint: at each request it records what the
// folder holds, so a test asserts what was on disk when the reload came.
type reloadServer struct {
	*httptest.Server
	dir string

	mu   sync.Mutex
	seen []snapshot
}

type snapshot struct {
	files   []string // relative paths, but temporary files
	partial int      // temporary files
	method  string
	body    string
	auth    string
}

func newReloadServer(t testing.TB, dir string) *reloadServer {
	t.Helper()
	r := &reloadServer{dir: dir}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		files, partial := listFiles(t, dir)
		r.mu.Lock()
		r.seen = append(r.seen, snapshot{files: files, partial: partial, method: req.Method, body: string(body), auth: req.Header.Get("Authorization")})
		r.mu.Unlock()
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *reloadServer) reloads() []snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]snapshot(nil), r.seen...)
}

// waitReloads waits until there were n reloads and returns them.
func (r *reloadServer) waitReloads(t testing.TB, n int) []snapshot {
	t.Helper()
	wait.Until(t, 30*time.Second, 10*time.Millisecond, fmt.Sprintf("reload %d", n), func() error {
		if got := len(r.reloads()); got < n {
			return fmt.Errorf("%d reloads", got)
		}
		return nil
	})
	return r.reloads()
}

// listFiles returns the files under dir, relative, sorted, and how many
// of them are temporary.
func listFiles(t testing.TB, dir string) ([]string, int) {
	var files []string
	partial := 0
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if strings.HasSuffix(path, ".tmp") {
			partial++
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		files = append(files, rel)
		return nil
	})
	sort.Strings(files)
	return files, partial
}

// run starts a Collector with opts (its client and folder set) and stops
// it when the test ends.
func run(t *testing.T, e *env, opts Options) (*Collector, *prometheus.Registry) {
	t.Helper()
	client, err := NewRESTClient(e.cfg)
	require.NoError(t, err)
	opts.Client = client
	if opts.ErrorThrottle == 0 {
		opts.ErrorThrottle = time.Second
	}
	reg := prometheus.NewRegistry()
	logger := slog.New(slog.NewTextHandler(testlog.Output(t), &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := New(logger, reg, opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return c, reg
}

func waitFile(t testing.TB, path, content string) {
	t.Helper()
	wait.Until(t, 30*time.Second, 5*time.Millisecond, "file "+path, func() error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if string(b) != content {
			return fmt.Errorf("content %q", b)
		}
		return nil
	})
}

func waitGone(t testing.TB, path string) {
	t.Helper()
	wait.Until(t, 30*time.Second, 5*time.Millisecond, "removal of "+path, func() error {
		if _, err := os.Stat(path); err == nil {
			return fmt.Errorf("%s is there", path)
		}
		return nil
	})
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
