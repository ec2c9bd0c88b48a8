package prometheus

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podreload/podreload/api/v1alpha1"
)

const (
	// maxShardBytes bounds the rule files of one ConfigMap: the sum of
	// the lengths of its binaryData values, the files gzipped, keys and
	// metadata not counted, which leaves ample room under the API
	// server's 1 MiB object limit.
	maxShardBytes = 512 << 10
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
// configuration of the last render, by the SHA-256 of the configuration.
type ruleCache struct {
	mu      sync.Mutex
	entries map[ruleKey]ruleResult

	configSum  [sha256.Size]byte
	configGzip []byte
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

// render turns the PrometheusRules selected for server into rule file
// ConfigMaps named <server>-rulefiles-<i> in the server's namespace, each
// holding at most 512 KiB of rule files gzipped (counted as the sum of the
// gzipped files' lengths). Files are named <namespace>-<name>-<uid>.yaml,
// stored gzipped (gzipRuleFile) under the binaryData key of that name
// with ".gz" appended, and placed first-fit in name order, so the same
// rules always give the same ConfigMaps. A PrometheusRule that Prometheus
// would refuse, whose file alone exceeds a ConfigMap gzipped, or which a
// config-reloader would refuse to gunzip (more than maxConfigBytes), is
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
	return packShards(server, files), rejected
}

// packShards places files, each at most maxShardBytes gzipped, into rule
// file ConfigMaps of server, first-fit in name order, each holding at
// most maxShardBytes of them gzipped.
func packShards(server *v1alpha1.PrometheusServer, files []ruleResult) []*corev1.ConfigMap {
	files = slices.SortedFunc(slices.Values(files), func(a, b ruleResult) int { return cmp.Compare(a.name, b.name) })
	var (
		shards []*corev1.ConfigMap
		used   []int
	)
	for _, f := range files {
		i := slices.IndexFunc(used, func(n int) bool { return n+len(f.gz) <= maxShardBytes })
		if i < 0 {
			i = len(shards)
			shards = append(shards, ruleShard(server, i))
			used = append(used, 0)
		}
		shards[i].BinaryData[f.name+gzipSuffix] = f.gz
		used[i] += len(f.gz)
	}
	return shards
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
	if len(content) > maxConfigBytes {
		return ruleResult{reason: fmt.Sprintf("rule file is %d bytes, more than the %d bytes a config-reloader renders (--config-max-size)", len(content), maxConfigBytes)}, zw
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

// gzipRuleFile compresses content deterministically, as gzipConfig does:
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
