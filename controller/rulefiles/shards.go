// Package rulefiles turns PrometheusRules into rule files, checked with
// Prometheus' own rulefmt, and the rule files into the ConfigMaps
// (shards) that hold them, sized for the API server and its watchers and
// stable under edits; with the order of their writes. It knows how the
// ConfigMaps are named and labelled from a Shards value and nothing of a
// kind. It is pure: it imports no client.
//
// Where things are:
//
//	shards.go   Cache.Render: rules into files into ConfigMaps, gzipped and hashed into buckets
//	plain.go    the plain files of prometheus-operator's layout, packed as it packs them
//	check.go    the rule checker: rule files checked with rulefmt, each expression once
//	enforce.go  spec.enforcedNamespaceLabel on the rules
//	writes.go   Writes: the order of the writes, so that no file goes missing in between
//	written.go  Written: the ConfigMaps last written, which a render holding the rules' changes back writes again
package rulefiles

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podreload/podreload/controller/configsecret"
)

const (
	// maxShardBytes bounds one rule file gzipped: a larger one is
	// rejected. A file that size has a ConfigMap of its own (shardTarget),
	// half the API server's 1 MiB object limit. In prometheus-operator's
	// layout it bounds the plain files of a ConfigMap.
	maxShardBytes = 512 << 10
	// shardTarget bounds a rule ConfigMap as sent to the API server and to
	// every watcher (shardCost, metadata not counted): the rules are
	// spread over enough ConfigMaps (ruleBuckets) that an edit of one
	// PrometheusRule rewrites one ConfigMap of at most 60 KiB of rule
	// files, under 64 KiB with its metadata (names of at most 253 bytes,
	// labels, the owner reference and the managed fields' entry, under
	// 3 KiB; each key's entry in the managed fields is in shardCost). A
	// ConfigMap holding a single file larger than that holds that file
	// alone.
	shardTarget = 60 << 10
	// maxRuleShards bounds the number of rule ConfigMaps of a server.
	maxRuleShards = 1024
	// gzipSuffix ends the binaryData key of a gzipped rule file: the
	// config-reloaders write the file X for the key X.gz, gunzipped.
	gzipSuffix = ".gz"
	// maxKeyLength is the longest ConfigMap data key the API server accepts.
	maxKeyLength = 253
	// maxReasonErrors bounds how many validation errors a Reason lists.
	maxReasonErrors = 5
)

// ruleResult is what a PrometheusRule gives: a file, named name and
// gzipped into gz (or, in prometheus-operator's layout, plain in plain),
// or why it has none.
type ruleResult struct {
	name, reason string
	gz           []byte
	plain        string
}

// ruleKey identifies one version of a PrometheusRule, and the label
// enforced on it (Rule.Enforced).
type ruleKey struct {
	uid             types.UID
	resourceVersion string
	enforced        string
	// plain is a file in prometheus-operator's layout, not gzipped.
	plain bool
}

// Cache remembers, by UID and resourceVersion, the rule files it
// rendered and validated, so that a render only validates the
// PrometheusRules that changed: validation dominates the cost (parsing
// every PromQL expression and every alert template). It keeps only the
// entries of its last render, so give each server its own. The zero value
// is ready; it is safe for concurrent use. Objects without a UID or
// resourceVersion are not cached. It keeps the number of hashed
// ConfigMaps of the last render too (ruleBuckets).
type Cache struct {
	mu      sync.Mutex
	entries map[ruleKey]ruleResult
	// buckets is the number of rule ConfigMaps of the last render
	// (ruleBuckets), 0 before the first.
	buckets int
}

// Seeded reports whether c has rendered, or been seeded.
func (c *Cache) Seeded() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buckets != 0
}

// Seed sets, before the first render, the number of hashed rule
// ConfigMaps of the previous render from live, the rule ConfigMaps written
// before (by this controller's previous process): the hysteresis of
// ruleBuckets then holds across restarts, and a restart moves no file. It
// counts those that do not hold a single large file.
func (c *Cache) Seed(live []*corev1.ConfigMap) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buckets != 0 {
		return
	}
	n := 0
	for _, cm := range live {
		large := false
		if len(cm.BinaryData) == 1 {
			for key, gz := range cm.BinaryData {
				large = largeFile(ruleResult{name: strings.TrimSuffix(key, gzipSuffix), gz: gz})
			}
		}
		if !large {
			n++
		}
	}
	c.buckets = min(n, maxRuleShards)
}

// Render turns rules, the PrometheusRules a server selected, into the
// rule file ConfigMaps s names (Shards.Name). Files
// are named <namespace>-<name>-<uid>.yaml, stored gzipped (gzipRuleFile)
// under the binaryData key of that name with ".gz" appended, and placed
// by a hash of their name into one of enough ConfigMaps for each to stay
// within shardTarget (ruleBuckets, packShards), or, for a
// file larger than a quarter of that, into a ConfigMap of its own: an edit
// of one PrometheusRule rewrites one small ConfigMap, and the same rules
// give the same ConfigMaps (after the same previous render: the number of
// hashed ConfigMaps changes only on growth past shardTarget or large
// shrinkage). A PrometheusRule that Prometheus
// would refuse, whose file alone exceeds maxShardBytes gzipped, or which a
// config-reloader would refuse to gunzip (more than configsecret.MaxConfigBytes), is
// left out and returned as rejected, sorted by namespace and name; the
// others are kept. Owner references are not set.
// The results of the previous render are reused for the PrometheusRules
// whose UID and resourceVersion, and the label enforced on them, have not
// changed. In prometheus-operator's layout the files are plain, in data,
// packed as prometheus-operator packs them (packPlainShards).
func (c *Cache) Render(s Shards, rules []Rule) ([]*corev1.ConfigMap, []Rejected) {
	results := make([]ruleResult, len(rules))
	keys := make([]ruleKey, len(rules))
	var todo []int
	c.mu.Lock()
	for i, r := range rules {
		if r.Rule == nil {
			continue
		}
		keys[i] = ruleKey{uid: r.Rule.UID, resourceVersion: r.Rule.ResourceVersion, enforced: r.Enforced, plain: s.Plain}
		if e, ok := c.entries[keys[i]]; ok && cacheable(r.Rule) {
			results[i] = e
			continue
		}
		todo = append(todo, i)
	}
	c.mu.Unlock()
	renderAll(rules, keys, todo, results)

	entries := make(map[ruleKey]ruleResult, len(rules))
	for i, r := range rules {
		if r.Rule != nil && cacheable(r.Rule) {
			entries[keys[i]] = results[i]
		}
	}
	c.mu.Lock()
	c.entries = entries
	c.mu.Unlock()

	files := make([]ruleResult, 0, len(rules))
	var rejected []Rejected
	for i, r := range results {
		switch {
		case rules[i].Rule == nil:
		case r.reason != "":
			rejected = append(rejected, Rejected{Namespace: rules[i].Rule.Namespace, Name: rules[i].Rule.Name, Reason: r.reason})
		default:
			files = append(files, r)
		}
	}
	slices.SortFunc(rejected, func(a, b Rejected) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	if s.Plain {
		return packPlainShards(s, files), rejected
	}
	var small []ruleResult
	for _, f := range files {
		if !largeFile(f) {
			small = append(small, f)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buckets = ruleBuckets(small, c.buckets)
	if s.Volume {
		c.buckets = volumeBuckets(c.buckets)
	}
	return packShards(s, files, c.buckets), rejected
}

// volumeBuckets is n rounded up to a power of two: with the volume
// source, a count of rule ConfigMaps past the volumes the pods mount
// (ruleVolumes) rolls the pods, and the files moved into the new ones are
// missing from a pod until it has rolled. Doubling, the count passes them
// once per doubling of the rules, not once per 4 ConfigMaps more.
func volumeBuckets(n int) int {
	return 1 << bits.Len(uint(max(n, 1)-1))
}

// packShards places files into the rule file ConfigMaps s names: each
// small one into the one of the first buckets its name hashes to
// (Bucket), each large one (largeFile) into one of its own after
// them, in name order; none without files. Where a small file goes
// depends on its name and the number of buckets only: a file added,
// changed or removed rewrites its ConfigMap alone, and when the number
// grows by one, a file stays in its ConfigMap or moves to the new one.
// A large file added or removed moves the large ones after it, each to
// the next ConfigMap or the previous one.
func packShards(s Shards, files []ruleResult, buckets int) []*corev1.ConfigMap {
	if len(files) == 0 {
		return nil
	}
	shards := make([]*corev1.ConfigMap, buckets)
	for i := range shards {
		shards[i] = s.ConfigMap(i)
	}
	var large []ruleResult
	for _, f := range files {
		if largeFile(f) {
			large = append(large, f)
			continue
		}
		shards[Bucket(f.name, buckets)].BinaryData[f.name+gzipSuffix] = f.gz
	}
	slices.SortFunc(large, func(a, b ruleResult) int { return cmp.Compare(a.name, b.name) })
	for _, f := range large {
		cm := s.ConfigMap(len(shards))
		cm.BinaryData[f.name+gzipSuffix] = f.gz
		shards = append(shards, cm)
	}
	return shards
}

// largeFile reports whether f takes more than a quarter of shardTarget:
// hashed with others, it would make their ConfigMap large, or make many
// more ConfigMaps necessary for it to share one with none of its kind.
func largeFile(f ruleResult) bool {
	return shardCost(f) > shardTarget/4
}

// Bucket is the hashed ConfigMap, of buckets, of the file name (its
// index among the ConfigMaps): the jump consistent hash of Lamping and
// Veach ("A Fast, Minimal Memory,
// Consistent Hash Algorithm", 2014) of the name's xxhash. The ConfigMaps
// get about as many files each, whatever their number; when it grows by
// one, a file stays where it was or moves to the new ConfigMap (about one
// file in the new number does), and when it shrinks by one, only the
// files of the last ConfigMap move.
func Bucket(name string, buckets int) int {
	key, b, next := xxhash.Sum64String(name), -1, 0
	for next < buckets {
		b = next
		key = key*2862933555777941757 + 1
		next = int(float64(b+1) * (float64(1<<31) / float64(key>>33+1)))
	}
	return b
}

// shardCost is what the file f adds to a ConfigMap as written, in JSON:
// its value in base64, its key twice (the API server lists it in the
// managed fields too) and some quotes and separators.
func shardCost(f ruleResult) int {
	return base64.StdEncoding.EncodedLen(len(f.gz)) + 2*len(f.name+gzipSuffix) + 16
}

// ruleBuckets is the number of hashed rule ConfigMaps for files, the
// small ones, from prev, that of the previous render (0 for none). When a
// ConfigMap of more than one file would exceed shardTarget with prev, the
// least number above prev with which none does (up to maxRuleShards);
// when fewer than prev would each stay within three quarters of it, the
// least of those. Between the two, the number stays: rules that grow or
// shrink a little do not move files between ConfigMaps. Not a power of
// two: 1,000 rule files of 600 KB take 11 to 13 ConfigMaps, where
// doubling took 16, each created once in a burst (coalesce.go). Each
// growth by one rewrites every ConfigMap (each gives a file or more to the
// new one), about once per 1/n growth of the rules: for 1,000 files, once
// per 80 or so added, some 8 KB written per file added, against the up to
// 64 KiB of the file's own ConfigMap.
func ruleBuckets(files []ruleResult, prev int) int {
	n := min(max(prev, 1), maxRuleShards)
	if overfull(files, n, shardTarget) {
		n = min(max(n+1, leastBuckets(files, shardTarget)), maxRuleShards)
		for n < maxRuleShards && overfull(files, n, shardTarget) {
			n++
		}
		return n
	}
	for m := leastBuckets(files, shardTarget*3/4); m < n; m++ {
		if !overfull(files, m, shardTarget*3/4) {
			return m
		}
	}
	return n
}

// leastBuckets is a number of ConfigMaps below which files cannot be
// spread without one of more than one file exceeding limit (overfull):
// their cost over limit, at least 1. Small files cost less than limit.
func leastBuckets(files []ruleResult, limit int) int {
	total := 0
	for _, f := range files {
		total += shardCost(f)
	}
	return max((total+limit-1)/limit, 1)
}

// overfull reports whether, spread over buckets ConfigMaps, files would
// fill one holding more than one file beyond limit (shardCost).
func overfull(files []ruleResult, buckets, limit int) bool {
	cost, count := make([]int, buckets), make([]int, buckets)
	for _, f := range files {
		b := Bucket(f.name, buckets)
		cost[b] += shardCost(f)
		count[b]++
		if count[b] > 1 && cost[b] > limit {
			return true
		}
	}
	return false
}

func cacheable(r *monitoringv1.PrometheusRule) bool {
	return r.UID != "" && r.ResourceVersion != ""
}

// renderAll renders rules[i], with the label keys[i] enforced, into
// results[i] for every i of todo, on as many goroutines as there are
// processors, and returns when all are done.
func renderAll(rules []Rule, keys []ruleKey, todo []int, results []ruleResult) {
	var next atomic.Int64
	var wg sync.WaitGroup
	c := newRuleChecker()
	for range min(runtime.GOMAXPROCS(0), len(todo)) {
		wg.Go(func() {
			// A gzip writer per goroutine: each is some 1 MB of state.
			var zw *gzip.Writer
			for j := int(next.Add(1)) - 1; j < len(todo); j = int(next.Add(1)) - 1 {
				i := todo[j]
				results[i], zw = c.render(enforceRules(rules[i].Rule, keys[i].enforced), keys[i].plain, zw)
			}
		})
	}
	wg.Wait()
}

// render renders the rule file of r gzipped, with zw, a gzip writer to
// reset or nil, which it returns for the next file; or, when plain, as it
// is; or says why r has no file.
func (c *ruleChecker) render(r *monitoringv1.PrometheusRule, plain bool, zw *gzip.Writer) (ruleResult, *gzip.Writer) {
	content, err := c.file(r)
	if err != nil {
		return ruleResult{reason: err.Error()}, zw
	}
	if len(content) > configsecret.MaxConfigBytes {
		return ruleResult{reason: fmt.Sprintf("rule file is %d bytes, more than the %d bytes a config-reloader renders (--config-max-size)", len(content), configsecret.MaxConfigBytes)}, zw
	}
	if plain {
		return plainRuleResult(r, content), zw
	}
	gz, zw := gzipRuleFile(zw, content)
	if len(gz) > maxShardBytes {
		return ruleResult{reason: fmt.Sprintf("rule file is %d bytes, %d gzipped, more than the %d bytes a ConfigMap shard holds", len(content), len(gz), maxShardBytes)}, zw
	}
	return ruleResult{name: FileName(r), gz: gz}, zw
}

// gzipRuleFile compresses content deterministically, as configsecret.Gzip does:
// a gzip header without file name or modification time, so that the same
// rules give the same bytes and the ConfigMap is not rewritten. It
// compresses at the best compression, about 10 times smaller for rule
// files: a file is compressed once per change of its PrometheusRule (the
// ruleCache keeps it), and the smaller it is, the more a shard holds. zw
// is a writer to reset, or nil; it is returned for the next file.
func gzipRuleFile(zw *gzip.Writer, content string) ([]byte, *gzip.Writer) {
	var buf bytes.Buffer
	buf.Grow(len(content)/4 + 64)
	if zw == nil {
		// The level is valid: NewWriterLevel cannot fail.
		zw, _ = gzip.NewWriterLevel(&buf, gzip.BestCompression)
	} else {
		zw.Reset(&buf)
	}
	// Writes to a bytes.Buffer do not fail.
	_, _ = zw.Write([]byte(content))
	_ = zw.Close()
	return buf.Bytes(), zw
}

// Shards names and labels the rule file ConfigMaps of a server, and
// says how they hold their files.
type Shards struct {
	// Namespace of the ConfigMaps.
	Namespace string
	// Prefix of their names: the i-th is named Prefix<i>, from 0.
	Prefix string
	// Labels of each ConfigMap.
	Labels map[string]string
	// Plain are the files of prometheus-operator's layout: plain, in
	// data, packed as prometheus-operator packs them (packPlainShards),
	// not gzipped and hashed.
	Plain bool
	// Volume is set when the pods read the ConfigMaps as volumes: their
	// count is a power of two (volumeBuckets).
	Volume bool
}

// Name is the name of the i-th rule file ConfigMap.
func (s Shards) Name(i int) string {
	return s.Prefix + strconv.Itoa(i)
}

// ConfigMap is the i-th rule file ConfigMap, without files.
func (s Shards) ConfigMap(i int) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      s.Name(i),
			Namespace: s.Namespace,
			Labels:    maps.Clone(s.Labels),
		},
	}
	if s.Plain {
		cm.Data = map[string]string{}
	} else {
		cm.BinaryData = map[string][]byte{}
	}
	return cm
}

// Rule is a PrometheusRule a server selected, and the label
// spec.enforcedNamespaceLabel sets on its rules ("" for none).
type Rule struct {
	Rule     *monitoringv1.PrometheusRule
	Enforced string
}

// Rejected is a PrometheusRule left out, and why.
type Rejected struct {
	Namespace, Name string
	// Reason names the cause.
	Reason string
}

// FileName is the name of the rule file of r:
// <namespace>-<name>-<uid>.yaml, with the name shortened when the whole,
// with gzipSuffix, would be too long for a ConfigMap key; the uid keeps
// it unique.
func FileName(r *monitoringv1.PrometheusRule) string {
	name := r.Name
	if over := len(r.Namespace) + len(name) + len(r.UID) + len("--.yaml"+gzipSuffix) - maxKeyLength; over > 0 {
		name = name[:max(len(name)-over, 0)]
	}
	return fmt.Sprintf("%s-%s-%s.yaml", r.Namespace, name, r.UID)
}

// invalidRules is one error out of a rule file's validation errors, sorted
// because rulefmt reports some of them in map order, and bounded in number.
func invalidRules(errs []string) error {
	slices.Sort(errs)
	if n := len(errs); n > maxReasonErrors {
		errs = append(errs[:maxReasonErrors], fmt.Sprintf("and %d more", n-maxReasonErrors))
	}
	return errors.New("invalid rules: " + strings.Join(errs, "; "))
}
