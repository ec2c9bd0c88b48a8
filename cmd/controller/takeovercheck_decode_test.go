package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/internal/testenv/testlog"
)

// TestTakeoverCheckDecoding checks that `controller takeover-check` reads
// files as the API server reads a request: of a key set twice the last
// wins (a warning, no error), a field that is one but for its case is
// dropped (a warning), a field the types do not know (a newer
// prometheus-operator's) refuses the object by its path.
func TestTakeoverCheckDecoding(t *testing.T) {
	for _, tc := range []struct {
		file string
		code int
		want string
	}{
		{"duplicate-key.yaml", 0, `Prometheus monitoring/k8s (controller-id ""):
  warning: line 10: key "replicas" already set in map: the last one is read, as the API server reads it
  can be taken over: annotate it with operator.prometheus.io/controller-id=<the controller's --controller-id>
  rolls once, one pod at a time, to podreload's sidecar: StatefulSet prometheus-k8s (3 replicas each); PVCs and data stay
`},
		{"case-field.yaml", 0, `Prometheus monitoring/k8s (controller-id ""):
  warning: spec.externalURL: not a field (field names are case-sensitive): dropped, as the API server drops it
  can be taken over: annotate it with operator.prometheus.io/controller-id=<the controller's --controller-id>
  rolls once, one pod at a time, to podreload's sidecar: StatefulSet prometheus-k8s (1 replicas each); PVCs and data stay
`},
		{"unknown-field.yaml", 1, `Prometheus monitoring/k8s (controller-id ""):
  refused, not supported yet: spec.futureScrapeSetting: a field of a newer prometheus-operator, not known to this release; spec.web.futureWebSetting: a field of a newer prometheus-operator, not known to this release; annotated, it stays untouched
Alertmanager monitoring/main (controller-id ""):
  refused, not supported yet: spec.futureClusterSetting: a field of a newer prometheus-operator, not known to this release; annotated, it stays untouched
`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			var stdout bytes.Buffer
			var stderr testlog.Buffer
			code := run(t.Context(), []string{"takeover-check", filepath.Join("testdata", "decode", tc.file)}, &stdout, &stderr)
			require.Empty(t, stderr.String())
			require.Equal(t, tc.want, stdout.String())
			require.Equal(t, tc.code, code)
		})
	}
}
