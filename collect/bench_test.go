package collect

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podreload/podreload/internal/testenv/docsection"
	"github.com/podreload/podreload/internal/testenv/procstatus"
	"github.com/podreload/podreload/internal/testenv/toolbin"
	"github.com/podreload/podreload/internal/testenv/wait"
)

// benchDocsEnv names the file the figures go into (make bench sets it).
const benchDocsEnv = "PODRELOAD_BENCH_DOCS"

// BenchmarkCollector runs the collector binary (bin/collector, built as
// released) against a real API server, through a proxy that counts what
// the API server sends and can drop every packet, with the scenarios of
// issue 40 measured against k8s-sidecar 2.10.1. Run it once:
// -benchtime=1x; it idles for a minute.
func BenchmarkCollector(b *testing.B) {
	bin, err := toolbin.Path("collector")
	require.NoError(b, err)
	for b.Loop() {
		section := benchCollector(b, bin)
		b.Log("\n" + section)
		if path := os.Getenv(benchDocsEnv); path != "" {
			require.NoError(b, docsection.Replace(path, "collector", "collect/bench_test.go", section))
		}
	}
}

// dashboardJSON is a dashboard of about 4 KiB, version v, that ends with
// a marker: a reader that sees no marker saw part of a file.
func dashboardJSON(v int) string {
	return fmt.Sprintf(`{"version":%d,"panels":"%s","end":true}`, v, strings.Repeat("x", 4<<10))
}

func benchCollector(b *testing.B, bin string) string {
	e := start(b)
	namespaces := []string{e.namespace(b, "a"), e.namespace(b, "b"), e.namespace(b, "c")}
	for i := range 100 {
		e.configMap(b, namespaces[i%3], fmt.Sprintf("dash-%d", i), dashboard(), map[string]string{fmt.Sprintf("dash-%d.json", i): dashboardJSON(0)})
	}
	for i := range 50 {
		e.configMap(b, namespaces[i%3], fmt.Sprintf("other-%d", i), map[string]string{"app": "x"}, map[string]string{"x": "y"})
	}
	p := newProxy(b, e.cfg.Host)
	kubeconfig, err := os.ReadFile(e.cp.Kubeconfig)
	require.NoError(b, err)
	host := strings.TrimSuffix(e.cfg.Host, "/")
	require.Contains(b, string(kubeconfig), host)
	proxied := filepath.Join(b.TempDir(), "kubeconfig")
	require.NoError(b, os.WriteFile(proxied, []byte(strings.ReplaceAll(string(kubeconfig), host, "https://"+p.addr())), 0o600))

	dir := b.TempDir()
	srv := newReloadServer(b, dir)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	health := l.Addr().String()
	_, port, _ := net.SplitHostPort(health)
	l.Close()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "LABEL=grafana_dashboard", "FOLDER="+dir, "NAMESPACE="+strings.Join(namespaces, ","),
		"KUBECONFIG="+proxied, "REQ_URL="+srv.URL, "REQ_METHOD=POST", "HEALTH_HOST=127.0.0.1", "HEALTH_PORT="+port, "LOG_LEVEL=WARN")
	cmd.Stderr = os.Stderr
	start := time.Now()
	require.NoError(b, cmd.Start())
	b.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})

	var f struct {
		startReloads, startFiles, burstReloads, burstLastFiles int
		partial, edits                                         int
		latencies                                              []time.Duration
		idleBytes                                              int64
		idleWindow, noticed, removedAfter, synced              time.Duration
		idleRSS, idleAnon, peak                                float64
	}
	srv.waitReloads(b, 1)
	f.synced = time.Since(start)
	// Whatever start-up sends comes within maxDelay of the first.
	time.Sleep(maxDelay)
	r := srv.reloads()
	f.startReloads, f.startFiles = len(r), len(r[0].files)

	// A burst of 50 creates, one by one as kubectl apply does.
	for i := 100; i < 150; i++ {
		e.configMap(b, namespaces[i%3], fmt.Sprintf("dash-%d", i), dashboard(), map[string]string{fmt.Sprintf("dash-%d.json", i): dashboardJSON(0)})
	}
	wait.Until(b, time.Minute, 10*time.Millisecond, "a reload with the 150 files", func() error {
		r := srv.reloads()
		if n := len(r[len(r)-1].files); n != 150 {
			return fmt.Errorf("%d files at the last reload", n)
		}
		return nil
	})
	time.Sleep(maxDelay)
	r = srv.reloads()
	f.burstReloads, f.burstLastFiles = len(r)-f.startReloads, len(r[len(r)-1].files)

	// 20 edits of one ConfigMap, a reader polling its file every 5 ms.
	path := filepath.Join(dir, "dash-0.json")
	var partial atomic.Int32
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if b, err := os.ReadFile(path); err != nil || !strings.HasSuffix(string(b), `"end":true}`) {
				partial.Add(1)
			}
		}
	})
	cms := e.kube.CoreV1().ConfigMaps("a")
	for v := 1; v <= 20; v++ {
		cm, err := cms.Get(context.Background(), "dash-0", metav1.GetOptions{})
		require.NoError(b, err)
		cm.Data = map[string]string{"dash-0.json": dashboardJSON(v)}
		want := dashboardJSON(v)
		sent := time.Now()
		_, err = cms.Update(context.Background(), cm, metav1.UpdateOptions{})
		require.NoError(b, err)
		wait.Until(b, 30*time.Second, time.Millisecond, "edit on disk", func() error {
			if got, _ := os.ReadFile(path); string(got) != want {
				return fmt.Errorf("not yet")
			}
			return nil
		})
		f.latencies = append(f.latencies, time.Since(sent))
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	wg.Wait()
	f.partial, f.edits = int(partial.Load()), 20

	// Idle: what the API server sends in a minute and more (its watches
	// end every WATCH_SERVER_TIMEOUT, 60 s, and resume).
	time.Sleep(2 * time.Second)
	before, idleStart := p.received.Load(), time.Now()
	time.Sleep(65 * time.Second)
	f.idleBytes, f.idleWindow = p.received.Load()-before, time.Since(idleStart)
	f.idleRSS, f.idleAnon, _ = procstatus.MiB(b, cmd.Process.Pid)

	// The connection silent (packets dropped): when the collector notices,
	// and deletions made meanwhile removed once it returns.
	restarts := func() float64 {
		return metric(b, health, `collector_watch_restarts_total{reason="error"}`) + metric(b, health, `collector_watch_restarts_total{reason="silent"}`)
	}
	was := restarts()
	p.block()
	blocked := time.Now()
	for i := 1; i <= 2; i++ {
		require.NoError(b, cms.Delete(context.Background(), fmt.Sprintf("dash-%d", i*3), metav1.DeleteOptions{}))
	}
	wait.Until(b, time.Minute, 100*time.Millisecond, "the silent connection noticed", func() error {
		if restarts() == was {
			return fmt.Errorf("not noticed")
		}
		return nil
	})
	f.noticed = time.Since(blocked)
	time.Sleep(max(0, 20*time.Second-time.Since(blocked)))
	p.unblock()
	back := time.Now()
	for i := 1; i <= 2; i++ {
		waitGone(b, filepath.Join(dir, fmt.Sprintf("dash-%d.json", i*3)))
	}
	f.removedAfter = time.Since(back)
	_, _, f.peak = procstatus.MiB(b, cmd.Process.Pid)

	slices.Sort(f.latencies)
	p50, p99 := f.latencies[len(f.latencies)/2], f.latencies[len(f.latencies)*99/100]
	perMinute := float64(f.idleBytes) / f.idleWindow.Minutes() / 1024
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**not met**"
	}
	var w strings.Builder
	fmt.Fprintf(&w, "Measured by `make bench` (collect/bench_test.go): bin/collector against a real kube-apiserver on loopback, through a proxy counting what the API server sends; 100 labelled ConfigMaps of 4 KiB in 3 namespaces among 150; k8s-sidecar 2.10.1's figures are issue 40's, measured the same way.\n\n")
	fmt.Fprintf(&w, "| scenario | collector | k8s-sidecar 2.10.1 | target |\n|---|---|---|---|\n")
	fmt.Fprintf(&w, "| reload requests at start-up, files on disk at the first | %d, %d of 100 | one per file | 1, all: %s |\n", f.startReloads, f.startFiles, met(f.startReloads == 1 && f.startFiles == 100))
	fmt.Fprintf(&w, "| reload requests for a burst of 50 creates, files at the last | %d, %d of 150 | 50, the last with every file | ≤ 2, all: %s |\n", f.burstReloads, f.burstLastFiles, met(f.burstReloads <= 2 && f.burstLastFiles == 150))
	fmt.Fprintf(&w, "| partial files seen by a reader polling every 5 ms during %d edits | %d | 3 to 5 | 0: %s |\n", f.edits, f.partial, met(f.partial == 0))
	fmt.Fprintf(&w, "| API write → file on disk, p50 (p99) of %d edits | %.1f ms (%.1f ms) | | p50 ≤ 20 ms: %s |\n", f.edits, ms(p50), ms(p99), met(p50 <= 20*time.Millisecond))
	fmt.Fprintf(&w, "| connection silent (packets dropped): noticed after | %.1f s | 48 s, `/healthz` 200 throughout | ≤ 15 s: %s |\n", f.noticed.Seconds(), met(f.noticed <= 15*time.Second))
	fmt.Fprintf(&w, "| 2 ConfigMaps deleted while it was cut (20 s): files removed after its return | %.2f s | never (0 of 2) | ≤ 5 s: %s |\n", f.removedAfter.Seconds(), met(f.removedAfter <= 5*time.Second))
	fmt.Fprintf(&w, "| idle traffic from the API server | %.1f KiB/min | 4.8 MiB/min | ≤ a tenth (492 KiB/min): %s |\n", perMinute, met(perMinute <= 4.8*1024/10))
	fmt.Fprintf(&w, "| idle RSS (anonymous) | %.1f MiB (%.1f MiB) | 63 MiB | ≤ 15 MiB: %s |\n", f.idleRSS, f.idleAnon, met(f.idleRSS <= 15))
	fmt.Fprintf(&w, "| peak RSS (VmHWM) | %.1f MiB | 69 MiB | ≤ 30 MiB: %s |\n", f.peak, met(f.peak <= 30))
	fmt.Fprintf(&w, "\nFrom the start of the process to the start-up reload: %s, on a machine shared with other builds.\n", f.synced.Round(time.Millisecond))
	return w.String()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// metric returns the value of the sample named series (name and labels)
// that the collector at addr serves, 0 if absent.
func metric(b testing.TB, addr, series string) float64 {
	b.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(b, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(b, err)
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}
