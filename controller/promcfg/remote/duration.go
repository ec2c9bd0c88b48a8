package remote

import (
	"fmt"

	"github.com/prometheus/common/model"
)

// defaultRemoteTimeout is prometheus-operator's remote_timeout.
const defaultRemoteTimeout = "30s"

// PositiveDuration parses the Prometheus duration s, refusing one that is
// not positive.
func PositiveDuration(s string) (model.Duration, error) {
	d, err := model.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q is not positive", s)
	}
	return d, nil
}
