package amconfig

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNewerFields: the fields of prometheus-operator v0.95 whose
// rendering cannot be checked (its generator is not served) fail the
// configuration with the field named, rather than being dropped (an
// AlertmanagerConfig's route labels: TestLeftOut).
func TestNewerFields(t *testing.T) {
	_, err := Generate(t.Context(), caseInput(t, filepath.Join("testdata", "newer", "global-telegram-bot-token.yaml")))
	require.EqualError(t, err, "alertmanager monitoring/main: spec.alertmanagerConfiguration.global: telegram: botToken and botTokenFile: not rendered: fields of prometheus-operator v0.95, whose rendering cannot be checked yet")
}
