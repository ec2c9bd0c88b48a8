package prometheus

import (
	"github.com/podreload/podreload/controller/promoperator"
	"github.com/podreload/podreload/controller/takeover"
)

// Checker tells what taking over Prometheus objects would do, without a
// cluster (controller takeover-check).
func Checker() takeover.Checker {
	return promoperator.Checker(kind())
}
