package prometheusserver

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/promserver"
)

// TestServerFlags renders spec's ServerFlags (enableRemoteWriteReceiver,
// remoteWriteReceiverMessageVersions, disableCompaction) in both layouts
// at the boundaries of prometheus-operator's version gates: the receiver
// from 2.33, its messages from 2.54, no overlapping compaction from 2.55;
// the block durations whatever the version. In prometheus-operator's
// layout the receiver's flags follow web.max-connections and the
// compaction's come last, in its order; additionalArgs naming one of them
// are refused.
func TestServerFlags(t *testing.T) {
	receiver := "--web.enable-remote-write-receiver"
	messages := "--web.remote-write-receiver.accepted-protobuf-messages=prometheus.WriteRequest,io.prometheus.write.v2.Request"
	blocks := []string{"--storage.tsdb.max-block-duration=2h", "--storage.tsdb.min-block-duration=2h"}
	overlap := "--no-storage.tsdb.allow-overlapping-compaction"
	for _, tc := range []struct {
		version string
		want    []string
	}{
		{version: "", want: slices.Concat([]string{receiver, messages}, blocks, []string{overlap})},
		{version: "v2.55.0", want: slices.Concat([]string{receiver, messages}, blocks, []string{overlap})},
		{version: "v2.54.1", want: slices.Concat([]string{receiver, messages}, blocks)},
		{version: "v2.53.0", want: slices.Concat([]string{receiver}, blocks)},
		{version: "v2.33.0", want: slices.Concat([]string{receiver}, blocks)},
		{version: "v2.32.1", want: blocks},
	} {
		for _, operator := range []bool{false, true} {
			t.Run(cmp.Or(tc.version, "default")+"/"+map[bool]string{false: "podreload", true: "operator"}[operator], func(t *testing.T) {
				in := loadInputs(t, filepath.Join("testdata", "layout", "one-replica.yaml"))
				in.Layout = promserver.PodreloadLayout
				if operator {
					in.Layout = promserver.OperatorsLayout
				}
				spec := &in.Server.Spec
				spec.Version = tc.version
				spec.EnableRemoteWriteReceiver = true
				spec.RemoteWriteReceiverMessageVersions = []monitoringv1.RemoteWriteMessageVersion{monitoringv1.RemoteWriteMessageVersion1_0, monitoringv1.RemoteWriteMessageVersion2_0}
				spec.DisableCompaction = true
				spec.TSDB = &v1alpha1.TSDBSpec{OutOfOrderTimeWindow: ptr.To(monitoringv1.Duration("30m"))}
				out, err := promserver.Render(in, testOptions(), nil)
				require.NoError(t, err)
				args := out.StatefulSets[0].Spec.Template.Spec.Containers[0].Args
				var got []string
				for _, a := range args {
					if strings.Contains(a, "remote-write-receiver") || strings.Contains(a, "block-duration") || strings.Contains(a, "overlapping-compaction") {
						got = append(got, a)
					}
				}
				require.Equal(t, tc.want, got)
				if operator {
					compaction := tc.want[slices.Index(tc.want, blocks[0]):]
					require.Equal(t, compaction, args[len(args)-len(compaction):], "the compaction's flags come last")
				}

				spec.AdditionalArgs = []monitoringv1.Argument{{Name: "storage.tsdb.min-block-duration", Value: "1h"}}
				_, err = promserver.Render(in, testOptions(), nil)
				require.ErrorContains(t, err, "spec.additionalArgs: storage.tsdb.min-block-duration set by the controller itself")
			})
		}
	}
}
