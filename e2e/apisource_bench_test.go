package e2e

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/docsection"
	"github.com/podreload/podreload/internal/testenv/procstatus"
)

// BenchmarkAPISource measures the config-reloader's API source against a
// real API server on loopback (make bench runs the binary in bin/, built
// as released): a ConfigMap update accepted by the API server to the
// reload request, one ConfigMap changed among 1,000, and the sidecar's
// memory. Run it once: -benchtime=1x.
func BenchmarkAPISource(b *testing.B) {
	cp := controlplane.Start(b)
	for b.Loop() {
		section := benchAPISource(b, cp)
		b.Log("\n" + section)
		if path := os.Getenv(benchDocsEnv); path != "" {
			require.NoError(b, docsection.Replace(path, "api-source", "e2e/bench_test.go", section))
		}
	}
}

// reloadClock is a reload endpoint that records when each request arrives.
type reloadClock struct {
	*httptest.Server
	at chan time.Time
}

func newReloadClock(b *testing.B) *reloadClock {
	c := &reloadClock{at: make(chan time.Time, 2000)}
	c.Server = httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { c.at <- time.Now() }))
	b.Cleanup(c.Close)
	return c
}

// next waits for the next reload request.
func (c *reloadClock) next(b *testing.B) time.Time {
	b.Helper()
	select {
	case at := <-c.at:
		return at
	case <-time.After(deadline):
		b.Fatalf("no reload request within %s", deadline)
		return time.Time{}
	}
}

// none checks that no reload request is pending.
func (c *reloadClock) none(b *testing.B) {
	b.Helper()
	select {
	case <-c.at:
		b.Fatal("one reload request too many")
	default:
	}
}

func benchAPISource(b *testing.B, cp *controlplane.ControlPlane) string {
	const (
		edits     = 50
		pace      = 250 * time.Millisecond // Isolated changes: see BenchmarkPipeline.
		ruleFiles = 1000
	)
	ns := "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	p := newAPIPod(b, cp, ns, true)
	clock := newReloadClock(b)
	p.setSecret(map[string][]byte{apiKey: p.config("1")})
	p.setConfigMap("prom-rulefiles-0", map[string]string{"a.yaml": ruleFile("a", "a0")})
	addr := freeAddr(b)
	p.sidecarURL = "http://" + addr
	sidecar := start(b, "config-reloader", []string{"POD_NAME=" + podName}, ours("config-reloader"),
		append(p.apiArgs, "--reload-url="+clock.URL+"/-/reload", "--listen-address="+addr)...)
	clock.next(b)
	pid := sidecar.cmd.Process.Pid
	// Idle: after start-up, a first reload and ten seconds of nothing.
	time.Sleep(10 * time.Second)
	idleRSS, idleAnon, _ := procstatus.MiB(b, pid)

	// An update accepted by the API server to the reload request: the
	// clock starts when the update returns, as the API server has then
	// stored it and sends the watch event.
	lat := make([]time.Duration, 0, edits)
	for i := range edits {
		time.Sleep(pace)
		p.setConfigMap("prom-rulefiles-0", map[string]string{"a.yaml": ruleFile("a", fmt.Sprintf("a%d", i+1))})
		written := time.Now()
		lat = append(lat, clock.next(b).Sub(written))
	}
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]

	// 1,000 rule ConfigMaps of a rule file of about 4 KiB each.
	big := strings.Repeat("  - record: job:bench:sum\n    expr: sum by (job) (rate(http_requests_total{code=~\"5..\"}[5m]))\n", 40)
	created := time.Now()
	for i := range ruleFiles {
		p.setConfigMap(fmt.Sprintf("rules-%04d", i), map[string]string{"r.yaml": "groups:\n- name: g" + strconv.Itoa(i) + "\n  rules:\n" + big})
	}
	want := ruleFiles + 1
	eventually(b, "1,000 rule files written", func() error {
		if n := len(modTimes(b, p.rulesDir)); n != want {
			return fmt.Errorf("%d files", n)
		}
		return nil
	})
	loaded := time.Since(created)
	for len(clock.at) > 0 { // The creations' reloads.
		<-clock.at
	}
	time.Sleep(2 * time.Second)
	for len(clock.at) > 0 {
		<-clock.at
	}
	_, _, peak := procstatus.MiB(b, pid)
	fullRSS, fullAnon, _ := procstatus.MiB(b, pid)

	// One of them changes: one event, one file rewritten, one reload.
	before := modTimes(b, p.rulesDir)
	events := p.metric(`reloader_api_watch_events_total{resource="configmaps",type="MODIFIED"}`)
	reloads := p.metric("reloader_reloads_total")
	time.Sleep(pace)
	p.setConfigMap("rules-0500", map[string]string{"r.yaml": "groups:\n- name: changed\n  rules:\n" + big})
	clock.next(b)
	time.Sleep(time.Second) // Room for a second reload or a second write, which must not come.
	clock.none(b)
	after := modTimes(b, p.rulesDir)
	var rewritten []string
	for path, mt := range after {
		if !before[path].Equal(mt) {
			rewritten = append(rewritten, strings.TrimPrefix(path, p.rulesDir+"/"))
		}
	}
	require.Equal(b, []string{"rules-0500/r.yaml"}, rewritten)
	gotEvents := p.metric(`reloader_api_watch_events_total{resource="configmaps",type="MODIFIED"}`) - events
	gotReloads := p.metric("reloader_reloads_total") - reloads
	require.Equal(b, 1.0, gotEvents)
	require.Equal(b, 1.0, gotReloads)
	return apiSourceSection(apiSourceFigures{
		edits: edits, p50: p50, p99: p99, ruleFiles: ruleFiles, loaded: loaded,
		idleRSS: idleRSS, idleAnon: idleAnon, peak: peak, fullRSS: fullRSS, fullAnon: fullAnon,
		events: gotEvents, rewritten: len(rewritten), reloads: gotReloads,
	})
}

type apiSourceFigures struct {
	edits                                      int
	p50, p99, loaded                           time.Duration
	ruleFiles, rewritten                       int
	idleRSS, idleAnon, peak, fullRSS, fullAnon float64
	events, reloads                            float64
}

func apiSourceSection(f apiSourceFigures) string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
	met := func(ok bool) string { return map[bool]string{true: "met", false: "missed"}[ok] }
	var w strings.Builder
	fmt.Fprintf(&w, "## API source: ConfigMap update to reload request\n\n")
	fmt.Fprintf(&w, "The config-reloader binary of bin/ with `--config-secret` and `--rules-configmap-selector`, against a real\n")
	fmt.Fprintf(&w, "kube-apiserver and etcd on loopback, as a service account with the Role the controller grants; the reload\n")
	fmt.Fprintf(&w, "endpoint only records when each request arrives (e2e/apisource_bench_test.go, `make bench`). %d updates of\n", f.edits)
	fmt.Fprintf(&w, "a rule ConfigMap, %s apart, each timed from the update's return (the API server has stored it and sends\n", "250 ms")
	fmt.Fprintf(&w, "the watch event) to the reload request.\n\n")
	fmt.Fprintf(&w, "| measure | figure | target |\n|---|---|---|\n")
	fmt.Fprintf(&w, "| update → reload request, p50 | %s | ≤ 5 ms: %s |\n", ms(f.p50), met(f.p50 <= 5*time.Millisecond))
	fmt.Fprintf(&w, "| update → reload request, p99 | %s | ≤ 50 ms: %s |\n", ms(f.p99), met(f.p99 <= 50*time.Millisecond))
	fmt.Fprintf(&w, "| idle RSS (anonymous) | %.1f MiB (%.1f MiB) | ≤ 12 MiB: %s |\n", f.idleRSS, f.idleAnon, met(f.idleRSS <= 12))
	fmt.Fprintf(&w, "| peak RSS (VmHWM) with %d rule ConfigMaps of 4 KiB | %.1f MiB | ≤ 24 MiB: %s |\n", f.ruleFiles, f.peak, met(f.peak <= 24))
	fmt.Fprintf(&w, "| RSS (anonymous) holding them | %.1f MiB (%.1f MiB) | |\n", f.fullRSS, f.fullAnon)
	fmt.Fprintf(&w, "| one ConfigMap changed among %d: watch events, files rewritten, reloads | %.0f, %d, %.0f | 1, 1, 1: %s |\n",
		f.ruleFiles, f.events, f.rewritten, f.reloads, met(f.events == 1 && f.rewritten == 1 && f.reloads == 1))
	fmt.Fprintf(&w, "\nCreating the %d ConfigMaps one by one and the sidecar writing them all took %s.\n", f.ruleFiles, f.loaded.Round(time.Millisecond))
	return w.String()
}

// modTimes maps every file under dir to its modification time.
func modTimes(b *testing.B, dir string) map[string]time.Time {
	b.Helper()
	out := map[string]time.Time{}
	require.NoError(b, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		out[path] = fi.ModTime()
		return err
	}))
	return out
}
