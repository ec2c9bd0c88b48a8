package configsecret

import (
	"compress/flate"
	"encoding/binary"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// chunker cuts jobs, added one by one, into chunks for the parts, by
// their size gzipped, which the jobs' own size does not tell: they
// compress 10 to 30 times when they differ (credentials, label values),
// more than 100 times when they differ by their names only. Once a
// chunk's estimate (below) is minPartEstimate, a Job ends it with a
// probability of the estimate it adds in partSpacing, drawn from the hash
// of its name (boundary). A chunk that would pass maxPartEstimate without
// such a Job ends after the Job of the lowest hash past the minimum
// (candidate), else at its last flush, and the jobs after that start the
// next chunk; one passing maxPartBytes of jobs ends before the Job that
// would; a Job whose estimate passes maxPartEstimate alone is a chunk
// alone. Where a chunk ends depends on its own jobs only, not on those
// before it, and mostly on the jobs around its end: a change to a monitor
// changes the chunk it is in, and the next one when it moves the end of
// its own (1 edit in 75 in TestChunkJobsStable); the other chunks keep
// their jobs.
//
// The estimate is the size of the chunk deflated at the default level
// (close to the best level's size, which Cache writes: 7 % above it
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
// at each flush are kept in Cache by a hash of the chunk's jobs up to
// there, so that a render deflates the chunks that changed since the
// previous one only: after an edit, 0.42 s as before (1.8 s instead of
// 2.0 s for those jobs, which no longer compress a part of 5 MB of jobs
// again). BenchmarkSplitEdit, CPU time.
type chunker struct {
	// cache keeps the estimates from one render to the next; nil
	// deflates every job.
	cache *Cache
	jobs  []Job
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
	// w deflates jobs[:fed] into out (and ScrapeConfigsKey first), with
	// the flushes there, as far as an estimate needed.
	w   *flate.Writer
	out byteCounter
	fed int
	// deflated counts the bytes of jobs deflated, for the tests.
	deflated int
}

// add adds j and returns the chunks that closed: none, one or more.
func (c *chunker) add(j Job) [][]Job {
	var closed [][]Job
	for pending := []Job{j}; len(pending) > 0; {
		j := pending[0]
		pending = pending[1:]
		if c.size > 0 && c.size+len(j.Item) > maxPartBytes {
			closed = append(closed, c.close())
		}
		if c.unflushed > 0 && c.unflushed+len(j.Item) > c.flushEvery() {
			if cut, rest := c.flush(); cut != nil {
				closed = append(closed, cut)
				pending = slices.Concat(rest, []Job{j}, pending)
				continue
			}
		}
		c.jobs = append(c.jobs, j)
		c.size += len(j.Item)
		c.unflushed += len(j.Item)
		var n [binary.MaxVarintLen64]byte
		_, _ = c.digest.Write(binary.AppendUvarint(n[:0], uint64(len(j.Item))))
		_, _ = c.digest.Write(j.Item)
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

// boundary reports whether j, the chunk's last Job, ends it: once the
// chunk's estimate is minPartEstimate, j does with a probability of the
// estimate it adds in partSpacing, drawn from the hash of its name, so
// that a chunk ends every partSpacing bytes of estimate after that on
// average, however many jobs that is. Between flushes, the estimate of
// the jobs since the last one is their size at the chunk's ratio there:
// an edit of a Job moves the estimates after it in its chunk by about
// what it adds, as it moves the chunk's size gzipped. In integers: the
// same jobs, the same chunks, on any machine.
func (c *chunker) boundary(j Job) bool {
	if c.flushedSize == 0 {
		return false
	}
	est, size := uint64(c.est), uint64(c.flushedSize)
	if est+uint64(c.unflushed)*est/size < minPartEstimate {
		return false
	}
	// est < 2^17 (maxPartEstimate) and the size counted < 2^24: no
	// overflow; a Job of 2^24 bytes is a boundary anyway.
	threshold := uint64(min(len(j.Item), 1<<24)) * est << 20 / (size * partSpacing)
	h := xxhash.Sum64String(j.Name) >> 44
	if h < threshold {
		return true
	}
	c.candidate(h)
	return false
}

// candidate notes the chunk's last Job, past minPartEstimate, whose name
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
func (c *chunker) flush() (cut, rest []Job) {
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
// c.flushes and after its last Job, from cache or deflated.
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
		_, _ = c.w.Write([]byte(ScrapeConfigsKey))
	}
	for c.fed < len(c.jobs) {
		_, _ = c.w.Write(c.jobs[c.fed].Item)
		c.deflated += len(c.jobs[c.fed].Item)
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
func (c *chunker) close() []Job {
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
