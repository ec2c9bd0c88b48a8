// Package configsecret is a Prometheus configuration as the gzipped
// Secret(s) that hold it: the gzip both the configuration and its parts
// are written with, and, for a configuration too large for one Secret
// (prometheus-operator issue #4702), its scrape jobs streamed as they are
// rendered (Stream), cut into chunks that keep their ends after an edit
// (chunker), gzipped into parts through a cache from one render to the
// next (Cache), and the main configuration that names the parts (Split).
// It knows the names of the parts from the name of the config Secret and
// nothing of a kind. It is pure: it imports no client.
//
// A configuration too large for the config Secret is split: the config
// Secret keeps global, rule_files, alerting and remote_write, and names
// the Secrets of the scrape jobs, <secret>-1, <secret>-2..., in its
// scrape_config_files and on its leading contract.PartDirective lines,
// with the SHA-256 of each, so that the reloaders apply nothing before
// every part of one generation is there, and the content hash of the
// config Secret's key covers the whole.
//
// Where things are:
//
//	configsecret.go  the limits, Job, Gzip, the names of the parts and their slots
//	stream.go        Stream: the jobs as they are rendered; Split
//	chunks.go        chunker: where the chunks of jobs end
//	cache.go         Cache: the gzipped parts (or whole configuration) and the estimates of the last render
package configsecret

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"strconv"
	"strings"
)

const (
	// MaxConfigBytes is the largest configuration file, uncompressed, a
	// reloader renders at its default --config-max-size (16 MiB): a
	// larger one is split, as one too large gzipped for a Secret is.
	MaxConfigBytes = 16 << 20
	// maxPartBytes bounds the scrape jobs of a part, uncompressed: half
	// MaxConfigBytes, for margin (it binds jobs that compress more than
	// 200 times only).
	maxPartBytes = 8 << 20
	// maxPartGzip bounds a part gzipped: half the API server's limit on a
	// Secret, as the rule ConfigMaps' shard limit is. Only a job that
	// does not fit partTarget alone makes a part that large, alone.
	maxPartGzip = 512 << 10
	// partTarget bounds a part of more than one job, gzipped: 42 KiB is
	// 56 KiB in base64, a rule ConfigMap's shard target, so that an edit
	// of a monitor writes a part Secret of under 64 KiB as sent to the
	// API server and to every watcher, metadata included, whatever its
	// jobs compress to.
	partTarget = 42 << 10
	// minPartEstimate, partSpacing and maxPartEstimate size the chunks by
	// their size as the chunker estimates it gzipped: a chunk ends, once
	// its estimate is minPartEstimate, every partSpacing bytes of estimate
	// on average (chunker.boundary), and before its estimate passes
	// maxPartEstimate, some 20 KiB on average. maxPartEstimate leaves
	// partTarget a margin for the jobs after the estimate's last flush
	// (the best level's size is some 7 % under the estimate). A minimum
	// of about the spacing keeps the ends of chunks where they were after
	// an edit: with a minimum of 11 spacings (26 KiB, one job in 16), one
	// job added moved the ends of the ten chunks after its own; with 12
	// KiB and 12 KiB, one edit in 75 moved the end of its chunk
	// (TestChunkJobsStable), and 16 KiB and 14 KiB (11 % fewer parts) made
	// it 5 in 75.
	minPartEstimate = 12 << 10
	partSpacing     = 12 << 10
	maxPartEstimate = 40 << 10
	// ScrapeConfigsKey starts the scrape_configs section.
	ScrapeConfigsKey = "scrape_configs:\n"
	// Additional is the Job.Monitor of the additional scrape
	// configurations.
	Additional = -1
)

// Job is one scrape job, encoded as an item of scrape_configs.
type Job struct {
	// Monitor is the index of the job's monitor in Stream.Monitors, or
	// Additional.
	Monitor int
	// Name is the job's job_name.
	Name string
	// Item is the job encoded, from its "- " on.
	Item []byte
}

// Monitor names an object whose jobs a configuration holds: a
// ServiceMonitor, a PodMonitor, a Probe or a ScrapeConfig.
type Monitor struct {
	Kind, Namespace, Name string
}

// Rejected is a monitor left out of a split configuration, and why.
type Rejected struct {
	Monitor
	// Reason names the cause.
	Reason string
}

// Gzip compresses the configuration made of parts deterministically:
// the gzip header has no file name and no modification time, so the same
// configuration gives the same bytes (as long as compress/flate, which may
// change between Go releases, does). It compresses at the best
// compression, as the rule files are: a configuration of 3,000 scrape
// jobs (7.4 MB) is 57 KB in 50 ms, against 192 KB in 12 ms at the best
// speed and 64 KB in 21 ms at the default level (prometheus-operator's,
// 54 KB for the configuration of BenchmarkScale); a configuration that
// did not change is not compressed again (the caller keeps it), and a
// burst is rendered a few times only. A result of more than limit bytes
// is a *SizeError.
func Gzip(limit int, parts ...[]byte) ([]byte, error) {
	size := 0
	for _, p := range parts {
		size += len(p)
	}
	var buf bytes.Buffer
	buf.Grow(size/64 + 512)
	w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, fmt.Errorf("gzip config: %w", err)
	}
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return nil, fmt.Errorf("gzip config: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("gzip config: %w", err)
	}
	if buf.Len() > limit {
		return nil, &SizeError{size: size, gzipped: buf.Len(), limit: limit}
	}
	return buf.Bytes(), nil
}

// SizeError is a configuration of size bytes, gzipped bytes compressed,
// more than limit.
type SizeError struct{ size, gzipped, limit int }

// Error tells the sizes and the limit.
func (e *SizeError) Error() string {
	return fmt.Sprintf("gzip config: prometheus.yaml is %d bytes, %d gzipped, more than the %d bytes a Secret holds", e.size, e.gzipped, e.limit)
}

// PartName is the name of the i-th part Secret (from 1) of the config
// Secret named secret.
func PartName(secret string, i int) string {
	return secret + "-" + strconv.Itoa(i)
}

// IsPart reports whether name is the name of a part Secret of the config
// Secret named secret.
func IsPart(secret, name string) bool {
	rest, ok := strings.CutPrefix(name, secret+"-")
	n, err := strconv.Atoi(rest)
	return ok && err == nil && n > 0 && strconv.Itoa(n) == rest
}

// PartSlots is the number of part Secrets the pods of a server can read
// without a change for parts of them (none without parts): parts rounded
// up to a multiple of step, or, from 8 steps, of the largest power of two
// times step no more than an eighth of them (with a step of 4: 8 from 32,
// 16 from 64...). The Role of the API source names them; the volume
// source mounts them (optional), and its pods restart when the count
// changes: parts of some 20 KiB gzipped come and go with the
// configuration's size (some 150 for 20,000 endpoints whose jobs compress
// 19 times), so the margin grows with them, 12 to 25 % past 32 parts,
// rather than a change of the pods every 4 parts.
func PartSlots(parts, step int) int {
	for step*8 <= parts {
		step *= 2
	}
	return (parts + step - 1) / step * step
}

// PartNames are the names of the part Secrets of the config Secret named
// secret that its pods can read, slots of them.
func PartNames(secret string, slots int) []string {
	names := make([]string, slots)
	for i := range names {
		names[i] = PartName(secret, i+1)
	}
	return names
}
