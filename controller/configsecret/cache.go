package configsecret

import (
	"crypto/sha256"
	"sync"
)

// Cache keeps the gzipped parts of a configuration, by the SHA-256 of
// their content, from one render to the next: a render compresses only
// the parts that changed. A burst that adds monitors changes the parts
// they land in (chunker), not the others: at 20,000 endpoints, each render
// compressed 10 parts of some 4.6 MB at the best level, most of its time.
// It keeps the chunker's estimates the same way, by estimateKey. It keeps
// those of the last render and of the current one; the zero
// value is ready, and a nil *Cache compresses every part. It is safe
// for concurrent use.
type Cache struct {
	mu         sync.Mutex
	last, next map[[sha256.Size]byte][]byte
	// lastEst and nextEst are the estimates of the last render and of
	// the current one.
	lastEst, nextEst map[estimateKey]int
}

// Gzip returns the content made of parts gzipped (the package's Gzip,
// within limit), as last compressed when it was, and the SHA-256 of the
// content, by which it is kept: the parts of a split configuration, or a
// whole configuration, which a render of the same configuration does not
// compress again.
func (c *Cache) Gzip(limit int, parts ...[]byte) ([]byte, [sha256.Size]byte, error) {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	if c == nil {
		gz, err := Gzip(limit, parts...)
		return gz, sum, err
	}
	c.mu.Lock()
	gz, ok := c.last[sum]
	c.mu.Unlock()
	if !ok || len(gz) > limit {
		var err error
		if gz, err = Gzip(limit, parts...); err != nil {
			return nil, sum, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next == nil {
		c.next = map[[sha256.Size]byte][]byte{}
	}
	c.next[sum] = gz
	return gz, sum, nil
}

// estimate returns the chunker's estimate for key, if the last render or
// this one made it.
func (c *Cache) estimate(key estimateKey) (int, bool) {
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
func (c *Cache) setEstimate(key estimateKey, est int) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setEstimateLocked(key, est)
}

func (c *Cache) setEstimateLocked(key estimateKey, est int) {
	if c.nextEst == nil {
		c.nextEst = map[estimateKey]int{}
	}
	c.nextEst[key] = est
}

// Rotate ends a render: the parts and estimates it made or reused are
// kept for the next one, the others dropped.
func (c *Cache) Rotate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last, c.next = c.next, nil
	c.lastEst, c.nextEst = c.nextEst, nil
}
