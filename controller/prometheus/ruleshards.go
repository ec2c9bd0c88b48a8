package prometheus

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"crypto/sha256"
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

	"github.com/podreload/podreload/api/v1alpha1"
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

	// LabelRuleFiles marks the rule file ConfigMaps of a server; its value is
	// the server name.
	LabelRuleFiles = "podreload.dev/rulefiles"
	// kindPrometheusRule is the Kind of rejected PrometheusRules.
	kindPrometheusRule = "PrometheusRule"
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
// enforced on it (enforceRules).
type ruleKey struct {
	uid             types.UID
	resourceVersion string
	enforced        string
	// plain is a file in prometheus-operator's layout, not gzipped.
	plain bool
}

// ruleCache remembers, by UID and resourceVersion, the rule files it
// rendered and validated, so that a reconcile only validates the
// PrometheusRules that changed: validation dominates the cost (parsing
// every PromQL expression and every alert template). It keeps only the
// entries of its last render, so give each PrometheusServer its own. The
// zero value is ready; it is safe for concurrent use. Objects without a
// UID or resourceVersion are not cached. It also keeps the gzipped
// configuration of the last render, by the SHA-256 of the configuration,
// its gzipped parts when it was split (configsecret.Cache), and the rule ConfigMaps
// last written (wroteRules), which a render holding the rules' changes
// back keeps.
type ruleCache struct {
	mu      sync.Mutex
	entries map[ruleKey]ruleResult

	configSum  [sha256.Size]byte
	configGzip []byte

	// buckets is the number of rule ConfigMaps of the last render
	// (ruleBuckets), 0 before the first.
	buckets int
	// parts are the gzipped parts of the configuration of the last
	// render, when it was split.
	parts configsecret.Cache

	// written are the rule ConfigMaps last written, as rendered, for
	// the server writtenFor describes; nil when unknown.
	written    []*corev1.ConfigMap
	writtenFor rulesWrittenFor
}

// rulesWrittenFor is the server, and the version of its spec, that rule
// ConfigMaps were written for.
type rulesWrittenFor struct {
	uid        types.UID
	generation int64
	layout     bool
}

func writtenFor(server *v1alpha1.PrometheusServer) rulesWrittenFor {
	return rulesWrittenFor{uid: server.UID, generation: server.Generation, layout: operatorLayout(server)}
}

// wroteRules records the rule ConfigMaps written for server, as
// rendered; nil when what was written is not known (a write failed).
func (c *ruleCache) wroteRules(server *v1alpha1.PrometheusServer, written []*corev1.ConfigMap) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if written == nil {
		c.written = nil
		return
	}
	c.written, c.writtenFor = written, writtenFor(server)
}

// writtenRules returns copies of the rule ConfigMaps wroteRules recorded,
// if they were written for the same version of server's spec.
func (c *ruleCache) writtenRules(server *v1alpha1.PrometheusServer) ([]*corev1.ConfigMap, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.written == nil || c.writtenFor != writtenFor(server) {
		return nil, false
	}
	return cloneConfigMaps(c.written), true
}

// hold returns the rule ConfigMaps to write for server instead of
// shards, those rendered from its rules: with holdRules, those last
// written when c knows them (writtenRules); and whether they differ from
// shards, held back.
func (c *ruleCache) hold(server *v1alpha1.PrometheusServer, shards []*corev1.ConfigMap, holdRules bool) (_ []*corev1.ConfigMap, held bool) {
	if !holdRules {
		return shards, false
	}
	kept, ok := c.writtenRules(server)
	if !ok {
		return shards, false
	}
	return kept, !sameRules(shards, kept)
}

// cloneConfigMaps returns deep copies of cms, never nil.
func cloneConfigMaps(cms []*corev1.ConfigMap) []*corev1.ConfigMap {
	out := make([]*corev1.ConfigMap, len(cms))
	for i, cm := range cms {
		out[i] = cm.DeepCopy()
	}
	return out
}

// sameRules reports whether a and b hold the same ConfigMaps, by name,
// with the same files.
func sameRules(a, b []*corev1.ConfigMap) bool {
	return slices.EqualFunc(a, b, func(x, y *corev1.ConfigMap) bool {
		return x.Name == y.Name && maps.Equal(x.Data, y.Data) && equalBinaryData(x.BinaryData, y.BinaryData)
	})
}

func equalBinaryData(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

// gzipped returns the gzipped configuration whose SHA-256 is sum, if it
// is the last one kept.
func (c *ruleCache) gzipped(sum [sha256.Size]byte) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.configGzip, c.configGzip != nil && c.configSum == sum
}

// keepGzipped keeps gz, the gzipped configuration whose SHA-256 is sum.
func (c *ruleCache) keepGzipped(sum [sha256.Size]byte, gz []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.configSum, c.configGzip = sum, gz
}

// seeded reports whether c has rendered, or been seeded.
func (c *ruleCache) seeded() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buckets != 0
}

// seed sets, before the first render, the number of hashed rule
// ConfigMaps of the previous render from live, the rule ConfigMaps written
// before (by this controller's previous process): the hysteresis of
// ruleBuckets then holds across restarts, and a restart moves no file. It
// counts those that do not hold a single large file.
func (c *ruleCache) seed(live []*corev1.ConfigMap) {
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

// render turns the PrometheusRules selected for server into rule file
// ConfigMaps named <server>-rulefiles-<i> in the server's namespace. Files
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
func (c *ruleCache) render(server *v1alpha1.PrometheusServer, rules []*monitoringv1.PrometheusRule) ([]*corev1.ConfigMap, []rejection) {
	results := make([]ruleResult, len(rules))
	keys := make([]ruleKey, len(rules))
	var todo []int
	c.mu.Lock()
	for i, r := range rules {
		if r == nil {
			continue
		}
		keys[i] = ruleKey{uid: r.UID, resourceVersion: r.ResourceVersion,
			enforced: enforcedLabel(&server.Spec, kindPrometheusRule, r.Namespace, r.Name), plain: operatorLayout(server)}
		if e, ok := c.entries[keys[i]]; ok && cacheable(r) {
			results[i] = e
			continue
		}
		todo = append(todo, i)
	}
	c.mu.Unlock()
	renderAll(rules, keys, todo, results)

	entries := make(map[ruleKey]ruleResult, len(rules))
	for i, r := range rules {
		if r != nil && cacheable(r) {
			entries[keys[i]] = results[i]
		}
	}
	c.mu.Lock()
	c.entries = entries
	c.mu.Unlock()

	files := make([]ruleResult, 0, len(rules))
	var rejected []rejection
	for i, r := range results {
		switch {
		case rules[i] == nil:
		case r.reason != "":
			rejected = append(rejected, rejection{Kind: kindPrometheusRule, Namespace: rules[i].Namespace, Name: rules[i].Name, Reason: r.reason})
		default:
			files = append(files, r)
		}
	}
	slices.SortFunc(rejected, func(a, b rejection) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	if operatorLayout(server) {
		return packPlainShards(server, files), rejected
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
	if !apiSource(server) {
		c.buckets = volumeBuckets(c.buckets)
	}
	return packShards(server, files, c.buckets), rejected
}

// volumeBuckets is n rounded up to a power of two: with the volume
// source, a count of rule ConfigMaps past the volumes the pods mount
// (ruleVolumes) rolls the pods, and the files moved into the new ones are
// missing from a pod until it has rolled. Doubling, the count passes them
// once per doubling of the rules, not once per 4 ConfigMaps more.
func volumeBuckets(n int) int {
	return 1 << bits.Len(uint(max(n, 1)-1))
}

// packShards places files into rule file ConfigMaps of server: each
// small one into the one of the first buckets its name hashes to
// (ruleBucket), each large one (largeFile) into one of its own after
// them, in name order; none without files. Where a small file goes
// depends on its name and the number of buckets only: a file added,
// changed or removed rewrites its ConfigMap alone, and when the number
// grows by one, a file stays in its ConfigMap or moves to the new one.
// A large file added or removed moves the large ones after it, each to
// the next ConfigMap or the previous one.
func packShards(server *v1alpha1.PrometheusServer, files []ruleResult, buckets int) []*corev1.ConfigMap {
	if len(files) == 0 {
		return nil
	}
	shards := make([]*corev1.ConfigMap, buckets)
	for i := range shards {
		shards[i] = ruleShard(server, i)
	}
	var large []ruleResult
	for _, f := range files {
		if largeFile(f) {
			large = append(large, f)
			continue
		}
		shards[ruleBucket(f.name, buckets)].BinaryData[f.name+gzipSuffix] = f.gz
	}
	slices.SortFunc(large, func(a, b ruleResult) int { return cmp.Compare(a.name, b.name) })
	for _, f := range large {
		cm := ruleShard(server, len(shards))
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

// ruleBucket is the hashed ConfigMap, of buckets, of the file name: the
// jump consistent hash of Lamping and Veach ("A Fast, Minimal Memory,
// Consistent Hash Algorithm", 2014) of the name's xxhash. The ConfigMaps
// get about as many files each, whatever their number; when it grows by
// one, a file stays where it was or moves to the new ConfigMap (about one
// file in the new number does), and when it shrinks by one, only the
// files of the last ConfigMap move.
func ruleBucket(name string, buckets int) int {
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
		b := ruleBucket(f.name, buckets)
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
func renderAll(rules []*monitoringv1.PrometheusRule, keys []ruleKey, todo []int, results []ruleResult) {
	var next atomic.Int64
	var wg sync.WaitGroup
	c := newRuleChecker()
	for range min(runtime.GOMAXPROCS(0), len(todo)) {
		wg.Go(func() {
			// A gzip writer per goroutine: each is some 1 MB of state.
			var zw *gzip.Writer
			for j := int(next.Add(1)) - 1; j < len(todo); j = int(next.Add(1)) - 1 {
				i := todo[j]
				results[i], zw = c.render(enforceRules(rules[i], keys[i].enforced), keys[i].plain, zw)
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
	return ruleResult{name: ruleFileName(r), gz: gz}, zw
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

// ruleShardName is the name of the i-th rule file ConfigMap of server.
func ruleShardName(server *v1alpha1.PrometheusServer, i int) string {
	if operatorLayout(server) {
		return operatorName(server) + "-rulefiles-" + strconv.Itoa(i)
	}
	return server.Name + "-rulefiles-" + strconv.Itoa(i)
}

func ruleShard(server *v1alpha1.PrometheusServer, i int) *corev1.ConfigMap {
	if operatorLayout(server) {
		return plainRuleShard(server, i)
	}
	l := selectorLabels(server)
	maps.Copy(l, ruleFilesLabels(server))
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      ruleShardName(server, i),
			Namespace: server.Namespace,
			Labels:    l,
		},
		BinaryData: map[string][]byte{},
	}
}

// ruleFileName is <namespace>-<name>-<uid>.yaml, with the name shortened
// when the whole, with gzipSuffix, would be too long for a ConfigMap key;
// the uid keeps it unique.
func ruleFileName(r *monitoringv1.PrometheusRule) string {
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
