package configsecret

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/controller/promyaml"
)

// Split is a configuration split: the main one, plain and gzipped, and
// its parts, gzipped.
type Split struct {
	Main, MainGzip []byte
	// Parts are the contents of the part Secrets, in order: the first is
	// PartName(secret, 1).
	Parts [][]byte
	// Rejected are the monitors left out: a job of theirs does not fit a
	// part alone.
	Rejected []Rejected
}

// SplitConfig splits the configuration made of head, the jobs of s and
// rest into a main configuration and parts, the config Secret being named
// secret: the jobs are cut into chunks (chunker) in the order of their
// monitors, and each goes into a part, numbered in order. The main
// configuration holds no job: an edit of a monitor rewrites its part and
// the main configuration's line naming the part's hash, a few KiB, not
// the jobs of a part besides. A monitor with a job too large for a part
// alone is left out; an additional scrape configuration that large is an
// error. A main configuration too large even so is a *SizeError. It uses
// up s: call it once.
func SplitConfig(secret string, head, rest []byte, s *Stream) (*Split, error) {
	if err := s.split(); err != nil {
		return nil, err
	}
	if err := s.close(); err != nil {
		return nil, err
	}
	main, mainGzip, err := mainConfig(secret, head, rest, s.gzipped)
	if err != nil {
		return nil, err
	}
	return &Split{Main: main, MainGzip: mainGzip, Parts: s.gzipped, Rejected: s.rejected}, nil
}

// Stream holds the scrape jobs of a configuration as they are
// rendered, in order. While they may fit in the config Secret (up to
// MaxConfigBytes) it keeps them all; past that, the configuration is
// split, and it cuts them into chunks as they come (chunker), gzips each
// chunk as it closes (or takes it from cache, when it did not change) and
// drops its jobs. At 20,000 endpoints (47 MB of jobs, encoded) a render
// peaked at 143 MB of heap holding every job, and at 81 MB this way.
type Stream struct {
	// Monitors are the monitors of the jobs (Job.Monitor): the renderer
	// appends a monitor before its jobs.
	Monitors []Monitor
	// Names are the names of the jobs, in order.
	Names []string
	// jobs are the jobs held until splitting: all of them.
	jobs []Job
	// size is the size of jobs' items, until splitting.
	size      int
	splitting bool
	chunker   chunker
	// gzipped are the chunks, gzipped.
	gzipped [][]byte
	// Cache keeps the gzipped chunks from one render to the next; nil
	// compresses every chunk.
	Cache *Cache
	// rejected are the monitors left out: a job of theirs is too large
	// for a part alone.
	rejected []Rejected
}

// Add adds js, the jobs of one monitor, encoded, in order.
func (s *Stream) Add(js []Job) error {
	for _, j := range js {
		s.Names = append(s.Names, j.Name)
	}
	if s.splitting {
		return s.addSplit(js)
	}
	s.jobs = append(s.jobs, js...)
	for _, j := range js {
		s.size += len(j.Item)
	}
	if s.size <= MaxConfigBytes {
		return nil
	}
	return s.split()
}

// Splitting reports whether s cuts its jobs into parts: they are more
// than MaxConfigBytes.
func (s *Stream) Splitting() bool { return s.splitting }

// Held are the jobs added, all of them, while s is not Splitting.
func (s *Stream) Held() []Job { return s.jobs }

// addSplit adds js, the jobs of one monitor, to the chunks, unless one
// of them is too large for a part alone.
func (s *Stream) addSplit(js []Job) error {
	if large, err := s.tooLarge(js); err != nil || large {
		return err
	}
	s.chunker.cache = s.Cache
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
func (s *Stream) split() error {
	if s.splitting {
		return nil
	}
	held := s.jobs
	s.jobs, s.size, s.splitting = nil, 0, true
	for start := 0; start < len(held); {
		end := start + 1
		for end < len(held) && held[end].Monitor == held[start].Monitor {
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
func (s *Stream) tooLarge(js []Job) (bool, error) {
	for _, j := range js {
		if len(ScrapeConfigsKey)+len(j.Item) <= maxPartGzip-1024 {
			continue
		}
		_, err := Gzip(maxPartGzip, []byte(ScrapeConfigsKey), j.Item)
		var sizeErr *SizeError
		switch {
		case err == nil:
			continue
		case !errors.As(err, &sizeErr):
			return false, err
		case j.Monitor == Additional:
			return true, fmt.Errorf("spec.additionalScrapeConfigs: job %q is more than the %d bytes, gzipped, a part of the configuration holds", j.Name, maxPartGzip)
		}
		s.rejected = append(s.rejected, Rejected{Monitor: s.Monitors[j.Monitor],
			Reason: fmt.Sprintf("a scrape job of it is more than the %d bytes, gzipped, a part of the configuration holds", maxPartGzip)})
		return true, nil
	}
	return false, nil
}

// close gzips the open chunk, if any.
func (s *Stream) close() error {
	if c := s.chunker.close(); len(c) > 0 {
		return s.gzip(c)
	}
	return nil
}

// gzip gzips the chunk c as parts (gzipChunks).
func (s *Stream) gzip(c []Job) error {
	gzipped, err := gzipChunks(s.Cache, c)
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
func gzipChunks(cache *Cache, c []Job) ([][]byte, error) {
	var gzipped [][]byte
	for chunks := [][]Job{c}; len(chunks) > 0; {
		c := chunks[0]
		chunks = chunks[1:]
		parts := make([][]byte, 0, len(c)+1)
		parts = append(parts, []byte(ScrapeConfigsKey))
		for _, j := range c {
			parts = append(parts, j.Item)
		}
		limit := partTarget
		if len(c) == 1 {
			limit = maxPartGzip
		}
		gz, _, err := cache.Gzip(limit, parts...)
		var sizeErr *SizeError
		switch {
		case err == nil:
			gzipped = append(gzipped, gz)
		case !errors.As(err, &sizeErr) || len(c) == 1:
			return nil, err
		default:
			chunks = append([][]Job{c[:len(c)/2], c[len(c)/2:]}, chunks...)
		}
	}
	return gzipped, nil
}

// mainConfig returns the main configuration of a split one, plain and
// gzipped: the part directives naming gzipped, head,
// scrape_config_files, no scrape job, and rest.
func mainConfig(secret string, head, rest []byte, gzipped [][]byte) ([]byte, []byte, error) {
	var b []byte
	for i, gz := range gzipped {
		b = contract.AppendPartDirective(b, PartName(secret, i+1), gz)
	}
	b = append(b, head...)
	if len(gzipped) > 0 {
		b = append(b, "scrape_config_files:\n"...)
		for i := range gzipped {
			b = append(b, "- "...)
			b = promyaml.AppendString(b, contract.PartPath(PartName(secret, i+1)))
			b = append(b, '\n')
		}
	}
	b = append(b, "scrape_configs: []\n"...)
	b = append(b, rest...)
	gz, err := Gzip(corev1.MaxSecretSize, b)
	if err != nil {
		return nil, nil, err
	}
	if len(b) > MaxConfigBytes {
		return nil, nil, &SizeError{size: len(b), gzipped: len(gz), limit: corev1.MaxSecretSize}
	}
	return b, gz, nil
}
