package node

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podreload/podreload/internal/testenv/node"
)

// TestExampleOnNode applies deploy/ and deploy/example as a user would and
// checks, in the running pods, what the user is promised.
func TestExampleOnNode(t *testing.T) {
	cl := startCluster(t, node.Options{})
	cl.deployController(t)
	pod := cl.deployExample(t)

	t.Run("Prometheus scrapes the ServiceMonitor's targets", func(t *testing.T) {
		eventually(t, 2*time.Minute, "targets of "+scrapeJob+" up", func() error {
			return cl.targetUp(t, serverPod, scrapeJob)
		})
	})
	upSince := time.Now()

	t.Run("a PrometheusRule edit reaches Prometheus through the API source", func(t *testing.T) {
		start := time.Now()
		cl.addRule(t, "podreload:node_e2e:edit")
		// Within seconds: through the kubelet's projection it would take
		// up to its sync period, a minute and more.
		eventually(t, 10*time.Second, "edited rule served", func() error {
			return cl.hasRule(t, serverPod, "podreload:node_e2e:edit")
		})
		t.Logf("PrometheusRule edit to rule served: %s (API source)", time.Since(start).Round(time.Millisecond))
	})

	t.Run("kubectl wait --for=condition=ConfigApplied returns once a change is live", func(t *testing.T) {
		// Not the external labels: the example writes remotely to a host
		// that does not resolve here, and Prometheus, which restarts its
		// remote write queues when they change, answers that reload only
		// after the queues' flush deadline (a minute).
		cl.kubectl(t, "patch", "promsrv", "example", "--type=merge", "-p", `{"spec":{"scrapeInterval":"20s"}}`)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("the server:\n%s", cl.kubectl(t, "get", "promsrv", "example", "-o", "yaml"))
				t.Logf("its pod's metadata:\n%s", cl.kubectl(t, "get", "pod", serverPod, "-o", "jsonpath={.metadata}"))
				t.Logf("config-reloader's log:\n%s", cl.podLogs(t, serverPod, "config-reloader"))
				t.Logf("the controller's log:\n%s", cl.controllerLogs(t))
			}
		})
		cl.kubectl(t, "wait", "--for=condition=ConfigApplied", "promsrv/example", "--timeout=60s")
		var cfg struct {
			YAML string `json:"yaml"`
		}
		require.NoError(t, cl.prometheus(t, serverPod, "/api/v1/status/config", nil, &cfg))
		require.Contains(t, cfg.YAML, "scrape_interval: 20s", "Prometheus runs the change when kubectl wait returns")
	})

	t.Run("the containers run as non-root, read-only, without capabilities", func(t *testing.T) {
		p, err := cl.readyPod(t, "default", serverPod)
		require.NoError(t, err)
		for _, s := range p.Status.ContainerStatuses {
			pid, err := cl.node.ContainerPID(s.ContainerID)
			require.NoError(t, err, s.Name)
			status := procStatus(t, pid)
			for _, f := range strings.Fields(status["Uid"]) {
				require.NotEqual(t, "0", f, "%s: Uid %s", s.Name, status["Uid"])
			}
			for _, c := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
				require.Equal(t, "0000000000000000", status[c], "%s: %s", s.Name, c)
			}
			require.Equal(t, "1", status["NoNewPrivs"], s.Name)
			require.Contains(t, rootMountOptions(t, pid), "ro", "%s: root filesystem", s.Name)
		}
	})

	t.Run("a deleted pod comes back with its data and configuration", func(t *testing.T) {
		// A sample Prometheus had written before the deletion: once its
		// target was up. Not "a few seconds ago": with the API source the
		// subtests before take about as long as one scrape, and a few
		// seconds ago may be before the first.
		before := strconv.FormatFloat(float64(upSince.UnixMilli())/1000, 'f', 3, 64)
		// Prometheus' logs of its shutdown and of its start, shown if
		// this fails.
		stopped := cl.followLogs(t, serverPod, "prometheus")
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("prometheus of the deleted pod:\n%s", stopped())
				t.Logf("prometheus of the new pod:\n%s", cl.podLogs(t, serverPod, "prometheus"))
			}
		})
		require.NoError(t, cl.kube.CoreV1().Pods("default").Delete(t.Context(), serverPod, metav1.DeleteOptions{}))
		eventually(t, startTimeout, "pod "+serverPod+" back", func() error {
			p, err := cl.readyPod(t, "default", serverPod)
			if err == nil && p.UID == pod.UID {
				return fmt.Errorf("still the pod %s", p.UID)
			}
			return err
		})
		eventually(t, time.Minute, "samples of before the deletion", func() error {
			var data struct {
				Result []any `json:"result"`
			}
			err := cl.prometheus(t, serverPod, "/api/v1/query", url.Values{"query": {"up"}, "time": {before}}, &data)
			if err == nil && len(data.Result) == 0 {
				return fmt.Errorf("no sample of up at %s", before)
			}
			return err
		})
		eventually(t, time.Minute, "edited rule served after the restart", func() error {
			return cl.hasRule(t, serverPod, "podreload:node_e2e:edit")
		})
	})

	t.Run("the controller records its Events", cl.testEvents)
	t.Run("the Helm chart's controller runs beside it", cl.testChart)

	t.Run("the controller was never denied", func(t *testing.T) {
		logs := cl.controllerLogs(t)
		require.NotEmpty(t, logs)
		require.NotContains(t, strings.ToLower(logs), "forbidden", "an RBAC denial: deploy/controller-rbac.yaml misses a permission")
	})
}

// procStatus returns the fields of /proc/pid/status.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	m := map[string]string{}
	for line := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(line, ":")
		m[k] = strings.TrimSpace(v)
	}
	return m
}

// rootMountOptions returns the options of the process's root mount.
func rootMountOptions(t *testing.T, pid int) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	require.NoError(t, err)
	var opts []string
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == "/" {
			opts = strings.Split(f[5], ",") // the last mount on / wins
		}
	}
	require.NotEmpty(t, opts, "no root mount in /proc/%d/mountinfo", pid)
	return opts
}
