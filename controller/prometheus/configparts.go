package prometheus

import (
	"compress/flate"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/contract"
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

// chunker cuts jobs, added one by one, into chunks for the parts, by
// their size gzipped, which the jobs' own size does not tell: they
// compress 10 to 30 times when they differ (credentials, label values),
// more than 100 times when they differ by their names only. Once a
// chunk's estimate (below) is minPartEstimate, a job ends it with a
// probability of the estimate it adds in partSpacing, drawn from the hash
// of its name (boundary). A chunk that would pass maxPartEstimate without
// such a job ends after the job of the lowest hash past the minimum
// (candidate), else at its last flush, and the jobs after that start the
// next chunk; one passing maxPartBytes of jobs ends before the job that
// would; a job whose estimate passes maxPartEstimate alone is a chunk
// alone. Where a chunk ends depends on its own jobs only, not on those
// before it, and mostly on the jobs around its end: a change to a monitor
// changes the chunk it is in, and the next one when it moves the end of
// its own (1 edit in 75 in TestChunkJobsStable); the other chunks keep
// their jobs.
//
// The estimate is the size of the chunk deflated at the default level
// (close to the best level's size, which partCache writes: 7 % above it
// for jobs that compress 11 times, 17 % for those of the benchmark, where
// BestSpeed's is 2 to 4 times it), with a flush after every flushEvery
// bytes of jobs, at most the margin left to maxPartEstimate: a flush ends
// a deflate block, so the count of its output is exact there, at the cost
// of a block header. Between flushes the estimate is extrapolated at the
// chunk's ratio (boundary). Deflating is what the chunker costs: some 0.2 s
// of CPU for the 47 MB of jobs of 20,000 endpoints, a render from nothing
// taking 0.80 s instead of 0.59 s with parts of 4 to 8 MiB of jobs (3.9 s
// instead of 3.0 s for jobs that compress 19 times, 60 MB of them, whose
// small parts the best level also compresses one by one). The estimates
// at each flush are kept in partCache by a hash of the chunk's jobs up to
// there, so that a render deflates the chunks that changed since the
// previous one only: after an edit, 0.42 s as before (1.8 s instead of
// 2.0 s for those jobs, which no longer compress a part of 5 MB of jobs
// again). BenchmarkSplitEdit, CPU time.
type chunker struct {
	// cache keeps the estimates from one render to the next; nil
	// deflates every job.
	cache *partCache
	jobs  []job
	// size is the size of jobs' items.
	size int
	// digest hashes the items of jobs, the key of the estimates in cache.
	digest xxhash.Digest
	// flushes are the numbers of jobs of the chunk at each flush, in
	// order.
	flushes []int
	// est is the estimate at the last flush, of the first flushedSize
	// bytes of items; unflushed is the size of the items after them.
	est, flushedSize, unflushed int
	// backup is the number of jobs up to the candidate end (candidate)
	// up to the last flush, 0 for none, and backupHash its hash; next and
	// nextHash are those of the jobs after the last flush.
	backup, next         int
	backupHash, nextHash uint64
	// w deflates jobs[:fed] into out (and scrapeConfigsKey first), with
	// the flushes there, as far as an estimate needed.
	w   *flate.Writer
	out byteCounter
	fed int
	// deflated counts the bytes of jobs deflated, for the tests.
	deflated int
}

// add adds j and returns the chunks that closed: none, one or more.
func (c *chunker) add(j job) [][]job {
	var closed [][]job
	for pending := []job{j}; len(pending) > 0; {
		j := pending[0]
		pending = pending[1:]
		if c.size > 0 && c.size+len(j.item) > maxPartBytes {
			closed = append(closed, c.close())
		}
		if c.unflushed > 0 && c.unflushed+len(j.item) > c.flushEvery() {
			if cut, rest := c.flush(); cut != nil {
				closed = append(closed, cut)
				pending = slices.Concat(rest, []job{j}, pending)
				continue
			}
		}
		c.jobs = append(c.jobs, j)
		c.size += len(j.item)
		c.unflushed += len(j.item)
		var n [binary.MaxVarintLen64]byte
		_, _ = c.digest.Write(binary.AppendUvarint(n[:0], uint64(len(j.item))))
		_, _ = c.digest.Write(j.item)
		if c.unflushed >= c.flushEvery() {
			if cut, rest := c.flush(); cut != nil {
				closed = append(closed, cut)
				pending = append(rest, pending...)
				continue
			}
		}
		if c.boundary(j) {
			closed = append(closed, c.close())
		}
	}
	return closed
}

// boundary reports whether j, the chunk's last job, ends it: once the
// chunk's estimate is minPartEstimate, j does with a probability of the
// estimate it adds in partSpacing, drawn from the hash of its name, so
// that a chunk ends every partSpacing bytes of estimate after that on
// average, however many jobs that is. Between flushes, the estimate of
// the jobs since the last one is their size at the chunk's ratio there:
// an edit of a job moves the estimates after it in its chunk by about
// what it adds, as it moves the chunk's size gzipped. In integers: the
// same jobs, the same chunks, on any machine.
func (c *chunker) boundary(j job) bool {
	if c.flushedSize == 0 {
		return false
	}
	est, size := uint64(c.est), uint64(c.flushedSize)
	if est+uint64(c.unflushed)*est/size < minPartEstimate {
		return false
	}
	// est < 2^17 (maxPartEstimate) and the size counted < 2^24: no
	// overflow; a job of 2^24 bytes is a boundary anyway.
	threshold := uint64(min(len(j.item), 1<<24)) * est << 20 / (size * partSpacing)
	h := xxhash.Sum64String(j.name) >> 44
	if h < threshold {
		return true
	}
	c.candidate(h)
	return false
}

// candidate notes the chunk's last job, past minPartEstimate, whose name
// hashes to h, as where to end the chunk should it reach
// maxPartEstimate without a boundary: of those up to the last flush (the
// estimate within maxPartEstimate), the one of the lowest hash, which
// depends on the jobs around it, not on where the chunk started, nor
// on where its flushes fell.
func (c *chunker) candidate(h uint64) {
	switch {
	case c.unflushed == 0 && (c.backup == 0 || h < c.backupHash):
		c.backup, c.backupHash = len(c.jobs), h
	case c.unflushed > 0 && (c.next == 0 || h < c.nextHash):
		c.next, c.nextHash = len(c.jobs), h
	}
}

// flushEvery is the size of jobs after which the estimate is flushed:
// the margin left to maxPartEstimate (jobs gzip to no more than their
// size, but for a few bytes), at least 4 KiB, at most 64 KiB.
func (c *chunker) flushEvery() int {
	return min(max(maxPartEstimate-c.est, 4<<10), 64<<10)
}

// flush flushes the estimate. When it passes maxPartEstimate, it closes
// the chunk and returns the jobs up to its candidate end (candidate), or
// else before the last flush, or else all of them, the chunk closed, and
// the others, to add to the next chunk.
func (c *chunker) flush() (cut, rest []job) {
	est := c.estimate()
	if est <= maxPartEstimate {
		c.flushes = append(c.flushes, len(c.jobs))
		c.est, c.flushedSize, c.unflushed = est, c.size, 0
		if c.next > 0 && (c.backup == 0 || c.nextHash < c.backupHash) {
			c.backup, c.backupHash = c.next, c.nextHash
		}
		c.next = 0
		return nil, nil
	}
	n := len(c.jobs)
	switch {
	case c.backup > 0:
		n = c.backup
	case len(c.flushes) > 0:
		n = c.flushes[len(c.flushes)-1]
	}
	jobs := c.close()
	return jobs[:n:n], jobs[n:]
}

// estimate returns the chunk's size deflated with a flush after each of
// c.flushes and after its last job, from cache or deflated.
func (c *chunker) estimate() int {
	key := estimateKey{sum: c.digest.Sum64(), jobs: len(c.jobs), size: c.size}
	if est, ok := c.cache.estimate(key); ok {
		return est
	}
	if c.fed == 0 {
		if c.w == nil {
			// Only an invalid level is an error.
			c.w, _ = flate.NewWriter(&c.out, flate.DefaultCompression)
		}
		c.out = 0
		c.w.Reset(&c.out)
		// A byteCounter takes every write: the writer cannot fail.
		_, _ = c.w.Write([]byte(scrapeConfigsKey))
	}
	for c.fed < len(c.jobs) {
		_, _ = c.w.Write(c.jobs[c.fed].item)
		c.deflated += len(c.jobs[c.fed].item)
		c.fed++
		if _, ok := slices.BinarySearch(c.flushes, c.fed); ok {
			_ = c.w.Flush()
		}
	}
	_ = c.w.Flush()
	c.cache.setEstimate(key, int(c.out))
	return int(c.out)
}

// close closes the open chunk and returns it.
func (c *chunker) close() []job {
	jobs := c.jobs
	c.jobs, c.size, c.flushes, c.est, c.flushedSize, c.unflushed, c.fed = nil, 0, nil, 0, 0, 0, 0
	c.backup, c.next = 0, 0
	c.digest.Reset()
	return jobs
}

// byteCounter counts the bytes written to it.
type byteCounter int

func (n *byteCounter) Write(p []byte) (int, error) {
	*n += byteCounter(len(p))
	return len(p), nil
}

// estimateKey names the jobs of a chunk up to a flush: their hash
// (chunker.digest), number and size.
type estimateKey struct {
	sum        uint64
	jobs, size int
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
			b = appendYAMLString(b, contract.PartPath(ConfigPartName(server, i+1)))
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
