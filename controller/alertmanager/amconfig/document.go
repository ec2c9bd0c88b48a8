package amconfig

import (
	"errors"
	"fmt"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/types"
)

// part is what one AlertmanagerConfig adds to the configuration.
type part struct {
	config *monitoringv1alpha1.AlertmanagerConfig
	// route is the first-level route, nil when the object has none.
	route         *route
	receivers     []*receiver
	inhibitRules  []*inhibitRule
	timeIntervals []*timeInterval
}

// convertConfig converts an AlertmanagerConfig, the namespace matcher of
// s applied to its route and inhibition rules. Without a route, only its
// inhibition rules are kept, as prometheus-operator keeps them.
func convertConfig(r refs, c *monitoringv1alpha1.AlertmanagerConfig, s strategy) (*part, error) {
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	p := &part{config: c}
	for _, ir := range c.Spec.InhibitRules {
		rule := convertInhibitRule(ir)
		s.processInhibitRule(c.Namespace, rule)
		p.inhibitRules = append(p.inhibitRules, rule)
	}
	if c.Spec.Route == nil {
		return p, nil
	}
	var err error
	if p.route, err = convertRoute(c.Spec.Route, key); err != nil {
		return nil, fmt.Errorf("route: %w", err)
	}
	s.processRoute(c.Namespace, p.route)
	for _, rc := range c.Spec.Receivers {
		out, err := r.convertReceiver(rc, key)
		if err != nil {
			return nil, fmt.Errorf("receiver %q: %w", rc.Name, err)
		}
		p.receivers = append(p.receivers, out)
	}
	for _, mti := range c.Spec.MuteTimeIntervals {
		out, err := convertTimeInterval(mti, key)
		if err != nil {
			return nil, err
		}
		p.timeIntervals = append(p.timeIntervals, out)
	}
	return p, nil
}

// baseDocument is the base configuration as a document whose keys keep
// their order: what the AlertmanagerConfigs add goes into it, the rest is
// written as it is.
type baseDocument yaml.MapSlice

func parseBase(b []byte) (baseDocument, error) {
	var doc yaml.MapSlice
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	return baseDocument(doc), nil
}

// assemble writes doc with parts added: their routes before the base's
// first-level routes (so that, all continuing, they see every alert),
// their receivers, inhibition rules and mute time intervals after the
// base's.
func assemble(doc baseDocument, parts []*part) ([]byte, error) {
	var routes, receivers, rules, intervals []any
	for _, p := range parts {
		if p.route != nil {
			routes = append(routes, p.route)
		}
		for _, r := range p.receivers {
			receivers = append(receivers, r)
		}
		for _, r := range p.inhibitRules {
			rules = append(rules, r)
		}
		for _, t := range p.timeIntervals {
			intervals = append(intervals, t)
		}
	}
	out := make(yaml.MapSlice, len(doc))
	copy(out, doc)
	root, ok := value(out, "route").(yaml.MapSlice)
	if !ok {
		return nil, errors.New("the base configuration has no route")
	}
	root = append(yaml.MapSlice(nil), root...)
	root = set(root, "routes", append(routes, list(value(root, "routes"))...))
	out = set(out, "route", root)
	out = set(out, "receivers", append(list(value(out, "receivers")), receivers...))
	if len(rules) > 0 {
		out = set(out, "inhibit_rules", append(list(value(out, "inhibit_rules")), rules...))
	}
	if len(intervals) > 0 {
		out = set(out, "mute_time_intervals", append(list(value(out, "mute_time_intervals")), intervals...))
	}
	return yaml.Marshal(out)
}

// value returns the value of key in m, nil when absent.
func value(m yaml.MapSlice, key string) any {
	for _, item := range m {
		if item.Key == key {
			return item.Value
		}
	}
	return nil
}

// list returns v as a list, nil when it is not one.
func list(v any) []any {
	l, _ := v.([]any)
	// A copy, so that appending to it leaves the base alone.
	return append([]any(nil), l...)
}

// set sets key in m to v, appended when absent; an empty list removes it.
func set(m yaml.MapSlice, key string, v any) yaml.MapSlice {
	if l, ok := v.([]any); ok && len(l) == 0 {
		for i, item := range m {
			if item.Key == key {
				return append(m[:i:i], m[i+1:]...)
			}
		}
		return m
	}
	for i, item := range m {
		if item.Key == key {
			m[i].Value = v
			return m
		}
	}
	return append(m, yaml.MapItem{Key: key, Value: v})
}
