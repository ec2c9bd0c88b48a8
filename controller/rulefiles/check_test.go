package rulefiles

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/controller/promyaml"
)

// TestRuleCheckerAsRulefmtParse checks what the rule checker relies on
// when it has rulefmt validate each distinct expression, label and
// annotation once, apart from the rest: on every fixture, it says what
// Prometheus' own rulefmt.Parse says of the whole rule file written for
// it, positions aside, first from scratch, then from what it remembers.
func TestRuleCheckerAsRulefmtParse(t *testing.T) {
	// rulefmt.Parse reads durations with the YAML and stops at the first
	// bad one without saying where it is; the checker parses them as
	// rulefmt does, and names the group or rule.
	yamlErrors := map[string]bool{"bad-duration.yaml": true}
	files, err := filepath.Glob(filepath.Join("testdata", "rules", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	c := newRuleChecker()
	for range 2 {
		for _, f := range files {
			name := filepath.Base(f)
			t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
				r := loadRule(t, name)
				res, _ := c.render(r, false, nil)
				got := res.reason
				_, errs := rulefmt.Parse(promyaml.AppendRuleFile(nil, r), false, model.UTF8Validation)
				if yamlErrors[name] {
					require.NotEmpty(t, errs)
					require.NotEmpty(t, got)
					return
				}
				want := ""
				if len(errs) > 0 {
					msgs := make([]string, len(errs))
					for i, err := range errs {
						msgs[i] = errorPosition.ReplaceAllString(err.Error(), "")
					}
					want = invalidRules(msgs).Error()
				}
				require.Equal(t, want, got)
			})
		}
	}
}
