package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/testlog"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// controller-runtime's metadata informers (the controller watches
		// Secrets' metadata) wrap their watches with apimachinery's
		// watch.Filter, whose goroutine can stay blocked sending an event
		// nobody reads once the informer stopped.
		goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop"))
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"unknown flag", []string{"--no-such-flag"}, "controller: unknown long flag '--no-such-flag'\n"},
		{"bad duration", []string{"--resync-interval=soon"}, "controller: time: invalid duration \"soon\"\n"},
		{"bad memlimit ratio", []string{"--auto-gomemlimit-ratio=half"}, "controller: strconv.ParseFloat: parsing \"half\": invalid syntax\n"},
		{"missing kubeconfig", []string{"--kubeconfig=/nonexistent/kubeconfig"}, `msg="load kubeconfig" err="stat /nonexistent/kubeconfig: no such file or directory"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr testlog.Buffer
			require.Equal(t, 2, run(t.Context(), tc.args, &stderr))
			require.Contains(t, stderr.String(), tc.stderr)
		})
	}
}

// TestRun runs the controller against a real kube-apiserver and etcd: it
// becomes ready, serves its metrics and controller-runtime's, and exits 0
// when stopped.
func TestRun(t *testing.T) {
	kubeconfig := controlplane.Start(t, filepath.Join("..", "..", "deploy", "crds")).Kubeconfig

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	ctx, cancel := context.WithCancel(t.Context())
	var stderr testlog.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--kubeconfig=" + kubeconfig, "--web.listen-address=" + addr, "--namespace=default", "--log.level=debug"}, &stderr)
	}()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		code, body := get("/-/ready")
		assert.Equal(c, http.StatusOK, code, body)
	}, 30*time.Second, 20*time.Millisecond, stderr.String())
	// controller-runtime sets its worker gauge once the workers start,
	// just after the caches are synced and the controller ready.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		code, body := get("/metrics")
		assert.Equal(c, http.StatusOK, code, body)
		for _, name := range []string{"podreload_controller_reconciles_total", "controller_runtime_active_workers", "go_goroutines", "controller_build_info"} {
			assert.Contains(c, body, "\n"+name, "metric %s", name)
		}
	}, 30*time.Second, 20*time.Millisecond)
	code, _ := get("/healthz")
	require.Equal(t, http.StatusOK, code)

	cancel()
	select {
	case code := <-done:
		require.Equal(t, 0, code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the controller did not stop")
	}
	require.True(t, strings.Contains(stderr.String(), `msg=starting`), stderr.String())
}
