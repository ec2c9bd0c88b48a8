package collect

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

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
	// One change: its reload is the second, so start-up sent one.
	e.configMap(t, "a", "after-start", dashboard(), map[string]string{"after-start.json": "{}"})
	second := srv.waitReloads(t, 2)
	require.Len(t, second, 2, "reloads at start-up, then one for a change")
	require.Contains(t, second[1].files, "after-start.json")

	// A burst of 50 creates.
	for i := 100; i < 150; i++ {
		e.configMap(t, namespaces[i%3], fmt.Sprintf("dash-%d", i), dashboard(), map[string]string{fmt.Sprintf("dash-%d.json", i): "{}"})
	}
	wait.Until(t, 30*time.Second, 10*time.Millisecond, "a reload with the 151 files", func() error {
		r := srv.reloads()
		if n := len(r[len(r)-1].files); n != 151 {
			return fmt.Errorf("%d files at the last reload", n)
		}
		return nil
	})
	burst := len(srv.reloads()) - 2
	require.LessOrEqual(t, burst, 2, "reloads for a burst of 50")

	// One more change: its reload is the next one, so there was none in
	// between.
	e.configMap(t, "b", "sentinel", dashboard(), map[string]string{"sentinel.json": "{}"})
	all := srv.waitReloads(t, burst+3)
	require.Contains(t, all[burst+2].files, "sentinel.json")
	require.Len(t, all, burst+3)

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
	// 150, after-start, the sentinel, renamed.json; dash-0, dash-3 and
	// dash-6.json gone.
	require.Len(t, files, 150)
	wait.Until(t, 10*time.Second, 10*time.Millisecond, "the gauges", func() error {
		if got := testutil.ToFloat64(c.m.files); got != 150 {
			return fmt.Errorf("collector_files %v", got)
		}
		// dash-3 is unlabelled, dash-0 and the shared ones deleted.
		if got := testutil.ToFloat64(c.m.objects.WithLabelValues("configmap")); got != 150 {
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

	// Deleted while the collector saw nothing and the API server was
	// killed and started again: removed once it sees the new one.
	p.block()
	e.cp.KillAPIServer(t)
	e.cp.StartAPIServer(t)
	for _, name := range []string{"old-2", "after-0"} {
		wait.Until(t, 60*time.Second, 100*time.Millisecond, "delete after the restart", func() error {
			return kube.Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	p.unblock()
	waitGone(t, filepath.Join(dir, "old-2.json"))
	waitGone(t, filepath.Join(dir, "after-0.json"))
}

// TestReadyAfterFirstSync: the collector is not ready while the API server
// cannot be reached at start, and is once every target was listed.
func TestReadyAfterFirstSync(t *testing.T) {
	e := start(t)
	ns := e.namespace(t, "grafana")
	e.configMap(t, ns, "d", dashboard(), map[string]string{"d.json": "{}"})
	p := newProxy(t, e.cfg.Host)
	p.block()
	cfg := *e.cfg
	cfg.Host = "https://" + p.addr()
	dir := t.TempDir()
	c, _ := run(t, &env{cfg: &cfg}, Options{
		Namespaces: []string{ns, "default"}, Resources: []Resource{ConfigMap}, Label: "grafana_dashboard", Folder: dir,
	})
	require.EqualError(t, c.Ready(), "not synced yet: 2 of 2 targets to list")
	p.unblock()
	wait.Until(t, 60*time.Second, 10*time.Millisecond, "ready", c.Ready)
	require.Equal(t, "{}", read(t, filepath.Join(dir, "d.json")), "ready with the files on disk")
}

// TestWatchExpired: a watch that resumes from a resourceVersion etcd
// compacted meanwhile (410 Gone: no watch cache, a compaction every
// second, as in apisource's tests) lists again, which writes what was
// created and removes what was deleted while it could not watch.
func TestWatchExpired(t *testing.T) {
	cp := controlplane.StartWithFlags(t, map[string]string{"watch-cache": "false", "etcd-compaction-interval": "1s"})
	kube, err := kubernetes.NewForConfig(cp.Config)
	require.NoError(t, err)
	e := &env{cp: cp, kube: kube, cfg: cp.Config}
	ns := e.namespace(t, "grafana")
	e.configMap(t, ns, "kept", dashboard(), map[string]string{"kept.json": "{}"})
	e.configMap(t, ns, "gone", dashboard(), map[string]string{"gone.json": "{}"})
	p := newProxy(t, e.cfg.Host)
	cfg := *e.cfg
	cfg.Host = "https://" + p.addr()
	dir := t.TempDir()
	c, _ := run(t, &env{cfg: &cfg}, Options{
		Namespaces: []string{ns}, Resources: []Resource{ConfigMap}, Label: "grafana_dashboard", Folder: dir, ClientTimeout: 3 * time.Second,
	})
	wait.Until(t, 30*time.Second, 10*time.Millisecond, "ready", c.Ready)
	waitFile(t, filepath.Join(dir, "gone.json"), "{}")
	cms := kube.CoreV1().ConfigMaps(ns)
	l, err := cms.List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	seen := l.ResourceVersion // where the collector's watch is, or later

	restarts := func() float64 {
		return testutil.ToFloat64(c.m.watchRestarts.WithLabelValues("error")) + testutil.ToFloat64(c.m.watchRestarts.WithLabelValues("silent"))
	}
	was := restarts()
	p.block()
	require.NoError(t, cms.Delete(t.Context(), "gone", metav1.DeleteOptions{}))
	e.configMap(t, ns, "new", dashboard(), map[string]string{"new.json": "{}"})
	wait.Until(t, 30*time.Second, 200*time.Millisecond, "etcd compacted past the collector's resourceVersion", func() error {
		w, err := cms.Watch(t.Context(), metav1.ListOptions{ResourceVersion: seen})
		if err != nil {
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				return nil
			}
			return err
		}
		defer w.Stop()
		ev := <-w.ResultChan()
		if ev.Type == watch.Error && expired(apierrors.FromObject(ev.Object)) {
			return nil
		}
		return fmt.Errorf("a watch from %s still gets %s", seen, ev.Type)
	})
	// Its watch, cut off, ended: the next resumes from where it was.
	wait.Until(t, 60*time.Second, 50*time.Millisecond, "the collector's watch ended", func() error {
		if restarts() == was {
			return errors.New("still watching")
		}
		return nil
	})
	p.unblock()
	waitFile(t, filepath.Join(dir, "new.json"), "{}")
	waitGone(t, filepath.Join(dir, "gone.json"))
	require.Equal(t, "{}", read(t, filepath.Join(dir, "kept.json")))
	require.Positive(t, testutil.ToFloat64(c.m.watchRestarts.WithLabelValues("expired")))
	// The list is counted once it has ended, after its files are written.
	wait.Until(t, 30*time.Second, 5*time.Millisecond, "listed again", func() error {
		if n := testutil.ToFloat64(c.m.lists); n < 2 {
			return fmt.Errorf("%v lists", n)
		}
		return nil
	})
}
