// Package relabeling renders the relabelings of a Prometheus
// configuration's scrape jobs as prometheus-operator's generator writes
// them: the users' own, validated as Prometheus validates them with each
// regular expression compiled once per configuration (Checker), and the
// built-in ones (selectors, label copies, sharding). It is pure.
package relabeling

import (
	"fmt"
	"sort"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/relabel"
	yaml "go.yaml.in/yaml/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Checker validates the users' relabelings; it compiles each regular
// expression once: monitors tend to share them. Its zero value is ready.
type Checker struct {
	regexps map[string]compiledRegexp
}

// Rule validates the user relabeling at path as Prometheus does
// and renders it as prometheus-operator does.
func (ch *Checker) Rule(path string, rc *monitoringv1.RelabelConfig) (yaml.MapSlice, error) {
	c := relabel.DefaultRelabelConfig
	action := strings.ToLower(rc.Action)
	switch a := relabel.Action(action); a {
	case "":
	case relabel.Replace, relabel.Keep, relabel.Drop, relabel.KeepEqual, relabel.DropEqual, relabel.HashMod,
		relabel.LabelMap, relabel.LabelDrop, relabel.LabelKeep, relabel.Lowercase, relabel.Uppercase:
		c.Action = a
	default:
		return nil, fmt.Errorf("%s.action: unknown action %q", path, rc.Action)
	}
	out := make(yaml.MapSlice, 0, 7)
	if len(rc.SourceLabels) > 0 {
		ls := make([]string, len(rc.SourceLabels))
		c.SourceLabels = make(model.LabelNames, len(rc.SourceLabels))
		for i, l := range rc.SourceLabels {
			if !model.UTF8Validation.IsValidLabelName(string(l)) {
				return nil, fmt.Errorf("%s.sourceLabels[%d]: %q is not a valid label name", path, i, l)
			}
			ls[i] = string(l)
			c.SourceLabels[i] = model.LabelName(l)
		}
		out = append(out, yaml.MapItem{Key: "source_labels", Value: ls})
	}
	if rc.Separator != nil {
		c.Separator = *rc.Separator
		out = append(out, yaml.MapItem{Key: "separator", Value: *rc.Separator})
	}
	if rc.TargetLabel != "" {
		c.TargetLabel = rc.TargetLabel
		out = append(out, yaml.MapItem{Key: "target_label", Value: rc.TargetLabel})
	}
	if rc.Regex != "" {
		re, err := ch.Regexp(rc.Regex)
		if err != nil {
			return nil, fmt.Errorf("%s.regex: %w", path, err)
		}
		c.Regex = re
		out = append(out, yaml.MapItem{Key: "regex", Value: rc.Regex})
	}
	if rc.Modulus != 0 {
		if rc.Modulus < 0 {
			return nil, fmt.Errorf("%s.modulus: %d is negative", path, rc.Modulus)
		}
		c.Modulus = uint64(rc.Modulus)
		out = append(out, yaml.MapItem{Key: "modulus", Value: rc.Modulus})
	}
	if rc.Replacement != nil {
		c.Replacement = *rc.Replacement
		out = append(out, yaml.MapItem{Key: "replacement", Value: *rc.Replacement})
	}
	if action != "" {
		out = append(out, yaml.MapItem{Key: "action", Value: action})
	}
	if err := c.Validate(model.UTF8Validation); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// Regexp compiles a regular expression as Prometheus does, once per
// rendering: monitors tend to share them.
func (ch *Checker) Regexp(s string) (relabel.Regexp, error) {
	if c, ok := ch.regexps[s]; ok {
		return c.re, c.err
	}
	re, err := relabel.NewRegexp(s)
	if ch.regexps == nil {
		ch.regexps = map[string]compiledRegexp{}
	}
	ch.regexps[s] = compiledRegexp{re, err}
	return re, err
}

type compiledRegexp struct {
	re  relabel.Regexp
	err error
}

// Selector keeps the targets whose object (service or pod,
// prefix __meta_kubernetes_<object>) the label selector matches.
func Selector(sel *metav1.LabelSelector, prefix string) []yaml.MapSlice {
	out := make([]yaml.MapSlice, 0, len(sel.MatchLabels)+len(sel.MatchExpressions))
	keys := make([]string, 0, len(sel.MatchLabels))
	for k := range sel.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		n := SanitizeLabelName(k)
		out = append(out, Keep([]string{prefix + "_label_" + n, prefix + "_labelpresent_" + n}, "("+sel.MatchLabels[k]+");true"))
	}
	for _, e := range sel.MatchExpressions {
		n := SanitizeLabelName(e.Key)
		switch e.Operator {
		case metav1.LabelSelectorOpIn:
			out = append(out, Keep([]string{prefix + "_label_" + n, prefix + "_labelpresent_" + n}, "("+strings.Join(e.Values, "|")+");true"))
		case metav1.LabelSelectorOpNotIn:
			out = append(out, Drop([]string{prefix + "_label_" + n, prefix + "_labelpresent_" + n}, "("+strings.Join(e.Values, "|")+");true"))
		case metav1.LabelSelectorOpExists:
			out = append(out, Keep([]string{prefix + "_labelpresent_" + n}, "true"))
		case metav1.LabelSelectorOpDoesNotExist:
			out = append(out, Drop([]string{prefix + "_labelpresent_" + n}, "true"))
		}
	}
	return out
}

// EndpointLabel returns the value of the endpoint target label, as
// prometheus-operator sets it: the port name, else the deprecated
// targetPort (even when portNumber chose the port, and "0" for a zero
// number), else none. portNumber alone sets no endpoint label.
func EndpointLabel(port string, targetPort *intstr.IntOrString) string {
	switch {
	case port != "":
		return port
	case targetPort != nil:
		return targetPort.String()
	}
	return ""
}

// TargetPortFilter keeps the targets on a container port, by name or
// number; nil for a zero port.
func (ch *Checker) TargetPortFilter(p *intstr.IntOrString) (yaml.MapSlice, error) {
	switch {
	case p.Type == intstr.String && p.StrVal != "":
		if _, err := ch.Regexp(p.StrVal); err != nil {
			return nil, err
		}
		return Keep([]string{"__meta_kubernetes_pod_container_port_name"}, p.StrVal), nil
	case p.Type == intstr.Int && p.IntVal != 0:
		return Keep([]string{"__meta_kubernetes_pod_container_port_number"}, p.String()), nil
	}
	return nil, nil
}

// JobName keeps the job label of the target in __tmp_prometheus_job_name.
func JobName() yaml.MapSlice {
	return CopyLabel("job", "__tmp_prometheus_job_name")
}

// RunningFilter drops the targets of pods that have ended.
func RunningFilter() yaml.MapSlice {
	return Drop([]string{"__meta_kubernetes_pod_phase"}, "(Failed|Succeeded)")
}

// Keep keeps the targets whose source labels match regex.
func Keep(source []string, regex string) yaml.MapSlice {
	return yaml.MapSlice{
		{Key: "action", Value: "keep"},
		{Key: "source_labels", Value: source},
		{Key: "regex", Value: regex},
	}
}

// Drop drops the targets whose source labels match regex.
func Drop(source []string, regex string) yaml.MapSlice {
	return yaml.MapSlice{
		{Key: "action", Value: "drop"},
		{Key: "source_labels", Value: source},
		{Key: "regex", Value: regex},
	}
}

// CopyLabel copies label from into label to.
func CopyLabel(from, to string) yaml.MapSlice {
	return yaml.MapSlice{
		{Key: "source_labels", Value: []string{from}},
		{Key: "target_label", Value: to},
	}
}

// LabelFrom sets label to the value of source when it is not empty.
func LabelFrom(source, label string) yaml.MapSlice {
	return yaml.MapSlice{
		{Key: "source_labels", Value: []string{source}},
		{Key: "target_label", Value: label},
		{Key: "regex", Value: "(.+)"},
		{Key: "replacement", Value: "${1}"},
	}
}

// SetLabel sets label to value.
func SetLabel(label, value string) yaml.MapSlice {
	return yaml.MapSlice{
		{Key: "target_label", Value: label},
		{Key: "replacement", Value: value},
	}
}

// SanitizeLabelName replaces the characters Kubernetes allows in label
// names and Prometheus' meta labels do not with underscores.
func SanitizeLabelName(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, name)
}

const (
	// labelTmpHash is what a target is sharded on: __address__, unless a
	// relabeling sets it.
	labelTmpHash = "__tmp_hash"
	// labelDisableSharding, set by a relabeling, makes every shard keep
	// the target.
	labelDisableSharding = "__tmp_disable_sharding"
)

// AppendSharding appends to a job's relabelings those that keep, with
// more than one shard, the targets of the shard the reloader expands
// $(SHARD) to: __tmp_hash, unless a relabeling set it, is the label source
// (__address__, or __param_target for Probes, as prometheus-operator); its
// hashmod by the shard count must be the shard, or __tmp_disable_sharding
// set. They are prometheus-operator's, which writes them with one shard
// too (a modulus of 1 keeps every target): with one shard, none is added.
func AppendSharding(relabelings []yaml.MapSlice, shards int, source string) []yaml.MapSlice {
	if shards <= 1 {
		return relabelings
	}
	return append(relabelings,
		yaml.MapSlice{
			{Key: "source_labels", Value: []string{source, labelTmpHash}},
			{Key: "target_label", Value: labelTmpHash},
			{Key: "regex", Value: "(.+);"},
			{Key: "replacement", Value: "$1"},
			{Key: "action", Value: "replace"},
		},
		yaml.MapSlice{
			{Key: "source_labels", Value: []string{labelTmpHash}},
			{Key: "target_label", Value: labelTmpHash},
			{Key: "modulus", Value: int64(shards)},
			{Key: "action", Value: "hashmod"},
		},
		yaml.MapSlice{
			{Key: "source_labels", Value: []string{labelTmpHash, labelDisableSharding}},
			{Key: "regex", Value: "$(SHARD);|.+;.+"},
			{Key: "action", Value: "keep"},
		},
	)
}
