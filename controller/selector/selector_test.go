package selector

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func TestSelected(t *testing.T) {
	namespaces := map[string]labels.Set{
		"monitoring": {"team": "platform"},
		"apps":       {"team": "apps", "monitored": "true"},
		"other":      {"team": "other"},
	}
	matchTeam := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "apps"}}
	object := func(ns string, l map[string]string) metav1.Object {
		return &metav1.ObjectMeta{Namespace: ns, Name: "x", Labels: l}
	}
	all := &metav1.LabelSelector{}
	appLabel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}

	for _, tc := range []struct {
		name                 string
		selector, nsSelector *metav1.LabelSelector
		obj                  metav1.Object
		namespaces           map[string]labels.Set
		want                 bool
		wantErr              string
	}{
		{name: "nil selector selects nothing", obj: object("monitoring", nil)},
		{name: "nil selector selects nothing, even in every namespace", nsSelector: all, obj: object("monitoring", map[string]string{"app": "api"})},
		{
			name:       "invalid namespace selector is reported even with a nil selector",
			nsSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Near"}}},
			obj:        object("monitoring", nil),
			wantErr:    `parse namespace selector: "Near" is not a valid label selector operator`,
		},
		{name: "empty selector selects every object of the own namespace", selector: all, obj: object("monitoring", nil), want: true},
		{name: "nil namespace selector is the own namespace only", selector: all, obj: object("apps", nil)},
		{name: "nil namespace selector needs no namespace labels", selector: all, obj: object("monitoring", nil), namespaces: map[string]labels.Set{}, want: true},
		{name: "matching labels", selector: appLabel, obj: object("monitoring", map[string]string{"app": "api", "x": "y"}), want: true},
		{name: "labels that do not match", selector: appLabel, obj: object("monitoring", map[string]string{"app": "web"})},
		{name: "no labels", selector: appLabel, obj: object("monitoring", nil)},
		{
			name:     "match expressions",
			selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"api", "web"}}}},
			obj:      object("monitoring", map[string]string{"app": "web"}), want: true,
		},
		{name: "empty namespace selector is every namespace", selector: all, nsSelector: all, obj: object("other", nil), want: true},
		{name: "empty namespace selector takes namespaces not listed", selector: all, nsSelector: all, obj: object("new", nil), want: true},
		{name: "namespace selector matches the namespace labels", selector: all, nsSelector: matchTeam, obj: object("apps", nil), want: true},
		{name: "namespace selector does not match the own namespace", selector: all, nsSelector: matchTeam, obj: object("monitoring", nil)},
		{name: "namespace selector does not match another namespace", selector: all, nsSelector: matchTeam, obj: object("other", nil)},
		{name: "namespace unknown to the selector", selector: all, nsSelector: matchTeam, obj: object("new", nil)},
		{name: "namespace and object selectors both match", selector: appLabel, nsSelector: matchTeam, obj: object("apps", map[string]string{"app": "api"}), want: true},
		{name: "namespace matches but the object does not", selector: appLabel, nsSelector: matchTeam, obj: object("apps", nil)},
		{
			name:     "invalid label selector",
			selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}},
			obj:      object("monitoring", nil),
			wantErr:  `parse label selector: "Near" is not a valid label selector operator`,
		},
		{
			name:       "invalid namespace selector is reported even when the labels do not match",
			selector:   appLabel,
			nsSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a b"}},
			obj:        object("monitoring", nil),
			wantErr:    `parse namespace selector: values[0][team]: Invalid value: "a b": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespaces
			if tc.namespaces != nil {
				ns = tc.namespaces
			}
			got, err := Selects("monitoring", tc.selector, tc.nsSelector, tc.obj, ns)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				require.False(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
