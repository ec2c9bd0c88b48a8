package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// missingCA is a CA file no pod has: Prometheus refuses a configuration
// whose remote write names it, and exits when it starts on one.
const missingCA = "/nonexistent/ca.crt"

// TestPodRestartOnRejectedConfigEmptyDir is TestPodRestartOnRejectedConfig
// through the controller, with Prometheus' storage an emptyDir (no
// spec.storage): Prometheus rejects a configuration, then the pod goes,
// its processes and its emptyDirs with it. The new pod's init container,
// its state dir empty, reads the state from the pod's state Secret and
// writes the configuration Prometheus accepted; Prometheus starts on it,
// and ConfigApplied says Rejected with Prometheus' message.
func TestPodRestartOnRejectedConfigEmptyDir(t *testing.T) {
	cl := startCluster(t)
	ctx := t.Context()
	require.NoError(t, cl.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "prometheus"}}))
	srv := &v1alpha1.PrometheusServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "restart"},
		Spec:       v1alpha1.PrometheusServerSpec{ServiceAccountName: "prometheus", ExternalLabels: map[string]string{"step": "accepted"}},
	}
	require.NoError(t, cl.c.Create(ctx, srv))
	sts := cl.statefulSet(t, client.ObjectKeyFromObject(srv))
	prom, err := toolbin.Path("prometheus")
	require.NoError(t, err)
	pod := cl.startPod(t, sts, map[string]string{prometheusImage: prom, reloaderImage: ours("config-reloader")})
	promURL := pod.url(pod.containerPort(t, "prometheus", "web"))
	eventually(t, "Prometheus ready", func() error {
		return errors.Join(pod.containers["prometheus"].exited(), ok(ctx, promURL+"/-/ready"))
	})
	applied := func(what string, check func(*metav1.Condition) error) {
		t.Helper()
		eventually(t, what, func() error {
			var s v1alpha1.PrometheusServer
			if err := cl.c.Get(ctx, client.ObjectKeyFromObject(srv), &s); err != nil {
				return err
			}
			cond := meta.FindStatusCondition(s.Status.Conditions, "ConfigApplied")
			if cond == nil {
				return errors.New("no ConfigApplied condition")
			}
			return check(cond)
		})
	}
	applied("ConfigApplied True", func(c *metav1.Condition) error {
		if c.Status != metav1.ConditionTrue {
			return fmt.Errorf("ConfigApplied: %+v", c)
		}
		return nil
	})
	stateSecret := client.ObjectKey{Namespace: "default", Name: "restart-0-reloader-state"}
	stateHas := func(keys ...string) {
		t.Helper()
		eventually(t, "state Secret holding "+strings.Join(keys, ", "), func() error {
			var s corev1.Secret
			if err := cl.c.Get(ctx, stateSecret, &s); err != nil {
				return err
			}
			for _, k := range keys {
				if len(s.Data[k]) == 0 {
					return fmt.Errorf("state Secret: no %s in %d keys", k, len(s.Data))
				}
			}
			return nil
		})
	}
	stateHas("accepted.tar.gz")

	// A remote write whose CA file no pod has: Prometheus refuses it.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := cl.c.Get(ctx, client.ObjectKeyFromObject(srv), srv); err != nil {
			return err
		}
		srv.Spec.ExternalLabels["step"] = "rejected"
		srv.Spec.RemoteWrite = []v1alpha1.RemoteWriteSpec{{URL: "https://remote-write.example.com/api/v1/write",
			TLSConfig: &monitoringv1.TLSConfig{TLSFilesConfig: monitoringv1.TLSFilesConfig{CAFile: missingCA}}}}
		return cl.c.Update(ctx, srv)
	}))
	var rejection string
	applied("ConfigApplied Rejected", func(c *metav1.Condition) error {
		if c.Reason != "Rejected" {
			return fmt.Errorf("ConfigApplied: %+v", c)
		}
		rejection = c.Message
		return nil
	})
	require.Contains(t, rejection, "one or more errors occurred while applying the new configuration")
	stateHas("accepted.tar.gz", "rejected.json.gz")

	// The pod goes: its containers end, its emptyDirs (the configuration
	// and state dir, the TSDB) with them, and so does what it reported.
	pod.restart(t, func() {
		require.NoError(t, cl.c.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: pod.name}},
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"podreload.dev/applied":null}}}`))))
	})
	rendered := readString(t, filepath.Join(pod.root, "/etc/prometheus/config_out/prometheus.env.yaml"))
	require.Contains(t, rendered, "step: accepted", "the configuration Prometheus accepted")
	require.NotContains(t, rendered, missingCA)
	require.Contains(t, pod.initLog, `msg="the current content was rejected: writing the last accepted state instead"`)
	eventually(t, "Prometheus ready on the accepted configuration", func() error {
		if exit := pod.containers["prometheus"].exited(); exit != nil {
			t.Fatalf("prometheus ended: %v", exit)
		}
		return ok(ctx, promURL+"/-/ready")
	})
	applied("ConfigApplied Rejected after the restart", func(c *metav1.Condition) error {
		if c.Reason != "Rejected" || c.Message != rejection {
			return fmt.Errorf("ConfigApplied: %+v, want the message %q", c, rejection)
		}
		return nil
	})

	// Fixed: applied at once.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := cl.c.Get(ctx, client.ObjectKeyFromObject(srv), srv); err != nil {
			return err
		}
		srv.Spec.ExternalLabels["step"] = "fixed"
		srv.Spec.RemoteWrite = nil
		return cl.c.Update(ctx, srv)
	}))
	applied("ConfigApplied True after the fix", func(c *metav1.Condition) error {
		if c.Status != metav1.ConditionTrue {
			return fmt.Errorf("ConfigApplied: %+v", c)
		}
		return nil
	})
	require.Contains(t, readString(t, filepath.Join(pod.root, "/etc/prometheus/config_out/prometheus.env.yaml")), "step: fixed")
}

// restart restarts the pod as a new one on the same node: its containers
// are killed, its emptyDirs emptied, then gone (between the two) does
// what the pod's deletion does elsewhere; the init containers run again,
// then the containers. The init containers' logs are kept in initLog.
func (p *loopbackPod) restart(t *testing.T, gone func()) {
	t.Helper()
	for _, c := range p.containers {
		c.kill(t)
	}
	spec := p.template.Spec
	for _, v := range spec.Volumes {
		if v.EmptyDir == nil {
			continue
		}
		for _, c := range append(spec.InitContainers, spec.Containers...) {
			for _, m := range c.VolumeMounts {
				if m.Name == v.Name {
					dir := p.root + m.MountPath
					require.NoError(t, os.RemoveAll(dir))
					require.NoError(t, os.MkdirAll(dir, 0o755))
				}
			}
		}
	}
	gone()
	p.initLog = ""
	for _, c := range spec.InitContainers {
		init := p.run(t, c)
		require.NoError(t, init.wait(t), "init container %s", c.Name)
		p.initLog += init.output()
	}
	for _, c := range spec.Containers {
		p.containers[c.Name] = p.run(t, c)
	}
}
