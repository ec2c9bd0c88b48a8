package controller

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"unicode"
	"unicode/utf8"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	promtemplate "github.com/prometheus/prometheus/template"
	"github.com/prometheus/prometheus/util/features"
	"github.com/prometheus/prometheus/util/strutil"
)

const (
	// templatePreamble declares the variables rulefmt declares before it
	// parses a label or annotation of an alerting rule as a template.
	templatePreamble = "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
	// maxImplicitKey is the longest mapping key, in bytes as written,
	// that is written without the explicit "? " indicator: yaml.v3 reads
	// implicit keys of up to 1024 characters only.
	maxImplicitKey = 1000
)

// ruleChecker turns PrometheusRules into rule files, validated as
// rulefmt.Parse validates them when Prometheus loads them, without reading
// the YAML back: the PrometheusRule is converted to rulefmt's types and
// checked as rulefmt.(*RuleGroups).Validate checks them, in its words,
// with Prometheus' own PromQL parser and its template functions. A
// ruleChecker parses each distinct expression and template once, and
// compiles each distinct regular expression of a label matcher once
// (parseExpr), which is where the time goes: rulefmt builds Prometheus'
// template function map afresh for every label and annotation of every
// alerting rule. It is not safe for concurrent use.
type ruleChecker struct {
	// templates knows the names of Prometheus' template functions, bound
	// to stubs: parsing a template only checks that the functions it
	// calls exist.
	templates *template.Template
	// exprs and texts remember what parsing an expression or a template
	// gave.
	exprs map[string]error
	texts map[templateKey]error
	// regexps tells whether the regular expressions of label matchers
	// compiled so far match the empty string.
	regexps map[string]bool
}

// templateKey is a template with its name, which parsing can depend on:
// a {{define}} of the template's own name is an error.
type templateKey struct {
	name, text string
}

func newRuleChecker() *ruleChecker {
	// RegisterFeatures lists the functions of the map Prometheus' template
	// Expander is built with.
	reg := features.NewRegistry()
	promtemplate.RegisterFeatures(reg)
	funcs := template.FuncMap{}
	for name := range reg.Get()[features.TemplatingFunctions] {
		funcs[name] = templateFunctionStub
	}
	return &ruleChecker{
		templates: template.New("").Funcs(funcs),
		exprs:     map[string]error{},
		texts:     map[templateKey]error{},
		regexps:   map[string]bool{},
	}
}

func templateFunctionStub(...any) any { return nil }

// file renders the rule file of r, or says why Prometheus would refuse it.
func (c *ruleChecker) file(r *monitoringv1.PrometheusRule) (string, error) {
	var errs []string
	// duration parses a duration as rulefmt would; a bad one is reported
	// with where it is and left out, so that the rest is validated.
	duration := func(where rulePlace, field string, d *monitoringv1.Duration) model.Duration {
		if d == nil || *d == "" {
			return 0
		}
		v, err := model.ParseDuration(string(*d))
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %s: %v", where, field, err))
		}
		return v
	}
	// utf8Check reports the strings rulefmt does not check and the rule
	// file could not hold: YAML is UTF-8.
	utf8Check := func(where rulePlace, field, s string) {
		if !utf8.ValidString(s) {
			errs = append(errs, fmt.Sprintf("%s: %s is not valid UTF-8", where, field))
		}
	}

	groups := make([]rulefmt.RuleGroup, len(r.Spec.Groups))
	for i, g := range r.Spec.Groups {
		where := rulePlace{group: g.Name}
		utf8Check(where, "name", g.Name)
		rg := rulefmt.RuleGroup{
			Name:     g.Name,
			Interval: duration(where, "interval", g.Interval),
			Labels:   g.Labels,
			Rules:    make([]rulefmt.Rule, len(g.Rules)),
		}
		if g.QueryOffset != nil && *g.QueryOffset != "" {
			d := duration(where, "query_offset", g.QueryOffset)
			rg.QueryOffset = &d
		}
		if g.Limit != nil {
			rg.Limit = *g.Limit
		}
		for j, gr := range g.Rules {
			where := rulePlace{group: g.Name, rule: j + 1, name: cmp.Or(gr.Alert, gr.Record)}
			ru := rulefmt.Rule{
				Record:      gr.Record,
				Alert:       gr.Alert,
				Expr:        gr.Expr.String(),
				For:         duration(where, "for", gr.For),
				Labels:      gr.Labels,
				Annotations: gr.Annotations,
			}
			if gr.KeepFiringFor != nil {
				d := monitoringv1.Duration(*gr.KeepFiringFor)
				ru.KeepFiringFor = duration(where, "keep_firing_for", &d)
			}
			utf8Check(where, "alert", ru.Alert)
			utf8Check(where, "expr", ru.Expr)
			for k, v := range ru.Annotations {
				if !utf8.ValidString(v) {
					utf8Check(where, fmt.Sprintf("annotation %q", k), v)
				}
			}
			rg.Rules[j] = ru
		}
		groups[i] = rg
	}
	errs = append(errs, c.validate(groups)...)
	if len(errs) > 0 {
		return "", invalidRules(errs)
	}
	return string(appendRuleFile(nil, r)), nil
}

// rulePlace is where in a PrometheusRule a field is, for an error
// message: a group, or a rule of a group, from 1. It is formatted only
// when there is an error.
type rulePlace struct {
	group string
	rule  int
	name  string
}

func (p rulePlace) String() string {
	if p.rule == 0 {
		return fmt.Sprintf("group %q", p.group)
	}
	return fmt.Sprintf("group %q, rule %d, %q", p.group, p.rule, p.name)
}

// validate checks groups as rulefmt.(*RuleGroups).Validate does, and
// returns its errors as rulefmt words them, without the positions in a
// file the user never sees.
func (c *ruleChecker) validate(groups []rulefmt.RuleGroup) []string {
	var errs []string
	names := make(map[string]bool, len(groups))
	for _, g := range groups {
		if g.Name == "" {
			errs = append(errs, "Groupname must not be empty")
		}
		if names[g.Name] {
			errs = append(errs, `groupname: "`+g.Name+`" is repeated in the same file`)
		}
		names[g.Name] = true
		errs = appendLabelErrors(errs, g.Labels)
		for i := range g.Rules {
			r := &g.Rules[i]
			for _, err := range c.validateRule(r) {
				errs = append(errs, fmt.Sprintf("%s: %s", rulePlace{group: g.Name, rule: i + 1, name: cmp.Or(r.Alert, r.Record)}, err))
			}
		}
	}
	return errs
}

// validateRule checks r as rulefmt.(*Rule).Validate does.
func (c *ruleChecker) validateRule(r *rulefmt.Rule) []string {
	var errs []string
	if r.Record != "" && r.Alert != "" {
		errs = append(errs, "only one of 'record' and 'alert' must be set")
	}
	if r.Record == "" && r.Alert == "" {
		errs = append(errs, "one of 'record' or 'alert' must be set")
	}
	if r.Expr == "" {
		errs = append(errs, "field 'expr' must be set in rule")
	} else if err := c.parseExpr(r.Expr); err != nil {
		errs = append(errs, "could not parse expression: "+err.Error())
	}
	if r.Record != "" {
		if len(r.Annotations) > 0 {
			errs = append(errs, "invalid field 'annotations' in recording rule")
		}
		if r.For != 0 {
			errs = append(errs, "invalid field 'for' in recording rule")
		}
		if r.KeepFiringFor != 0 {
			errs = append(errs, "invalid field 'keep_firing_for' in recording rule")
		}
		if !model.UTF8Validation.IsValidMetricName(r.Record) {
			errs = append(errs, "invalid recording rule name: "+r.Record)
		}
		if strings.ContainsAny(r.Record, "{}") {
			errs = append(errs, "braces present in the recording rule name; should it be in expr?: "+r.Record)
		}
	}
	errs = appendLabelErrors(errs, r.Labels)
	for k := range r.Annotations {
		if !model.UTF8Validation.IsValidLabelName(k) {
			errs = append(errs, "invalid annotation name: "+k)
		}
	}
	if r.Alert == "" {
		return errs
	}
	name := "__alert_" + r.Alert
	for k, v := range r.Labels {
		if err := c.parseTemplate(name, v); err != nil {
			errs = append(errs, fmt.Sprintf("label %q: %v", k, err))
		}
	}
	for k, v := range r.Annotations {
		if err := c.parseTemplate(name, v); err != nil {
			errs = append(errs, fmt.Sprintf("annotation %q: %v", k, err))
		}
	}
	return errs
}

// appendLabelErrors checks the labels of a group or a rule as rulefmt does.
func appendLabelErrors(errs []string, labels map[string]string) []string {
	for k, v := range labels {
		if !model.UTF8Validation.IsValidLabelName(k) || k == model.MetricNameLabel {
			errs = append(errs, "invalid label name: "+k)
		}
		if !model.LabelValue(v).IsValid() {
			errs = append(errs, "invalid label value: "+v)
		}
	}
	return errs
}

// parseExpr checks expr as the PromQL parser does, and returns the
// parser's own error.
//
// The parser compiles the regular expression of every =~ and !~ matcher,
// which takes a third of its time, and rules repeat the same few
// (code=~"5.."). So expr is parsed with each of them replaced by a
// placeholder, and each distinct one is compiled once, as the parser
// compiles it. The parser does nothing else with them but ask whether they
// match the empty string (a selector needs a matcher that does not): the
// placeholder, "" or "x", gives the same answer. An expression that fails
// anywhere along the way is parsed as it is, for the parser's verdict and
// message.
func (c *ruleChecker) parseExpr(expr string) error {
	if err, ok := c.exprs[expr]; ok {
		return err
	}
	var err error
	if generic, ok := c.withoutRegexps(expr); !ok {
		_, err = parser.ParseExpr(expr)
	} else if _, err = parser.ParseExpr(generic); err != nil {
		_, err = parser.ParseExpr(expr)
	}
	c.exprs[expr] = err
	return err
}

// withoutRegexps returns expr with the regular expression of each =~ and
// !~ matcher replaced by its placeholder, or false when one of them does
// not unquote or compile, or expr does not lex.
func (c *ruleChecker) withoutRegexps(expr string) (string, bool) {
	var (
		b    strings.Builder
		done int // expr[:done] is in b
		prev parser.ItemType
		item parser.Item
	)
	for l := parser.Lex(expr); ; prev = item.Typ {
		l.NextItem(&item)
		switch {
		case item.Typ == parser.EOF:
			if done == 0 {
				return expr, true
			}
			b.WriteString(expr[done:])
			return b.String(), true
		case item.Typ == parser.ERROR:
			return "", false
		case item.Typ != parser.STRING || prev != parser.EQL_REGEX && prev != parser.NEQ_REGEX:
			continue
		}
		re, err := strutil.Unquote(item.Val)
		if err != nil {
			return "", false
		}
		matchesEmpty, ok := c.regexps[re]
		if !ok {
			m, err := labels.NewFastRegexMatcher(re)
			if err != nil {
				return "", false
			}
			matchesEmpty = m.MatchString("")
			c.regexps[re] = matchesEmpty
		}
		if b.Len() == 0 {
			b.Grow(len(expr))
		}
		b.WriteString(expr[done:item.Pos])
		if matchesEmpty {
			b.WriteString(`""`)
		} else {
			b.WriteString(`"x"`)
		}
		done = int(item.Pos) + len(item.Val)
	}
}

// parseTemplate parses text as rulefmt parses a label or an annotation of
// an alerting rule: after its preamble, with Prometheus' functions, as a
// template named name. Text without "{{" is text whatever it holds.
func (c *ruleChecker) parseTemplate(name, text string) error {
	if !strings.Contains(text, "{{") {
		return nil
	}
	key := templateKey{name: name, text: text}
	if err, ok := c.texts[key]; ok {
		return err
	}
	_, err := c.templates.New(name).Parse(templatePreamble + text)
	c.texts[key] = err
	return err
}

// appendRuleFile appends the rule file of r, whose strings are valid
// UTF-8, in block style, in the field order of rulefmt, map keys sorted.
// Strings are written plain, as literal blocks or double-quoted, so that
// yaml.v3, which rulefmt reads them with, reads back exactly the strings
// of r. The durations are written as r spells them.
func appendRuleFile(buf []byte, r *monitoringv1.PrometheusRule) []byte {
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
		buf = appendYAMLString(buf, k)
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
