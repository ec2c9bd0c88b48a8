package amconfig

import (
	"testing"

	commoncfg "github.com/prometheus/common/config"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The tests compare configurations parsed by Alertmanager's config
	// package as YAML: with the secrets' values, not "<secret>" (since
	// Alertmanager 0.34 its secret types follow common's switch). Generate
	// itself never marshals those types.
	commoncfg.MarshalSecretValue = true
	goleak.VerifyTestMain(m)
}
