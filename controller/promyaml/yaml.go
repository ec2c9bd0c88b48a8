// Package promyaml is the controller's one YAML writer, shared by the
// configuration (package promcfg) and the rule files (package rulefiles).
// It writes the two kinds of documents the controller renders for
// Prometheus, in block style and without reflection: the configuration
// (Encode, from yaml.MapSlice values) and the rule files (AppendRuleFile,
// from a PrometheusRule). Both write their keys, indentation and scalars
// with the helpers at the end, which choose between a plain scalar, a
// literal block (rule files only) and a double-quoted string. It is pure:
// it imports no client.
//
// Where things are:
//
//	yaml.go  Encode, AppendMapping, AppendString, AppendRuleFile
package promyaml

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	yaml "go.yaml.in/yaml/v2"
)

// Encode writes cfg in block style, laid out as yaml.v2 lays it out,
// into a buffer of size bytes to start with. It is several times faster
// than yaml.Marshal and makes a fraction of its garbage, for the values
// the configuration holds: yaml.MapSlice, []yaml.MapSlice, []string,
// string, bool, int64 and float64.
func Encode(cfg yaml.MapSlice, size int) ([]byte, error) {
	// The buffer is passed by value, not kept in a struct: an append then
	// needs no write barrier, which costs while the collector runs.
	return AppendMapping(make([]byte, 0, size), cfg, 0, false)
}

// AppendMapping appends m with its keys at column indent; inline says that
// the first key follows a "- " already written.
func AppendMapping(buf []byte, m yaml.MapSlice, indent int, inline bool) ([]byte, error) {
	for i, it := range m {
		if i > 0 || !inline {
			buf = appendIndent(buf, indent)
		}
		k, ok := it.Key.(string)
		if !ok {
			return nil, fmt.Errorf("encode yaml: key %v is not a string", it.Key)
		}
		buf = AppendString(buf, k)
		buf = append(buf, ':')
		var err error
		if buf, err = appendValue(buf, it.Value, indent); err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// appendValue appends the value of a key at column indent, from the colon
// on.
func appendValue(buf []byte, v any, indent int) ([]byte, error) {
	switch v := v.(type) {
	case string:
		buf = append(buf, ' ')
		buf = AppendString(buf, v)
	case bool:
		buf = append(buf, ' ')
		buf = strconv.AppendBool(buf, v)
	case int64:
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, v, 10)
	case float64:
		buf = append(buf, ' ')
		buf = strconv.AppendFloat(buf, v, 'g', -1, 64)
	case yaml.MapSlice:
		if len(v) == 0 {
			return append(buf, " {}\n"...), nil
		}
		buf = append(buf, '\n')
		return AppendMapping(buf, v, indent+2, false)
	case []yaml.MapSlice:
		if len(v) == 0 {
			return append(buf, " []\n"...), nil
		}
		buf = append(buf, '\n')
		for _, m := range v {
			buf = appendIndent(buf, indent)
			if len(m) == 0 {
				buf = append(buf, "- {}\n"...)
				continue
			}
			buf = append(buf, "- "...)
			var err error
			if buf, err = AppendMapping(buf, m, indent+2, true); err != nil {
				return nil, err
			}
		}
		return buf, nil
	case []string:
		if len(v) == 0 {
			return append(buf, " []\n"...), nil
		}
		buf = append(buf, '\n')
		for _, s := range v {
			buf = appendIndent(buf, indent)
			buf = append(buf, "- "...)
			buf = AppendString(buf, s)
			buf = append(buf, '\n')
		}
		return buf, nil
	default:
		return nil, fmt.Errorf("encode yaml: unsupported value of type %T", v)
	}
	return append(buf, '\n'), nil
}

// maxImplicitKey is the longest mapping key of a rule file, in bytes as
// written, that is written without the explicit "? " indicator: yaml.v3
// reads implicit keys of up to 1024 characters only.
const maxImplicitKey = 1000

// AppendRuleFile appends the rule file of r, whose strings are valid
// UTF-8, in block style, in the field order of rulefmt, map keys sorted.
// Strings are written plain, as literal blocks or double-quoted, so that
// yaml.v3, which rulefmt reads them with, reads back exactly the strings
// of r. The durations are written as r spells them.
func AppendRuleFile(buf []byte, r *monitoringv1.PrometheusRule) []byte {
	if buf == nil {
		buf = make([]byte, 0, ruleFileSize(r))
	}
	buf = append(buf, "groups:"...)
	if len(r.Spec.Groups) == 0 {
		return append(buf, " []\n"...)
	}
	buf = append(buf, '\n')
	for _, g := range r.Spec.Groups {
		buf = append(buf, "- name:"...)
		buf = appendRuleValue(buf, g.Name, 2)
		if g.Interval != nil && *g.Interval != "" {
			buf = append(buf, "  interval:"...)
			buf = appendRuleValue(buf, string(*g.Interval), 2)
		}
		if g.QueryOffset != nil && *g.QueryOffset != "" {
			buf = append(buf, "  query_offset:"...)
			buf = appendRuleValue(buf, string(*g.QueryOffset), 2)
		}
		if g.Limit != nil && *g.Limit != 0 {
			buf = append(buf, "  limit: "...)
			buf = strconv.AppendInt(buf, int64(*g.Limit), 10)
			buf = append(buf, '\n')
		}
		buf = appendRuleMap(buf, "labels", g.Labels, 2)
		buf = append(buf, "  rules:"...)
		if len(g.Rules) == 0 {
			buf = append(buf, " []\n"...)
			continue
		}
		buf = append(buf, '\n')
		for _, ru := range g.Rules {
			// The first key follows the "- " of the item.
			buf = append(buf, "  - "...)
			if ru.Record != "" {
				buf = append(buf, "record:"...)
				buf = appendRuleValue(buf, ru.Record, 4)
				buf = append(buf, "    "...)
			}
			if ru.Alert != "" {
				buf = append(buf, "alert:"...)
				buf = appendRuleValue(buf, ru.Alert, 4)
				buf = append(buf, "    "...)
			}
			buf = append(buf, "expr:"...)
			buf = appendRuleValue(buf, ru.Expr.String(), 4)
			if ru.For != nil && *ru.For != "" {
				buf = append(buf, "    for:"...)
				buf = appendRuleValue(buf, string(*ru.For), 4)
			}
			if ru.KeepFiringFor != nil && *ru.KeepFiringFor != "" {
				buf = append(buf, "    keep_firing_for:"...)
				buf = appendRuleValue(buf, string(*ru.KeepFiringFor), 4)
			}
			buf = appendRuleMap(buf, "labels", ru.Labels, 4)
			buf = appendRuleMap(buf, "annotations", ru.Annotations, 4)
		}
	}
	return buf
}

// ruleFileSize is a little more than the size of the rule file of r.
func ruleFileSize(r *monitoringv1.PrometheusRule) int {
	n := 64
	for _, g := range r.Spec.Groups {
		n += 96 + len(g.Name) + mapSize(g.Labels)
		for _, ru := range g.Rules {
			n += 96 + len(ru.Record) + len(ru.Alert) + len(ru.Expr.StrVal) + mapSize(ru.Labels) + mapSize(ru.Annotations)
		}
	}
	return n
}

func mapSize(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v) + 16
	}
	return n
}

// appendRuleMap appends m under key at column indent, unless m is empty.
func appendRuleMap(buf []byte, key string, m map[string]string, indent int) []byte {
	if len(m) == 0 {
		return buf
	}
	buf = appendIndent(buf, indent)
	buf = append(buf, key...)
	buf = append(buf, ":\n"...)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		buf = appendIndent(buf, indent+2)
		start := len(buf)
		buf = AppendString(buf, k)
		if len(buf)-start > maxImplicitKey {
			// An explicit key: "? key", then ": value" on the next line.
			buf = slices.Insert(buf, start, '?', ' ')
			buf = append(buf, '\n')
			buf = appendIndent(buf, indent+2)
		}
		buf = append(buf, ':')
		buf = appendRuleValue(buf, m[k], indent+2)
	}
	return buf
}

// appendRuleValue appends s as the value of a key at column indent, from
// after the colon to the end of the line, or of the literal block.
func appendRuleValue(buf []byte, s string, indent int) []byte {
	switch {
	case plainRuleYAML(s):
		buf = append(buf, ' ')
		buf = append(buf, s...)
		return append(buf, '\n')
	case literalYAML(s):
		return appendLiteral(buf, s, indent+2)
	}
	buf = append(buf, ' ')
	buf = strconv.AppendQuote(buf, s)
	return append(buf, '\n')
}

// spaces indent by slicing.
const spaces = "                                                                "

func appendIndent(buf []byte, n int) []byte {
	for ; n > len(spaces); n -= len(spaces) {
		buf = append(buf, spaces...)
	}
	return append(buf, spaces[:n]...)
}

// AppendString appends s as a plain scalar when that is certain to
// read back as the same string, else double-quoted: Go's escapes are a
// subset of YAML's.
func AppendString(buf []byte, s string) []byte {
	if plainYAML(s) {
		return append(buf, s...)
	}
	return strconv.AppendQuote(buf, s)
}

// plainYAML reports whether s can be written as a plain scalar in block
// context and read back as the same string by yaml.v2, which Prometheus
// parses its configuration with. It errs on the side of quoting.
func plainYAML(s string) bool {
	return plainScalar(s, "")
}

// plainRuleYAML reports whether s can be written as a plain scalar in
// block context and read back as the same string. It is plainYAML, which
// errs on the side of quoting, with spaces, quotes and '#' allowed after
// the first character: PromQL expressions and annotations are full of
// them. They are safe there unless a space trails, follows a colon or
// precedes a '#'.
func plainRuleYAML(s string) bool {
	if !plainScalar(s, ` "'#`) {
		return false
	}
	return s[len(s)-1] != ' ' && !strings.Contains(s, ": ") && !strings.Contains(s, " #")
}

// plainScalar is plainYAML with the characters of inner also allowed
// after the first one; the caller ensures they are safe where they are.
func plainScalar(s, inner string) bool {
	if s == "" {
		return false
	}
	first := s[0]
	switch {
	case isAlnum(first), first == '_', first == '/', first == '$', first == '(', first == '^', first == '.', first == ';':
	default:
		// Indicators, signs and anything else.
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case plainByte(c):
		case c == ':':
			// "a:" would start a mapping; "a:b" is a scalar.
			if i == len(s)-1 {
				return false
			}
		case strings.IndexByte(inner, c) < 0:
			// Spaces, '#', quotes, control and non-ASCII characters.
			return false
		}
	}
	switch {
	case first >= '0' && first <= '9' || first == '.':
		// Numbers, timestamps and base 60 numbers are not strings, and
		// "..." ends a document.
		if strings.HasPrefix(s, "...") {
			return false
		}
		if strings.ContainsAny(s, "-:") || strings.HasPrefix(s, "0b") || strings.HasPrefix(s, "0o") || strings.HasPrefix(s, "0x") {
			return false
		}
		n := strings.ReplaceAll(s, "_", "")
		if _, err := strconv.ParseFloat(n, 64); err == nil {
			return false
		}
		if len(s) == 4 && (strings.EqualFold(s, ".inf") || strings.EqualFold(s, ".nan")) {
			return false
		}
	case len(s) <= len("false"):
		// Booleans and null, in YAML 1.1.
		for _, w := range [...]string{"y", "yes", "n", "no", "on", "off", "true", "false", "null"} {
			if strings.EqualFold(s, w) {
				return false
			}
		}
	}
	return true
}

// literalYAML reports whether s, which spans lines, can be written as a
// literal block scalar and read back as the same string: it starts with
// neither a space nor a line break (so the indentation needs no
// indicator), has no space at the end of a line, and holds no tab, no
// control character and no character YAML 1.1 takes for a line break.
func literalYAML(s string) bool {
	if !strings.Contains(s, "\n") || s[0] == ' ' || s[0] == '\n' || !utf8.ValidString(s) {
		return false
	}
	for i, r := range s {
		switch {
		case r == '\n':
			if s[i-1] == ' ' {
				return false
			}
		case !unicode.IsPrint(r):
			// Tabs, controls, U+0085, U+00A0, U+2028, U+2029, U+FEFF.
			return false
		}
	}
	return s[len(s)-1] != ' '
}

// appendLiteral appends s as a literal block scalar with its lines at
// column indent; the chomping indicator keeps the trailing line breaks.
func appendLiteral(buf []byte, s string, indent int) []byte {
	body := strings.TrimRight(s, "\n")
	breaks := len(s) - len(body)
	switch breaks {
	case 0:
		buf = append(buf, " |-\n"...)
	case 1:
		buf = append(buf, " |\n"...)
	default:
		buf = append(buf, " |+\n"...)
	}
	for line := range strings.SplitSeq(body, "\n") {
		if line != "" {
			buf = appendIndent(buf, indent)
			buf = append(buf, line...)
		}
		buf = append(buf, '\n')
	}
	// The first break ends the last line; the others are empty lines.
	for range breaks - 1 {
		buf = append(buf, '\n')
	}
	return buf
}

// plainLow and plainHigh are the sets of the bytes below 64 and from 64 to
// 127 that are safe anywhere in a plain scalar: letters, digits and
// _./$(){}[]|;+*?^-=@%~,<>\ (the bit of a byte is 1 << (byte % 64)).
const (
	plainLow uint64 = 1<<'$' | 1<<'%' | 1<<'(' | 1<<')' | 1<<'*' | 1<<'+' | 1<<',' | 1<<'-' | 1<<'.' | 1<<'/' |
		0x3ff<<'0' | 1<<';' | 1<<'<' | 1<<'=' | 1<<'>' | 1<<'?'
	plainHigh uint64 = 1<<('@'-64) | 0x3ffffff<<('A'-64) | 1<<('['-64) | 1<<('\\'-64) | 1<<(']'-64) | 1<<('^'-64) |
		1<<('_'-64) | 0x3ffffff<<('a'-64) | 1<<('{'-64) | 1<<('|'-64) | 1<<('}'-64) | 1<<('~'-64)
)

// plainByte reports whether c is safe anywhere in a plain scalar.
func plainByte(c byte) bool {
	if c < 64 {
		return plainLow>>c&1 != 0
	}
	return c < 128 && plainHigh>>(c-64)&1 != 0
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// SortedMap returns m as a mapping ordered by key.
func SortedMap[V any](m map[string]V) yaml.MapSlice {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(yaml.MapSlice, len(keys))
	for i, k := range keys {
		out[i] = yaml.MapItem{Key: k, Value: m[k]}
	}
	return out
}
