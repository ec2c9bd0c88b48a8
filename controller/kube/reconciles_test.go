package kube

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// TestRegistered: the second kind to register a family gets the first's
// collector; a family of the same name but another shape is an error; a
// nil registerer registers nothing.
func TestRegistered(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := prometheus.GaugeOpts{Name: "shared", Help: "A family two kinds share."}
	first, err := Registered(reg, prometheus.NewGaugeVec(opts, []string{"kind"}))
	require.NoError(t, err)
	second, err := Registered(reg, prometheus.NewGaugeVec(opts, []string{"kind"}))
	require.NoError(t, err)
	require.Same(t, first, second)
	_, err = Registered(reg, prometheus.NewGaugeVec(opts, []string{"other"}))
	require.ErrorContains(t, err, "register the metrics the kinds share: ")
	own := prometheus.NewGauge(opts)
	got, err := Registered(nil, own)
	require.NoError(t, err)
	require.Same(t, own, got)
}
