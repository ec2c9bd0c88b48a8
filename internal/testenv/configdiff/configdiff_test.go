package configdiff

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSections(t *testing.T) {
	want := map[string]string{"global": "a: 1\n", "job x": "j: 1\n", "job y": "j: 2\n"}
	got := map[string]string{"global": "a: 2\n", "job x": "j: 1\n", "rule_files": "- r\n"}
	order := func(name string) string {
		if name == "global" {
			return "0"
		}
		return "1" + name
	}
	var sections []string
	for _, d := range Sections(want, got, order) {
		sections = append(sections, d.Section)
		switch d.Section {
		case "job y":
			require.Equal(t, "only in prometheus-operator's:\nj: 2\n", d.Diff)
		case "rule_files":
			require.Equal(t, "only in podreload's:\n- r\n", d.Diff)
		case "global":
			require.Contains(t, d.Diff, "a: 1")
			require.Contains(t, d.Diff, "a: 2")
		}
	}
	require.Equal(t, []string{"global", "job y", "rule_files"}, sections, "the sections that differ, in order")
	require.Empty(t, Sections(want, want, order))
}

// recorder is a testing.TB that records how a check ends.
type recorder struct {
	testing.TB
	failed bool
	out    strings.Builder
}

func (r *recorder) Helper() {}

func (r *recorder) Name() string { return "recorder" }

func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	fmt.Fprintf(&r.out, format, args...)
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.FailNow()
}

func (r *recorder) FailNow() { panic(r) }

func (r *recorder) Logf(format string, args ...any) { fmt.Fprintf(&r.out, format, args...) }

// check runs Check with a recorder, and returns whether it failed and
// what it said.
func check(name string, known map[string]Known, diffs []Diff) (failed bool, out string) {
	r := &recorder{}
	func() {
		defer func() {
			if p := recover(); p != nil && p != r {
				panic(p)
			}
		}()
		Check(r, name, known, diffs)
	}()
	return r.failed, r.out.String()
}

func TestCheck(t *testing.T) {
	known := map[string]Known{
		"tls":  {Sections: []string{"job a"}, Reason: "inlined"},
		"many": {Sections: []string{"*"}, Reason: "refused"},
	}
	a := []Diff{{Section: "job a", Diff: "-x\n+y\n"}}
	ab := []Diff{{Section: "job a", Diff: "-x\n+y\n"}, {Section: "job b", Diff: "only in podreload's"}}
	for _, tc := range []struct {
		name, kase string
		diffs      []Diff
		fails      bool
		says       string
	}{
		{name: "unknown case, same configurations", kase: "plain"},
		{name: "unknown case, a difference", kase: "plain", diffs: a, fails: true, says: "=== job a (- prometheus-operator, + podreload):"},
		{name: "the known difference", kase: "tls", diffs: a, says: "known difference (inlined)"},
		{name: "the known difference gone", kase: "tls", fails: true, says: "the known difference is gone (inlined)"},
		{name: "another difference", kase: "tls", diffs: ab, fails: true, says: "the differences are not the known ones (inlined)"},
		{name: "any difference", kase: "many", diffs: ab, says: "known difference (refused)"},
		{name: "any difference, none", kase: "many", fails: true, says: "the known difference is gone (refused)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			failed, out := check(tc.kase, known, tc.diffs)
			require.Equal(t, tc.fails, failed, out)
			require.Contains(t, out, tc.says)
		})
	}
}
