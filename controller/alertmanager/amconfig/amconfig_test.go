package amconfig

import (
	"testing"

	"github.com/prometheus/alertmanager/config"
	commoncfg "github.com/prometheus/common/config"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The tests compare configurations parsed by Alertmanager's config
	// package as YAML: with the secrets' values, not "<secret>". Generate
	// itself never marshals those types.
	config.MarshalSecretValue = true
	commoncfg.MarshalSecretValue = true
	goleak.VerifyTestMain(m)
}
