package prometheusserver

import (
	"path/filepath"
	"slices"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	promkind "github.com/podreload/podreload/controller/prometheus"

	"github.com/podreload/podreload/controller/compat"
	"github.com/podreload/podreload/controller/promserver"
)

// TestOperatorRetentionPercentage renders a Prometheus's
// retentionPercentage as prometheus-operator v0.94.1 does: from 3.11 in
// the configuration's retention, in place of the default time when above
// 0; before 3.11 nowhere, the default time flag kept; outside 0 to 100 an
// error.
func TestOperatorRetentionPercentage(t *testing.T) {
	for _, tc := range []struct {
		name, version, retention, percentage string
		inConfig                             yaml.MapSlice
		flag                                 string
	}{
		{name: "alone", version: "v3.11.0", percentage: "50", inConfig: yaml.MapSlice{{Key: "percentage", Value: 50.0}}},
		{name: "fraction", version: "v3.13.1", percentage: "12.5", inConfig: yaml.MapSlice{{Key: "percentage", Value: 12.5}}},
		{name: "zero is off", version: "v3.11.0", percentage: "0", inConfig: yaml.MapSlice{{Key: "time", Value: "24h"}, {Key: "percentage", Value: 0.0}}},
		{name: "with a time", version: "v3.11.0", retention: "7d", percentage: "50", inConfig: yaml.MapSlice{{Key: "time", Value: "7d"}, {Key: "percentage", Value: 50.0}}},
		{name: "before 3.11", version: "v3.10.0", percentage: "50", flag: "--storage.tsdb.retention.time=24h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &monitoringv1.Prometheus{}
			p.Spec.Version, p.Spec.Retention = tc.version, monitoringv1.Duration(tc.retention)
			p.Spec.RetentionPercentage = ptr.To(resource.MustParse(tc.percentage))
			server, unsupported := promkind.FromPrometheus(p)
			require.Empty(t, unsupported)
			in := promserver.ConfigInput(server, promserver.Selected{}, nil, nil)
			require.Equal(t, tc.inConfig, in.Retention)
			args := compat.CommandLine(promserver.OperatorPrometheusArgs(server))
			retentionFlags := slices.DeleteFunc(args, func(a string) bool {
				return !slices.Contains([]string{"--storage.tsdb.retention.time=24h", "--storage.tsdb.retention.time=7d"}, a)
			})
			if tc.flag == "" {
				require.Empty(t, retentionFlags)
			} else {
				require.Equal(t, []string{tc.flag}, retentionFlags)
			}
		})
	}

	in := loadInputs(t, filepath.Join("testdata", "layout", "pvc-rules.yaml"))
	for _, bad := range []string{"101", "-1"} {
		server := in.Server.DeepCopy()
		server.Spec.RetentionPercentage = ptr.To(resource.MustParse(bad))
		in := in
		in.Server = server
		_, err := promserver.Render(in, testOptions(), nil)
		require.ErrorContains(t, err, "spec.retentionPercentage: must be between 0 and 100, not "+bad)
	}
}
