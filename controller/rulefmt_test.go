package controller

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/stretchr/testify/require"
)

// TestRuleCheckerAgreesWithRulefmt guards the rule checker, which validates
// as rulefmt does without re-parsing YAML: on every fixture, it accepts a
// PrometheusRule exactly when Prometheus' own rulefmt.Parse accepts the
// rule file written for it.
func TestRuleCheckerAgreesWithRulefmt(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "rules", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	c := newRuleChecker()
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			r := loadRule(t, name)
			res := c.render(r)
			_, errs := rulefmt.Parse(appendRuleFile(nil, r), false, model.UTF8Validation)
			require.Equal(t, len(errs) == 0, res.reason == "", "checker: %q; rulefmt: %v", res.reason, errs)
		})
	}
}
