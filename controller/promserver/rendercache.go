package promserver

import (
	"bytes"
	"crypto/sha256"
	"maps"
	"slices"
	"sync"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podreload/podreload/controller/configsecret"
	"github.com/podreload/podreload/controller/promcfg"
	"github.com/podreload/podreload/controller/rulefiles"
)

const (
	// LabelRuleFiles marks the rule file ConfigMaps of a server; its value is
	// the server name.
	LabelRuleFiles = "podreload.dev/rulefiles"
	// KindPrometheusRule is the Kind of rejected PrometheusRules.
	KindPrometheusRule = "PrometheusRule"
)

// RuleCache is what a PrometheusServer's renders keep from one to the
// next, so give each its own: its rule files (rulefiles.Cache), the
// gzipped configuration of the last render, by the SHA-256 of the
// configuration, its gzipped parts when it was split
// (configsecret.Cache), and the rule ConfigMaps last written
// (wroteRules), which a render holding the rules' changes back keeps. The
// zero value is ready; it is safe for concurrent use.
type RuleCache struct {
	mu sync.Mutex
	// rules are the rule files of the last render.
	rules rulefiles.Cache

	configSum  [sha256.Size]byte
	configGzip []byte

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

func writtenFor(server Target) rulesWrittenFor {
	return rulesWrittenFor{uid: server.UID, generation: server.Generation, layout: server.Layout.Operator()}
}

// wroteRules records the rule ConfigMaps written for server, as
// rendered; nil when what was written is not known (a write failed).
func (c *RuleCache) wroteRules(server Target, written []*corev1.ConfigMap) {
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
func (c *RuleCache) writtenRules(server Target) ([]*corev1.ConfigMap, bool) {
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
func (c *RuleCache) hold(server Target, shards []*corev1.ConfigMap, holdRules bool) (_ []*corev1.ConfigMap, held bool) {
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
func (c *RuleCache) gzipped(sum [sha256.Size]byte) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.configGzip, c.configGzip != nil && c.configSum == sum
}

// keepGzipped keeps gz, the gzipped configuration whose SHA-256 is sum.
func (c *RuleCache) keepGzipped(sum [sha256.Size]byte, gz []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.configSum, c.configGzip = sum, gz
}

// Render turns the PrometheusRules selected for server into its rule
// file ConfigMaps (rulefiles.Cache.Render, with ruleShards and the label
// spec.enforcedNamespaceLabel sets on each), and returns those left out.
func (c *RuleCache) Render(server Target, rules []*monitoringv1.PrometheusRule) ([]*corev1.ConfigMap, []promcfg.Rejection) {
	in := make([]rulefiles.Rule, len(rules))
	for i, r := range rules {
		in[i].Rule = r
		if r != nil {
			in[i].Enforced = promcfg.EnforcedLabel(&server.Spec, KindPrometheusRule, r.Namespace, r.Name)
		}
	}
	shards, left := c.rules.Render(RuleShards(server), in)
	var rejected []promcfg.Rejection
	for _, l := range left {
		rejected = append(rejected, promcfg.Rejection{Kind: KindPrometheusRule, Namespace: l.Namespace, Name: l.Name, Reason: l.Reason})
	}
	return shards, rejected
}

// RuleShards names and labels the rule file ConfigMaps of server:
// <server>-rulefiles-<i>, or prometheus-<name>-rulefiles-<i> in
// prometheus-operator's layout.
func RuleShards(server Target) rulefiles.Shards {
	l := SelectorLabels(server)
	prefix := server.Name + "-rulefiles-"
	if server.Layout.Operator() {
		l, prefix = operatorObjectLabels(server), operatorName(server)+"-rulefiles-"
	}
	maps.Copy(l, ruleFilesLabels(server))
	return rulefiles.Shards{Namespace: server.Namespace, Prefix: prefix, Labels: l, Plain: server.Layout.Operator(), Volume: !APISource(server)}
}

// RuleShardName is the name of the i-th rule file ConfigMap of server.
func RuleShardName(server Target, i int) string {
	return RuleShards(server).Name(i)
}
