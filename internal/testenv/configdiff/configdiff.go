// Package configdiff is for tests only: the differential tests against
// prometheus-operator (TestOperatorConfig of controller/prometheus and of
// controller/alertmanager/amconfig) compare its configuration and ours
// section by section, and hold each case to the differences it is known
// to show.
package configdiff

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

// Diff is the difference in one section of the configuration.
type Diff struct {
	Section, Diff string
}

// Sections returns the differences between want, prometheus-operator's
// sections, and got, podreload's, each a section's name to its YAML: a
// section only in one, or the diff of one in both. They come sorted by
// order's key of their names.
func Sections(want, got map[string]string, order func(name string) string) []Diff {
	var names []string
	for name := range want {
		names = append(names, name)
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(order(a), order(b)) })
	var diffs []Diff
	for _, name := range names {
		w, wok := want[name]
		g, gok := got[name]
		switch {
		case !gok:
			diffs = append(diffs, Diff{Section: name, Diff: "only in prometheus-operator's:\n" + w})
		case !wok:
			diffs = append(diffs, Diff{Section: name, Diff: "only in podreload's:\n" + g})
		case w != g:
			diffs = append(diffs, Diff{Section: name, Diff: cmp.Diff(w, g)})
		}
	}
	return diffs
}

// Known is a difference between prometheus-operator's configuration and
// ours that a case is expected to show, until the work named in Reason is
// done or for the reason it gives.
type Known struct {
	// Sections are the sections expected to differ, by name; "*" alone
	// stands for any number of sections, at least one.
	Sections []string
	// Reason says why they differ.
	Reason string
}

// Check fails t unless diffs, the differences of the case name, are the
// ones known lists for it: none for a case not listed, and exactly its
// sections for one listed, so that the table stays true when a difference
// goes. A known difference is logged.
func Check(t testing.TB, name string, known map[string]Known, diffs []Diff) {
	t.Helper()
	sections := make([]string, 0, len(diffs))
	var msg strings.Builder
	for _, d := range diffs {
		sections = append(sections, d.Section)
		fmt.Fprintf(&msg, "\n=== %s (- prometheus-operator, + podreload):\n%s", d.Section, d.Diff)
	}
	k, isKnown := known[name]
	switch {
	case !isKnown:
		require.Empty(t, sections, "the configurations differ:%s", msg.String())
	case len(sections) == 0:
		t.Fatalf("the known difference is gone (%s): remove the case from the known differences", k.Reason)
	case slices.Equal(k.Sections, []string{"*"}):
		t.Logf("known difference (%s):%s", k.Reason, msg.String())
	default:
		require.Equal(t, k.Sections, sections, "the differences are not the known ones (%s): update the known differences:%s", k.Reason, msg.String())
		t.Logf("known difference (%s):%s", k.Reason, msg.String())
	}
}
