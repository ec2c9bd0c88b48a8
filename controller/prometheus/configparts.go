package prometheus

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/controller/promyaml"
)

// A configuration too large for the config Secret is split (prometheus-
// operator issue #4702): the config Secret keeps global, rule_files,
// alerting and remote_write, and names the Secrets of the scrape jobs,
// <secret>-1, <secret>-2..., in its scrape_config_files and on its
// leading contract.PartDirective lines, with the SHA-256 of each, so that the reloaders apply nothing before every part of one
// generation is there, and the content hash of the config Secret's key
// covers the whole.
const (
	// maxConfigBytes is the largest configuration file, uncompressed, a
	// reloader renders at its default --config-max-size (16 MiB): a
	// larger one is split, as one too large gzipped for a Secret is.
	maxConfigBytes = 16 << 20
	// maxPartBytes bounds the scrape jobs of a part, uncompressed: half
	// maxConfigBytes, for margin (it binds jobs that compress more than
	// 200 times only).
	maxPartBytes = 8 << 20
	// maxPartGzip bounds a part gzipped: half the API server's limit on a
	// Secret, as maxShardBytes is for a rule ConfigMap. Only a job that
	// does not fit partTarget alone makes a part that large, alone.
	maxPartGzip = 512 << 10
	// partTarget bounds a part of more than one job, gzipped: 42 KiB is
	// 56 KiB in base64, a rule ConfigMap's shardTarget, so that an edit
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
	// labelConfigPart marks the part Secrets of a server with their
	// number; they also carry labelConfig.
	labelConfigPart = "podreload.dev/config-part"
	// scrapeConfigsKey starts the scrape_configs section.
	scrapeConfigsKey = "scrape_configs:\n"
)

// ConfigPartName is the name of the i-th part Secret (from 1) of server.
func ConfigPartName(server *v1alpha1.PrometheusServer, i int) string {
	return ConfigSecretName(server) + "-" + strconv.Itoa(i)
}

// job is one scrape job, encoded as an item of scrape_configs.
type job struct {
	monitor int // index in configParts.monitors, or additionalMonitor
	name    string
	item    []byte
}

// splitConfig is a configuration split: the main one, gzipped, and its
// parts' Secrets.
type splitConfig struct {
	main, mainGzip []byte
	parts          []*corev1.Secret
	// rejected are the monitors left out: a job of theirs does not fit a
	// part alone.
	rejected []rejection
}

// split splits the configuration of p, whose global and rule_files
// sections are head, into a main configuration and parts: the jobs are
// cut into chunks (chunker) in the order of their monitors (namespace,
// name), and each goes into a part Secret, numbered in order. The main
// configuration holds no job: an edit of a monitor rewrites its part and
// the main configuration's line naming the part's hash, a few KiB, not
// the jobs of a part besides. A
// monitor with a job too large for a part alone is left out; an
// additional scrape configuration that large is an error. It uses up
// p.jobs: call it once.
func split(server *v1alpha1.PrometheusServer, head []byte, p configParts) (*splitConfig, error) {
	s := p.jobs
	if err := s.split(); err != nil {
		return nil, err
	}
	if err := s.close(); err != nil {
		return nil, err
	}
	main, mainGzip, err := mainConfig(server, head, p.rest, s.gzipped)
	if err != nil {
		return nil, err
	}
	out := &splitConfig{main: main, mainGzip: mainGzip, rejected: s.rejected}
	for i, gz := range s.gzipped {
		out.parts = append(out.parts, configPart(server, i+1, gz))
	}
	return out, nil
}

// jobStream holds the scrape jobs of a configuration as they are
// rendered, in order. While they may fit in the config Secret (up to
// maxConfigBytes) it keeps them all; past that, the configuration is
// split, and it cuts them into chunks as they come (chunker), gzips each
// chunk as it closes (or takes it from cache, when it did not change) and
// drops its jobs. At 20,000 endpoints (47 MB of jobs, encoded) a render
// peaked at 143 MB of heap holding every job, and at 81 MB this way.
type jobStream struct {
	// monitors are the monitors of the jobs (job.monitor).
	monitors []monitorRef
	// names are the names of the jobs, in order.
	names []string
	// jobs are the jobs held until splitting: all of them.
	jobs []job
	// size is the size of jobs' items, until splitting.
	size      int
	splitting bool
	chunker   chunker
	// gzipped are the chunks, gzipped.
	gzipped [][]byte
	// cache keeps the gzipped chunks from one render to the next; nil
	// compresses every chunk.
	cache *partCache
	// rejected are the monitors left out: a job of theirs is too large
	// for a part alone.
	rejected []rejection
}

// add adds js, the jobs of one monitor, encoded, in order.
func (s *jobStream) add(js []job) error {
	for _, j := range js {
		s.names = append(s.names, j.name)
	}
	if s.splitting {
		return s.addSplit(js)
	}
	s.jobs = append(s.jobs, js...)
	for _, j := range js {
		s.size += len(j.item)
	}
	if s.size <= maxConfigBytes {
		return nil
	}
	return s.split()
}

// addSplit adds js, the jobs of one monitor, to the chunks, unless one
// of them is too large for a part alone.
func (s *jobStream) addSplit(js []job) error {
	if large, err := s.tooLarge(js); err != nil || large {
		return err
	}
	s.chunker.cache = s.cache
	for _, j := range js {
		for _, c := range s.chunker.add(j) {
			if err := s.gzip(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// split starts splitting, when not already: the jobs held are added to
// the chunks (addSplit), monitor by monitor.
func (s *jobStream) split() error {
	if s.splitting {
		return nil
	}
	held := s.jobs
	s.jobs, s.size, s.splitting = nil, 0, true
	for start := 0; start < len(held); {
		end := start + 1
		for end < len(held) && held[end].monitor == held[start].monitor {
			end++
		}
		if err := s.addSplit(held[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// tooLarge reports whether a job of js is too large for a part alone, and
// if so leaves out the monitor of js: it adds its rejection, or returns
// an error for the additional scrape configurations. A job of fewer bytes
// than maxPartGzip, but 1 KiB, fits without a try: deflate writes a block
// that does not compress stored, 5 bytes more per 64 KiB, and gzip adds
// 18 bytes.
func (s *jobStream) tooLarge(js []job) (bool, error) {
	for _, j := range js {
		if len(scrapeConfigsKey)+len(j.item) <= maxPartGzip-1024 {
			continue
		}
		_, err := gzipConfig(maxPartGzip, []byte(scrapeConfigsKey), j.item)
		var sizeErr *sizeError
		switch {
		case err == nil:
			continue
		case !errors.As(err, &sizeErr):
			return false, err
		case j.monitor == additionalMonitor:
			return true, fmt.Errorf("spec.additionalScrapeConfigs: job %q is more than the %d bytes, gzipped, a part of the configuration holds", j.name, maxPartGzip)
		}
		m := s.monitors[j.monitor]
		s.rejected = append(s.rejected, rejection{Kind: m.kind, Namespace: m.namespace, Name: m.name,
			Reason: fmt.Sprintf("a scrape job of it is more than the %d bytes, gzipped, a part of the configuration holds", maxPartGzip)})
		return true, nil
	}
	return false, nil
}

// close gzips the open chunk, if any.
func (s *jobStream) close() error {
	if c := s.chunker.close(); len(c) > 0 {
		return s.gzip(c)
	}
	return nil
}

// gzip gzips the chunk c as parts (gzipChunks).
func (s *jobStream) gzip(c []job) error {
	gzipped, err := gzipChunks(s.cache, c)
	if err != nil {
		return err
	}
	s.gzipped = append(s.gzipped, gzipped...)
	return nil
}

// gzipChunks gzips the chunk c as a part, halving it while it is too
// large gzipped (more than partTarget, or maxPartGzip for a job alone),
// and returns the parts that result, gzipped, through cache. Every job of
// c fits a part alone (jobStream.tooLarge); the chunker's estimate keeps
// chunks of several jobs within partTarget but in rare cases.
func gzipChunks(cache *partCache, c []job) ([][]byte, error) {
	var gzipped [][]byte
	for chunks := [][]job{c}; len(chunks) > 0; {
		c := chunks[0]
		chunks = chunks[1:]
		parts := make([][]byte, 0, len(c)+1)
		parts = append(parts, []byte(scrapeConfigsKey))
		for _, j := range c {
			parts = append(parts, j.item)
		}
		limit := partTarget
		if len(c) == 1 {
			limit = maxPartGzip
		}
		gz, err := cache.gzip(limit, parts)
		var sizeErr *sizeError
		switch {
		case err == nil:
			gzipped = append(gzipped, gz)
		case !errors.As(err, &sizeErr) || len(c) == 1:
			return nil, err
		default:
			chunks = append([][]job{c[:len(c)/2], c[len(c)/2:]}, chunks...)
		}
	}
	return gzipped, nil
}

// partCache keeps the gzipped parts of a configuration, by the SHA-256 of
// their content, from one render to the next: a render compresses only
// the parts that changed. A burst that adds monitors changes the parts
// they land in (chunker), not the others: at 20,000 endpoints, each render
// compressed 10 parts of some 4.6 MB at the best level, most of its time.
// It keeps the chunker's estimates the same way, by estimateKey. It keeps
// those of the last render and of the current one; the zero
// value is ready, and a nil *partCache compresses every part. It is safe
// for concurrent use.
type partCache struct {
	mu         sync.Mutex
	last, next map[[sha256.Size]byte][]byte
	// lastEst and nextEst are the estimates of the last render and of
	// the current one.
	lastEst, nextEst map[estimateKey]int
}

// gzip returns the content made of parts gzipped (gzipConfig, within
// limit), as last compressed when it was.
func (c *partCache) gzip(limit int, parts [][]byte) ([]byte, error) {
	if c == nil {
		return gzipConfig(limit, parts...)
	}
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	c.mu.Lock()
	gz, ok := c.last[sum]
	c.mu.Unlock()
	if !ok || len(gz) > limit {
		var err error
		if gz, err = gzipConfig(limit, parts...); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next == nil {
		c.next = map[[sha256.Size]byte][]byte{}
	}
	c.next[sum] = gz
	return gz, nil
}

// estimate returns the chunker's estimate for key, if the last render or
// this one made it.
func (c *partCache) estimate(key estimateKey) (int, bool) {
	if c == nil {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	est, ok := c.nextEst[key]
	if !ok {
		if est, ok = c.lastEst[key]; ok {
			c.setEstimateLocked(key, est)
		}
	}
	return est, ok
}

// setEstimate keeps est, the chunker's estimate for key.
func (c *partCache) setEstimate(key estimateKey, est int) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setEstimateLocked(key, est)
}

func (c *partCache) setEstimateLocked(key estimateKey, est int) {
	if c.nextEst == nil {
		c.nextEst = map[estimateKey]int{}
	}
	c.nextEst[key] = est
}

// rotate ends a render: the parts and estimates it made or reused are
// kept for the next one, the others dropped.
func (c *partCache) rotate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last, c.next = c.next, nil
	c.lastEst, c.nextEst = c.nextEst, nil
}

// mainConfig returns the main configuration of a split one, plain and
// gzipped: the part directives naming gzipped, head,
// scrape_config_files, no scrape job, and rest.
func mainConfig(server *v1alpha1.PrometheusServer, head, rest []byte, gzipped [][]byte) ([]byte, []byte, error) {
	var b []byte
	for i, gz := range gzipped {
		b = contract.AppendPartDirective(b, ConfigPartName(server, i+1), gz)
	}
	b = append(b, head...)
	if len(gzipped) > 0 {
		b = append(b, "scrape_config_files:\n"...)
		for i := range gzipped {
			b = append(b, "- "...)
			b = promyaml.AppendString(b, contract.PartPath(ConfigPartName(server, i+1)))
			b = append(b, '\n')
		}
	}
	b = append(b, "scrape_configs: []\n"...)
	b = append(b, rest...)
	gz, err := gzipConfig(corev1.MaxSecretSize, b)
	if err != nil {
		return nil, nil, err
	}
	if len(b) > maxConfigBytes {
		return nil, nil, &sizeError{size: len(b), gzipped: len(gz), limit: corev1.MaxSecretSize}
	}
	return b, gz, nil
}

// configPart is the i-th part Secret of server, holding gz.
func configPart(server *v1alpha1.PrometheusServer, i int, gz []byte) *corev1.Secret {
	s := configSecret(server, gz)
	s.Name = ConfigPartName(server, i)
	s.Labels[labelConfigPart] = strconv.Itoa(i)
	return s
}

// isConfigPart reports whether name is the name of a part Secret of
// server.
func isConfigPart(server *v1alpha1.PrometheusServer, name string) bool {
	rest, ok := strings.CutPrefix(name, ConfigSecretName(server)+"-")
	n, err := strconv.Atoi(rest)
	return ok && err == nil && n > 0 && strconv.Itoa(n) == rest
}

// partSlots is the number of part Secrets the pods of a server can read
// without a change for parts of them (none without parts): parts rounded
// up to a multiple of 4, or, from 32 parts, of the largest power of two
// no more than an eighth of them (8 from 32, 16 from 64...). The Role of
// the API source names them; the volume source mounts them (optional),
// and its pods restart when the count changes: parts of some 20 KiB
// gzipped come and go with the configuration's size (some 150 for 20,000
// endpoints whose jobs compress 19 times), so the margin grows with them,
// 12 to 25 % past 32 parts, rather than a change of the pods every 4
// parts.
func partSlots(parts int) int {
	step := ruleVolumeStep
	for step*8 <= parts {
		step *= 2
	}
	return (parts + step - 1) / step * step
}

// partSecretNames are the names of the part Secrets of server its pods
// can read, slots of them.
func partSecretNames(server *v1alpha1.PrometheusServer, slots int) []string {
	names := make([]string, slots)
	for i := range names {
		names[i] = ConfigPartName(server, i+1)
	}
	return names
}
