package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podreload/podreload/internal/testenv/docsection"
)

// benchDocsEnv names the Markdown file whose "scale-*" sections
// BenchmarkScale and BenchmarkScaleOperator rewrite with their figures
// (make bench sets it).
const benchDocsEnv = "PODRELOAD_BENCH_DOCS"

// scaleFigures are what a BenchmarkScale run writes into the docs.
type scaleFigures struct {
	controller                      string
	create, converge, config, rules time.Duration
	writes                          auditSummary
	reconciles, cpu, peakRSS        float64
	size                            configSize
	ruleEdit, monitorEdit           editFigures
}

// writeScaleSection writes f into the section name of the file
// benchDocsEnv names, if it is set: one row of the side-by-side table,
// with the time, the load average and the writes by kind.
func writeScaleSection(b *testing.B, name string, f scaleFigures) {
	path := os.Getenv(benchDocsEnv)
	if path == "" {
		return
	}
	load, err := os.ReadFile("/proc/loadavg")
	must(b, err)
	var w strings.Builder
	w.WriteString("| controller | run (UTC) | creating | converge (config / rules) | writes (409) | reconciles | CPU | peak RSS | configuration gzipped, Secrets | rule ConfigMaps | rule edit: written, latency p50 / max | ServiceMonitor edit: the same |\n")
	w.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(&w, "| %s | %s | %.2f s | %.2f s (%.2f s / %.2f s) | %d (%d) | %.0f | %.2f s | %.1f MB | %.1f KB in %d | %d | %s | %s |\n",
		f.controller, time.Now().UTC().Format("2006-01-02 15:04"), f.create.Seconds(), f.converge.Seconds(), f.config.Seconds(), f.rules.Seconds(),
		f.writes.ok, f.writes.c409, f.reconciles, f.cpu, f.peakRSS/1e6, float64(f.size.gzipped)/1e3, f.size.secrets, f.size.ruleConfigMaps,
		f.ruleEdit, f.monitorEdit)
	fmt.Fprintf(&w, "\nLoad average at the end (1, 5, 15 min, running/total, last pid): %s. Writes by resource, verb and code (KB of request bodies): %s.\n",
		strings.TrimSpace(string(load)), f.writes)
	must(b, docsection.Replace(path, name, "cmd/controller/scale_test.go", w.String()))
}

// String is the bytes and latency of the edits: the largest, and the
// median and largest latency.
func (f editFigures) String() string {
	if len(f.bytes) == 0 {
		return ""
	}
	lat := slices.Sorted(slices.Values(f.latency))
	round := func(d time.Duration) time.Duration {
		if d >= time.Second {
			return d.Round(10 * time.Millisecond)
		}
		return d.Round(100 * time.Microsecond)
	}
	return fmt.Sprintf("%.1f KB, %v / %v", float64(slices.Max(f.bytes))/1e3, round(lat[len(lat)/2]), round(lat[len(lat)-1]))
}
