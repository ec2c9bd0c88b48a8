package amconfig

import (
	"fmt"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/alertmanager/timeinterval"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/types"
)

// route is a route of Alertmanager's configuration. Matchers are written
// in the form Alertmanager reads since 0.22 only.
type route struct {
	Receiver            string   `yaml:"receiver,omitempty"`
	GroupBy             []string `yaml:"group_by,omitempty"`
	Matchers            []string `yaml:"matchers,omitempty"`
	Continue            bool     `yaml:"continue,omitempty"`
	Routes              []*route `yaml:"routes,omitempty"`
	GroupWait           string   `yaml:"group_wait,omitempty"`
	GroupInterval       string   `yaml:"group_interval,omitempty"`
	RepeatInterval      string   `yaml:"repeat_interval,omitempty"`
	MuteTimeIntervals   []string `yaml:"mute_time_intervals,omitempty"`
	ActiveTimeIntervals []string `yaml:"active_time_intervals,omitempty"`
	// Labels are attached to the alerts the route matches, inherited by
	// its children (Alertmanager 0.34).
	Labels map[string]string `yaml:"labels,omitempty"`
}

// inhibitRule is an inhibition rule of Alertmanager's configuration.
type inhibitRule struct {
	SourceMatchers []string `yaml:"source_matchers,omitempty"`
	TargetMatchers []string `yaml:"target_matchers,omitempty"`
	Equal          []string `yaml:"equal,omitempty"`
}

// timeInterval is a named time interval of Alertmanager's configuration.
type timeInterval struct {
	Name          string                      `yaml:"name"`
	TimeIntervals []timeinterval.TimeInterval `yaml:"time_intervals"`
}

// prefixed is name in the namespace of the AlertmanagerConfig key, as
// prometheus-operator names receivers and time intervals:
// <namespace>/<name>/<name in the object>.
func prefixed(key types.NamespacedName, name string) string {
	if name == "" {
		return ""
	}
	return key.Namespace + "/" + key.Name + "/" + name
}

func prefixedAll(key types.NamespacedName, names []string) []string {
	var out []string
	for _, n := range names {
		out = append(out, prefixed(key, n))
	}
	return out
}

// matcher is m in Alertmanager's matcher syntax; a matcher without a type
// is an equality (or a regular expression with the deprecated regex).
func matcher(m monitoringv1alpha1.Matcher) string {
	if m.MatchType == "" {
		m.MatchType = monitoringv1alpha1.MatchEqual
		if m.Regex {
			m.MatchType = monitoringv1alpha1.MatchRegexp
		}
	}
	return m.String()
}

func matchers(ms []monitoringv1alpha1.Matcher) []string {
	var out []string
	for _, m := range ms {
		out = append(out, matcher(m))
	}
	return out
}

// namespaceMatcher is the matcher the namespace strategies add.
func namespaceMatcher(namespace string) string {
	return matcher(monitoringv1alpha1.Matcher{Name: "namespace", Value: namespace, MatchType: monitoringv1alpha1.MatchEqual})
}

// nonZero returns d, or "" when d is a zero duration: Alertmanager refuses
// a zero group or repeat interval, prometheus-operator leaves it out.
func nonZero(d *monitoringv1.NonEmptyDuration) (string, error) {
	if d == nil {
		return "", nil
	}
	v, err := model.ParseDuration(string(*d))
	if err != nil {
		return "", err
	}
	if v == 0 {
		return "", nil
	}
	return string(*d), nil
}

// route converts in and its children, names prefixed. Labels are a list
// of keys and values in the object (the API server keeps the keys
// unique), a map in Alertmanager's route; before 0.34 checkVersion
// refuses them.
func convertRoute(in *monitoringv1alpha1.Route, key types.NamespacedName) (*route, error) {
	out := &route{
		Receiver:            prefixed(key, in.Receiver),
		GroupBy:             in.GroupBy,
		Matchers:            matchers(in.Matchers),
		Continue:            in.Continue,
		MuteTimeIntervals:   prefixedAll(key, in.MuteTimeIntervals),
		ActiveTimeIntervals: prefixedAll(key, in.ActiveTimeIntervals),
	}
	for _, l := range in.Labels {
		if out.Labels == nil {
			out.Labels = map[string]string{}
		}
		out.Labels[l.Key] = l.Value
	}
	if in.GroupWait != nil {
		if _, err := model.ParseDuration(string(*in.GroupWait)); err != nil {
			return nil, fmt.Errorf("groupWait: %w", err)
		}
		out.GroupWait = string(*in.GroupWait)
	}
	var err error
	if out.GroupInterval, err = nonZero(in.GroupInterval); err != nil {
		return nil, fmt.Errorf("groupInterval: %w", err)
	}
	if out.RepeatInterval, err = nonZero(in.RepeatInterval); err != nil {
		return nil, fmt.Errorf("repeatInterval: %w", err)
	}
	children, err := in.ChildRoutes()
	if err != nil {
		return nil, err
	}
	for i := range children {
		c, err := convertRoute(&children[i], key)
		if err != nil {
			return nil, fmt.Errorf("routes[%d]: %w", i, err)
		}
		out.Routes = append(out.Routes, c)
	}
	return out, nil
}

func convertInhibitRule(in monitoringv1alpha1.InhibitRule) *inhibitRule {
	return &inhibitRule{SourceMatchers: matchers(in.SourceMatch), TargetMatchers: matchers(in.TargetMatch), Equal: in.Equal}
}

// convertTimeInterval converts a mute time interval, its name prefixed.
func convertTimeInterval(in monitoringv1alpha1.MuteTimeInterval, key types.NamespacedName) (*timeInterval, error) {
	out := &timeInterval{Name: prefixed(key, in.Name), TimeIntervals: []timeinterval.TimeInterval{}}
	for i, ti := range in.TimeIntervals {
		var t timeinterval.TimeInterval
		for _, tr := range ti.Times {
			p, err := tr.Parse()
			if err != nil {
				return nil, fmt.Errorf("muteTimeIntervals %s: timeIntervals[%d]: %w", in.Name, i, err)
			}
			t.Times = append(t.Times, timeinterval.TimeRange{StartMinute: p.Start, EndMinute: p.End})
		}
		for _, wd := range ti.Weekdays {
			p, err := wd.Parse()
			if err != nil {
				return nil, fmt.Errorf("muteTimeIntervals %s: timeIntervals[%d]: %w", in.Name, i, err)
			}
			t.Weekdays = append(t.Weekdays, timeinterval.WeekdayRange{InclusiveRange: timeinterval.InclusiveRange{Begin: p.Start, End: p.End}})
		}
		for _, dom := range ti.DaysOfMonth {
			t.DaysOfMonth = append(t.DaysOfMonth, timeinterval.DayOfMonthRange{InclusiveRange: timeinterval.InclusiveRange{Begin: dom.Start, End: dom.End}})
		}
		for _, m := range ti.Months {
			p, err := m.Parse()
			if err != nil {
				return nil, fmt.Errorf("muteTimeIntervals %s: timeIntervals[%d]: %w", in.Name, i, err)
			}
			t.Months = append(t.Months, timeinterval.MonthRange{InclusiveRange: timeinterval.InclusiveRange{Begin: p.Start, End: p.End}})
		}
		for _, y := range ti.Years {
			p, err := y.Parse()
			if err != nil {
				return nil, fmt.Errorf("muteTimeIntervals %s: timeIntervals[%d]: %w", in.Name, i, err)
			}
			t.Years = append(t.Years, timeinterval.YearRange{InclusiveRange: timeinterval.InclusiveRange{Begin: p.Start, End: p.End}})
		}
		out.TimeIntervals = append(out.TimeIntervals, t)
	}
	return out, nil
}

// AnnotationContinue is the annotation that, set on an Alertmanager to
// ContinueAsWritten, makes the first-level route of each
// AlertmanagerConfig continue only when the object says so, instead of
// always as prometheus-operator forces it.
const AnnotationContinue = "podreload.dev/alertmanagerconfig-continue"

// ContinueAsWritten is the value of AnnotationContinue that keeps each
// AlertmanagerConfig's continue.
const ContinueAsWritten = "as-written"

// strategy is the namespace matcher of
// spec.alertmanagerConfigMatcherStrategy, applied to an
// AlertmanagerConfig's first-level route and inhibition rules, and
// whether that route is forced to continue.
type strategy struct {
	// enforce is false for None.
	enforce bool
	// except is the namespace whose AlertmanagerConfigs get no matcher
	// (OnNamespaceExceptForAlertmanagerNamespace), "" for none.
	except string
	// asWritten keeps the route's continue (AnnotationContinue).
	asWritten bool
}

func newStrategy(am *monitoringv1.Alertmanager) strategy {
	s := strategy{enforce: true, asWritten: am.Annotations[AnnotationContinue] == ContinueAsWritten}
	switch am.Spec.AlertmanagerConfigMatcherStrategy.Type {
	case monitoringv1.NoneConfigMatcherStrategyType:
		s.enforce = false
	case monitoringv1.OnNamespaceExceptForAlertmanagerNamespaceConfigMatcherStrategyType:
		s.except = am.Namespace
	}
	return s
}

func (s strategy) applies(namespace string) bool {
	return s.enforce && namespace != s.except
}

// processRoute adds the namespace matcher to a first-level route, and
// sets continue: every first-level route continues, whatever the
// strategy, as prometheus-operator forces it, unless the Alertmanager
// asks for ContinueAsWritten.
func (s strategy) processRoute(namespace string, r *route) {
	if s.applies(namespace) {
		r.Matchers = append(r.Matchers, namespaceMatcher(namespace))
	}
	if !s.asWritten {
		r.Continue = true
	}
}

// processInhibitRule adds the namespace matcher to the source and target
// matchers of a rule, where it is not there already.
func (s strategy) processInhibitRule(namespace string, ir *inhibitRule) {
	if !s.applies(namespace) {
		return
	}
	m := namespaceMatcher(namespace)
	if !containsMatcher(ir.SourceMatchers, m) {
		ir.SourceMatchers = append(ir.SourceMatchers, m)
	}
	if !containsMatcher(ir.TargetMatchers, m) {
		ir.TargetMatchers = append(ir.TargetMatchers, m)
	}
}

// containsMatcher reports whether ms holds m, spaces ignored.
func containsMatcher(ms []string, m string) bool {
	m = strings.ReplaceAll(m, " ", "")
	for _, s := range ms {
		if strings.ReplaceAll(s, " ", "") == m {
			return true
		}
	}
	return false
}
