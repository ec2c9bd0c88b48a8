package collect

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/wait"
)

// TestStartupBurstAndRemovals: 100 labelled ConfigMaps in 3 namespaces
// make one reload at start-up, sent with the 100 files on disk; a burst
// of 50 creates makes at most 2, the last with every file; a deletion, an
// unlabelling and a removed key remove their files; a key two ConfigMaps
// have stays while one of them does.
func TestStartupBurstAndRemovals(t *testing.T) {
	e := start(t)
	namespaces := []string{e.namespace(t, "a"), e.namespace(t, "b"), e.namespace(t, "c")}
	for i := range 100 {
		e.configMap(t, namespaces[i%3], fmt.Sprintf("dash-%d", i), dashboard(), map[string]string{fmt.Sprintf("dash-%d.json", i): fmt.Sprintf(`{"n":%d}`, i)})
	}
	for i := range 5 {
		e.configMap(t, "a", fmt.Sprintf("other-%d", i), map[string]string{"app": "x"}, map[string]string{fmt.Sprintf("other-%d.json", i): "{}"})
	}
	e.configMap(t, "default", "elsewhere", dashboard(), map[string]string{"elsewhere.json": "{}"})
	dir := t.TempDir()
	srv := newReloadServer(t, dir)
	c, reg := run(t, e, Options{
		Namespaces: namespaces, Resources: []Resource{ConfigMap}, Label: "grafana_dashboard",
		Folder: dir, FolderAnnotation: "k8s-sidecar-target-directory", Reload: Reload{URL: srv.URL},
	})

	first := srv.waitReloads(t, 1)[0]
	require.Len(t, first.files, 100, "files on disk at the start-up reload")
	require.Zero(t, first.partial)
	require.NoError(t, c.Ready())
	require.Equal(t, "GET", first.method)

	// A burst of 50 creates.
	for i := 100; i < 150; i++ {
		e.configMap(t, namespaces[i%3], fmt.Sprintf("dash-%d", i), dashboard(), map[string]string{fmt.Sprintf("dash-%d.json", i): "{}"})
	}
	wait.Until(t, 30*time.Second, 10*time.Millisecond, "a reload with the 150 files", func() error {
		r := srv.reloads()
		if n := len(r[len(r)-1].files); n != 150 {
			return fmt.Errorf("%d files at the last reload", n)
		}
		return nil
	})
	burst := len(srv.reloads()) - 1
	require.LessOrEqual(t, burst, 2, "reloads for a burst of 50")

	// One more change: its reload is the next one, so there was none in
	// between.
	e.configMap(t, "b", "sentinel", dashboard(), map[string]string{"sentinel.json": "{}"})
	all := srv.waitReloads(t, burst+2)
	require.Contains(t, all[burst+1].files, "sentinel.json")
	require.Len(t, all, burst+2)

	// Deletion, unlabelling, a removed key.
	cms := e.kube.CoreV1().ConfigMaps("a")
	require.NoError(t, cms.Delete(t.Context(), "dash-0", metav1.DeleteOptions{}))
	waitGone(t, filepath.Join(dir, "dash-0.json"))
	cm, err := cms.Get(t.Context(), "dash-3", metav1.GetOptions{})
	require.NoError(t, err)
	cm.Labels = nil
	_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	waitGone(t, filepath.Join(dir, "dash-3.json"))
	cm, err = cms.Get(t.Context(), "dash-6", metav1.GetOptions{})
	require.NoError(t, err)
	cm.Data = map[string]string{"renamed.json": "{}"}
	_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	waitFile(t, filepath.Join(dir, "renamed.json"), "{}")
	waitGone(t, filepath.Join(dir, "dash-6.json"))

	// A key in two ConfigMaps: the last written wins; deleting it leaves
	// the other's.
	e.configMap(t, "a", "shared-1", dashboard(), map[string]string{"shared.json": "one"})
	waitFile(t, filepath.Join(dir, "shared.json"), "one")
	e.configMap(t, "b", "shared-2", dashboard(), map[string]string{"shared.json": "two"})
	waitFile(t, filepath.Join(dir, "shared.json"), "two")
	require.NoError(t, e.kube.CoreV1().ConfigMaps("b").Delete(t.Context(), "shared-2", metav1.DeleteOptions{}))
	waitFile(t, filepath.Join(dir, "shared.json"), "one")
	require.NoError(t, e.kube.CoreV1().ConfigMaps("a").Delete(t.Context(), "shared-1", metav1.DeleteOptions{}))
	waitGone(t, filepath.Join(dir, "shared.json"))

	files, partial := listFiles(t, dir)
	require.Zero(t, partial)
	require.NotContains(t, files, "elsewhere.json", "a namespace not listed")
	require.NotContains(t, files, "other-0.json", "an unlabelled ConfigMap")
	// 150, the sentinel, renamed.json; dash-0, dash-3 and dash-6.json gone.
	require.Len(t, files, 149)
	wait.Until(t, 10*time.Second, 10*time.Millisecond, "the gauges", func() error {
		if got := testutil.ToFloat64(c.m.files); got != 149 {
			return fmt.Errorf("collector_files %v", got)
		}
		// dash-3 is unlabelled, dash-0 and the shared ones deleted.
		if got := testutil.ToFloat64(c.m.objects.WithLabelValues("configmap")); got != 149 {
			return fmt.Errorf("collector_objects %v", got)
		}
		return nil
	})
	require.Equal(t, float64(len(srv.reloads())), testutil.ToFloat64(c.m.reloads))
	require.Zero(t, testutil.ToFloat64(c.m.reloadsFailed))
	_ = reg
}

// TestOutage: with the connection to the API server silent (packets
// dropped, no FIN), the watches notice it and liveness fails; what was
// created and deleted meanwhile is written and removed when it comes
// back; after the API server is killed and started again, new ConfigMaps
// are picked up.
func TestOutage(t *testing.T) {
	e := start(t)
	ns := e.namespace(t, "grafana")
	for i := range 5 {
		e.configMap(t, ns, fmt.Sprintf("old-%d", i), dashboard(), map[string]string{fmt.Sprintf("old-%d.json", i): "{}"})
	}
	p := newProxy(t, e.cfg.Host)
	cfg := *e.cfg
	cfg.Host = "https://" + p.addr()
	dir := t.TempDir()
	srv := newReloadServer(t, dir)
	c, _ := run(t, &env{cfg: &cfg}, Options{
		Namespaces: []string{ns}, Resources: []Resource{ConfigMap}, Label: "grafana_dashboard",
		Folder: dir, Reload: Reload{URL: srv.URL}, ClientTimeout: 3 * time.Second,
	})
	srv.waitReloads(t, 1)

	p.block()
	for i := range 2 {
		require.NoError(t, e.kube.CoreV1().ConfigMaps(ns).Delete(t.Context(), fmt.Sprintf("old-%d", i), metav1.DeleteOptions{}))
	}
	for i := range 5 {
		e.configMap(t, ns, fmt.Sprintf("new-%d", i), dashboard(), map[string]string{fmt.Sprintf("new-%d.json", i): "{}"})
	}
	wait.Until(t, 60*time.Second, 50*time.Millisecond, "liveness failing on a silent connection", func() error {
		if c.Live() == nil {
			return fmt.Errorf("live")
		}
		return nil
	})
	p.unblock()
	for i := range 5 {
		waitFile(t, filepath.Join(dir, fmt.Sprintf("new-%d.json", i)), "{}")
	}
	for i := range 2 {
		waitGone(t, filepath.Join(dir, fmt.Sprintf("old-%d.json", i)))
	}
	wait.Until(t, 30*time.Second, 50*time.Millisecond, "liveness back", c.Live)

	// The API server killed and started again.
	e.cp.KillAPIServer(t)
	e.cp.StartAPIServer(t)
	kube := e.kube.CoreV1().ConfigMaps(ns)
	for i := range 5 {
		wait.Until(t, 60*time.Second, 100*time.Millisecond, "create after the restart", func() error {
			_, err := kube.Create(context.Background(), configMapObject(ns, fmt.Sprintf("after-%d", i), fmt.Sprintf("after-%d.json", i)), metav1.CreateOptions{})
			return err
		})
	}
	for i := range 5 {
		waitFile(t, filepath.Join(dir, fmt.Sprintf("after-%d.json", i)), "{}")
	}
	files, partial := listFiles(t, dir)
	require.Zero(t, partial)
	want := []string{"after-0.json", "after-1.json", "after-2.json", "after-3.json", "after-4.json",
		"new-0.json", "new-1.json", "new-2.json", "new-3.json", "new-4.json", "old-2.json", "old-3.json", "old-4.json"}
	require.Equal(t, want, files)
	require.Positive(t, testutil.ToFloat64(c.m.watchRestarts.WithLabelValues("error"))+testutil.ToFloat64(c.m.watchRestarts.WithLabelValues("silent")))
	// The last reload saw every file.
	wait.Until(t, 30*time.Second, 50*time.Millisecond, "a reload with every file", func() error {
		r := srv.reloads()
		if last := r[len(r)-1].files; !slices.Equal(last, want) {
			return fmt.Errorf("last reload saw %v", last)
		}
		return nil
	})
	_ = controlplane.Start
	_ = os.ReadFile
}
