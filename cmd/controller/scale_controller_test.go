package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// runningController is the controller binary, started by a benchmark.
type runningController struct {
	cmd    *exec.Cmd
	addr   string
	log    string
	exited chan struct{}
	err    error // Set when exited is closed.
}

// startController runs bin against the API server of kubeconfig, until
// it is ready to serve.
func startController(b *testing.B, bin, kubeconfig string) *runningController {
	dir := b.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(b, err)
	addr := l.Addr().String()
	must(b, l.Close())
	logFile, err := os.Create(filepath.Join(dir, "controller.log"))
	must(b, err)
	r := &runningController{addr: addr, log: logFile.Name(), exited: make(chan struct{})}
	r.cmd = exec.Command(bin, "--kubeconfig="+kubeconfig, "--web.listen-address="+addr)
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	must(b, r.cmd.Start())
	go func() {
		r.err = r.cmd.Wait()
		logFile.Close()
		close(r.exited)
	}()
	b.Cleanup(func() {
		select {
		case <-r.exited:
		default:
			_ = r.cmd.Process.Kill() // It may have just exited: Wait says how it ended.
			<-r.exited
		}
		if b.Failed() {
			r.tail(b)
		}
	})
	waitUntil(b, r, "the controller to be ready", time.Minute, func() bool {
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return r
}

// tail logs the last lines of the controller's log.
func (r *runningController) tail(b *testing.B) {
	data, err := os.ReadFile(r.log)
	if err != nil {
		b.Log(err)
		return
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	b.Logf("the controller's log (%d lines), last lines:\n%s", len(lines), strings.Join(lines[max(len(lines)-40, 0):], "\n"))
}

// count returns the lines of the controller's log that hold s.
func (r *runningController) count(b *testing.B, s string) int {
	data, err := os.ReadFile(r.log)
	must(b, err)
	return bytes.Count(data, []byte(s))
}

// waitUntil polls cond every 10 ms until it holds; it fails when timeout
// passes first or the controller exits.
func waitUntil(b *testing.B, r *runningController, what string, timeout time.Duration, cond func() bool) {
	b.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-r.exited:
			b.Fatalf("waiting for %s: the controller exited: %v", what, r.err)
		case <-deadline.C:
			b.Fatalf("waiting for %s: not done after %v", what, timeout)
		}
	}
}

// counts are sums of the controller's counters.
type counts struct {
	writes, reconciles, requests float64
	writesBy, requestsBy         series
	// cpu is the controller's CPU time, reconcileTime the time its
	// reconciliations took, in seconds.
	cpu, reconcileTime float64
	// heap are the Go heap gauges: in use, obtained from the system, and
	// the next GC's goal.
	heap [3]float64
}

func (c counts) String() string {
	return fmt.Sprintf("%.0f writes, %.0f reconciles, %.0f API requests; Go heap in use %.1f MB, from the system %.1f MB, GC goal %.1f MB",
		c.writes, c.reconciles, c.requests, c.heap[0]/1e6, c.heap[1]/1e6, c.heap[2]/1e6)
}

// series are counter values by label values.
type series map[string]float64

// minus returns the increase of s since old, without the series that did
// not increase.
func (s series) minus(old series) string {
	var parts []string
	for k, v := range s {
		if d := v - old[k]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s=%.0f", k, d))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// scrape reads the controller's counters from its /metrics.
func (r *runningController) scrape() (counts, error) {
	resp, err := http.Get("http://" + r.addr + "/metrics")
	if err != nil {
		return counts{}, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return counts{}, fmt.Errorf("parse the controller's metrics: %w", err)
	}
	c := counts{writesBy: series{}, requestsBy: series{}}
	sum := func(name string, by []string, into series) float64 {
		var total float64
		for _, m := range families[name].GetMetric() {
			v := m.GetCounter().GetValue()
			total += v
			if into != nil {
				var key []string
				for _, l := range m.GetLabel() {
					if slices.Contains(by, l.GetName()) {
						key = append(key, l.GetValue())
					}
				}
				into[strings.Join(key, "/")] += v
			}
		}
		return total
	}
	c.writes = sum("podreload_controller_writes_total", []string{"kind", "verb"}, c.writesBy)
	c.reconciles = sum("podreload_controller_reconciles_total", nil, nil)
	c.requests = sum("rest_client_requests_total", []string{"code", "method"}, c.requestsBy)
	c.cpu = sum("process_cpu_seconds_total", nil, nil)
	for _, m := range families["podreload_controller_reconcile_duration_seconds"].GetMetric() {
		c.reconcileTime += m.GetHistogram().GetSampleSum()
	}
	for i, name := range []string{"go_memstats_heap_inuse_bytes", "go_memstats_heap_sys_bytes", "go_memstats_next_gc_bytes"} {
		for _, m := range families[name].GetMetric() {
			c.heap[i] = m.GetGauge().GetValue()
		}
	}
	return c, nil
}

// settle waits until the controller's writes and reconciles have not
// changed for a second, and returns its counters then.
func (r *runningController) settle(b *testing.B) counts {
	b.Helper()
	var last counts
	var since time.Time
	waitUntil(b, r, "the controller to settle", time.Minute, func() bool {
		c, err := r.scrape()
		if err != nil {
			b.Logf("scrape the controller: %v", err)
			return false
		}
		if c.writes != last.writes || c.reconciles != last.reconciles || since.IsZero() {
			last, since = c, time.Now()
			return false
		}
		return time.Since(since) >= time.Second
	})
	return last
}

// memory is the RSS of a process, in bytes.
type memory struct{ peak, now, anon float64 }

func (m memory) String() string {
	return fmt.Sprintf("peak RSS %.1f MB, RSS %.1f MB (anonymous %.1f MB)", m.peak/1e6, m.now/1e6, m.anon/1e6)
}

// rss reads the controller's memory from /proc.
func (r *runningController) rss(b *testing.B) memory {
	return procMemory(b, r.cmd.Process.Pid)
}

// procMemory reads the memory of the process pid from /proc.
func procMemory(b *testing.B, pid int) memory {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	must(b, err)
	defer f.Close()
	var m memory
	fields := map[string]*float64{"VmHWM:": &m.peak, "VmRSS:": &m.now, "RssAnon:": &m.anon}
	s := bufio.NewScanner(f)
	for s.Scan() {
		f := strings.Fields(s.Text())
		if p, ok := fields[f[0]]; ok && len(f) == 3 && f[2] == "kB" {
			kb, err := strconv.ParseFloat(f[1], 64)
			must(b, err)
			*p = kb * 1024
		}
	}
	must(b, s.Err())
	if m.peak == 0 || m.now == 0 {
		b.Fatalf("no VmHWM or VmRSS in /proc/%d/status", pid)
	}
	return m
}

// stop sends SIGTERM to the controller and checks it exits 0.
func (r *runningController) stop(b *testing.B) {
	b.Helper()
	must(b, r.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-r.exited:
		if r.err != nil {
			b.Fatalf("the controller stopped with %v", r.err)
		}
	case <-time.After(30 * time.Second):
		b.Fatal("the controller did not stop within 30s of SIGTERM")
	}
}
