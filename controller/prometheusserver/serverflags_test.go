package prometheusserver

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
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

// TestListenLocal renders a Prometheus taken over with listenLocal, as
// prometheus-operator does: Prometheus on 127.0.0.1:9090 without a
// container port, its probes a command in the container on localhost
// under the route prefix, the config-reloader on localhost:8080 without a
// port, reloading Prometheus on 127.0.0.1 as before; additionalArgs
// setting web.listen-address are refused. Without it, the ports and the
// HTTP probes stay.
func TestListenLocal(t *testing.T) {
	for _, local := range []bool{false, true} {
		t.Run(map[bool]string{false: "off", true: "on"}[local], func(t *testing.T) {
			in := loadInputs(t, filepath.Join("testdata", "layout", "one-replica.yaml"))
			in.Layout = promserver.OperatorsLayout
			in.Server.Spec.RoutePrefix = "/prom"
			in.Server.Spec.ListenLocal = local
			out, err := promserver.Render(in, testOptions(), nil)
			require.NoError(t, err)
			pod := out.StatefulSets[0].Spec.Template.Spec
			prom, reloader := pod.Containers[0], pod.Containers[1]
			require.Equal(t, "prometheus", prom.Name)
			require.Equal(t, "config-reloader", reloader.Name)
			require.Contains(t, reloader.Args, "--reload-url=http://127.0.0.1:9090/prom/-/reload")
			if !local {
				require.Len(t, prom.Ports, 1)
				require.NotContains(t, strings.Join(prom.Args, " "), "--web.listen-address")
				require.Equal(t, "/prom/-/ready", prom.ReadinessProbe.HTTPGet.Path)
				require.Contains(t, reloader.Args, "--listen-address=:8080")
				require.Len(t, reloader.Ports, 1)
				return
			}
			require.Empty(t, prom.Ports)
			require.Contains(t, prom.Args, "--web.listen-address=127.0.0.1:9090")
			for probe, path := range map[string]string{"startup": "/prom/-/ready", "readiness": "/prom/-/ready", "liveness": "/prom/-/healthy"} {
				p := map[string]*corev1.Probe{"startup": prom.StartupProbe, "readiness": prom.ReadinessProbe, "liveness": prom.LivenessProbe}[probe]
				require.Nil(t, p.HTTPGet, probe)
				require.Equal(t, []string{"sh", "-c"}, p.Exec.Command[:2], probe)
				require.Contains(t, p.Exec.Command[2], "exec curl --fail http://localhost:9090"+path+";", probe)
				require.Contains(t, p.Exec.Command[2], "exec wget -q -O /dev/null http://localhost:9090"+path+";", probe)
			}
			require.Contains(t, reloader.Args, "--listen-address=localhost:8080")
			require.Empty(t, reloader.Ports)

			in.Server.Spec.AdditionalArgs = []monitoringv1.Argument{{Name: "web.listen-address", Value: ":9091"}}
			_, err = promserver.Render(in, testOptions(), nil)
			require.ErrorContains(t, err, "spec.additionalArgs: web.listen-address set by the controller itself")
		})
	}
}
