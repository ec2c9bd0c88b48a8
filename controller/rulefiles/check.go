package rulefiles

import (
	"cmp"
	"fmt"
	"regexp"
	"sync"
	"unicode/utf8"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"

	"github.com/podreload/podreload/controller/promyaml"
)

const (
	// nameValidation is how Prometheus 3 validates metric and label
	// names by default.
	nameValidation = model.UTF8Validation
	// stubExpr stands in for the expression of a rule that rulefmt
	// validates without it.
	stubExpr = "0"
)

// errorPosition is the lines and columns rulefmt puts before some of its
// errors: positions in a file the user never sees.
var errorPosition = regexp.MustCompile(`^(\d+:\d+: )+`)

// ruleChecker turns PrometheusRules into rule files, which Prometheus' own
// rulefmt validates as it does when Prometheus loads them. The rule file
// is not read back: the PrometheusRule is converted to rulefmt's types,
// which rulefmt validates, and written in YAML that reads back as the same
// strings (TestRenderRulesVerbatim).
//
// rulefmt checks each rule on its own, and within a rule, its expression
// and each label and annotation of an alerting rule (as a template) on
// their own. These are nearly all the cost, parsing PromQL and building
// Prometheus' template function map afresh for every label and
// annotation, and they repeat, across the rules of a file and across
// files: validating every rule file whole with rulefmt.Parse takes about
// eight times as long, and ten times as much memory, as what follows
// (BenchmarkRenderRules, cold). So a ruleChecker has rulefmt
// validate each distinct expression, and each distinct label or
// annotation of an alerting rule, once, each in a rule of its own; then
// each rule without them, with stubExpr for its expression, once per
// distinct rule when nothing else is left of its labels and annotations;
// and the groups of a file without their rules, once per distinct set of
// groups. It remembers what rulefmt said of each, and says it of every
// rule or file it is part of. TestRuleCheckerAsRulefmtParse checks that
// this says what rulefmt.Parse says of whole rule files. A ruleChecker is
// safe for concurrent use.
type ruleChecker struct {
	mu sync.Mutex
	// exprs, entries, rests and groups remember the errors rulefmt gave
	// for an expression, a label or annotation of an alerting rule, the
	// rest of a rule, and the groups of a file written without their
	// rules.
	exprs   map[string][]string
	entries map[ruleEntry][]string
	rests   map[ruleRest][]string
	groups  map[string][]string
}

// ruleEntry is a label or annotation of an alerting rule: rulefmt parses
// its value as a template named after the alert.
type ruleEntry struct {
	alert, key, value string
	annotation        bool
}

// ruleRest is a rule without labels or annotations, its expression
// stubExpr or empty: what is left of a rule once its expression and the
// labels and annotations of an alerting rule are validated apart.
type ruleRest struct {
	record, alert, expr        string
	forDuration, keepFiringFor model.Duration
}

func newRuleChecker() *ruleChecker {
	return &ruleChecker{
		exprs:   map[string][]string{},
		entries: map[ruleEntry][]string{},
		rests:   map[ruleRest][]string{},
		groups:  map[string][]string{},
	}
}

// file renders the rule file of r, or says why Prometheus would refuse it.
func (c *ruleChecker) file(r *monitoringv1.PrometheusRule) (string, error) {
	var errs []string
	// duration converts a duration as rulefmt reads it; a bad one is
	// reported with where it is and left out, so that the rest is
	// validated.
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
	// utf8Check reports the strings that rulefmt does not check, or
	// checks only after reading them from YAML, and that the rule file
	// could not hold: YAML is UTF-8.
	utf8Check := func(where rulePlace, field, s string) {
		if !utf8.ValidString(s) {
			errs = append(errs, fmt.Sprintf("%s: %s is not valid UTF-8", where, field))
		}
	}

	for _, g := range r.Spec.Groups {
		where := rulePlace{group: g.Name}
		utf8Check(where, "name", g.Name)
		for k, v := range g.Labels {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				utf8Check(where, fmt.Sprintf("label %q", k), k+v)
			}
		}
		duration(where, "interval", g.Interval)
		duration(where, "query_offset", g.QueryOffset)
		for i, gr := range g.Rules {
			where := rulePlace{group: g.Name, rule: i + 1, name: cmp.Or(gr.Alert, gr.Record)}
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
			for _, err := range c.rule(ru) {
				errs = append(errs, fmt.Sprintf("%s: %s", where, err))
			}
		}
	}
	errs = append(errs, c.groupErrors(r)...)
	if len(errs) > 0 {
		return "", invalidRules(errs)
	}
	return string(promyaml.AppendRuleFile(nil, r)), nil
}

// rulePlace is where in a PrometheusRule a field is, for an error
// message: a group, or a rule of a group, from 1, which rulefmt names as
// its errors do. It is formatted only when there is an error.
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

// rule returns the errors rulefmt gives for r, in its words, without
// positions.
func (c *ruleChecker) rule(r rulefmt.Rule) []string {
	var errs []string
	if r.Expr != "" {
		errs = append(errs, c.expr(r.Expr)...)
		r.Expr = stubExpr
	}
	// rulefmt parses the labels and annotations of an alerting rule as
	// templates; those of a rule that is also a recording rule are
	// left with it, for what rulefmt says of a recording rule's
	// annotations.
	if r.Alert != "" && r.Record == "" {
		for k, v := range r.Labels {
			errs = append(errs, c.entry(ruleEntry{alert: r.Alert, key: k, value: v})...)
		}
		for k, v := range r.Annotations {
			errs = append(errs, c.entry(ruleEntry{alert: r.Alert, key: k, value: v, annotation: true})...)
		}
		r.Labels, r.Annotations = nil, nil
	}
	if len(r.Labels) > 0 || len(r.Annotations) > 0 {
		return append(errs, validateRule(r)...)
	}
	rest := ruleRest{record: r.Record, alert: r.Alert, expr: r.Expr, forDuration: r.For, keepFiringFor: r.KeepFiringFor}
	return append(errs, remember(&c.mu, c.rests, rest, func() []string { return validateRule(r) })...)
}

// expr returns the errors rulefmt gives for a rule whose expression is
// expr, about expr: those it gives for a recording rule named "expr"
// (a valid name) with no other field.
func (c *ruleChecker) expr(expr string) []string {
	return remember(&c.mu, c.exprs, expr, func() []string {
		return validateRule(rulefmt.Rule{Record: "expr", Expr: expr})
	})
}

// entry returns the errors rulefmt gives for an alerting rule with e,
// about e: those it gives for an alerting rule of e's name with stubExpr
// and e alone.
func (c *ruleChecker) entry(e ruleEntry) []string {
	return remember(&c.mu, c.entries, e, func() []string {
		r := rulefmt.Rule{Alert: e.alert, Expr: stubExpr}
		if e.annotation {
			r.Annotations = map[string]string{e.key: e.value}
		} else {
			r.Labels = map[string]string{e.key: e.value}
		}
		return validateRule(r)
	})
}

// remember returns the errors m holds for key, or those validate returns,
// which it adds to m. It holds mu only to read and write m: two
// goroutines may validate the same key at once, to the same effect.
func remember[K comparable](mu *sync.Mutex, m map[K][]string, key K, validate func() []string) []string {
	mu.Lock()
	errs, ok := m[key]
	mu.Unlock()
	if !ok {
		errs = validate()
		mu.Lock()
		m[key] = errs
		mu.Unlock()
	}
	return errs
}

// validateRule returns what rulefmt says of r, without positions.
func validateRule(r rulefmt.Rule) []string {
	var errs []string
	for _, err := range r.Validate(rulefmt.RuleNode{}, nameValidation) {
		errs = append(errs, err.Unwrap().Error())
	}
	return errs
}

// groupErrors returns the errors rulefmt.Parse gives for the groups of r
// without their rules, and without the positions of its errors: it checks
// that their names are set and unique, and their labels. The durations
// and rules of the groups are checked in file.
func (c *ruleChecker) groupErrors(r *monitoringv1.PrometheusRule) []string {
	groups := make([]monitoringv1.RuleGroup, len(r.Spec.Groups))
	for i, g := range r.Spec.Groups {
		groups[i] = monitoringv1.RuleGroup{Name: g.Name, Labels: g.Labels}
	}
	content := promyaml.AppendRuleFile(nil, &monitoringv1.PrometheusRule{Spec: monitoringv1.PrometheusRuleSpec{Groups: groups}})
	return remember(&c.mu, c.groups, string(content), func() []string {
		var errs []string
		_, parseErrs := rulefmt.Parse(content, false, nameValidation)
		for _, err := range parseErrs {
			errs = append(errs, errorPosition.ReplaceAllString(err.Error(), ""))
		}
		return errs
	})
}
