package collect

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podreload/podreload/internal/testenv/wait"
)

// TestSecretsAndOptions: Secrets decoded, binaryData, a label value, all
// namespaces, the folder annotation (relative and absolute), .url keys
// (one that fails keeps no file and is counted), the file mode, unique
// file names, RESOURCE_NAME, a POST with its payload and basic auth, and
// the script, run before the request.
func TestSecretsAndOptions(t *testing.T) {
	e := start(t)
	ns := e.namespace(t, "monitoring")
	other := e.namespace(t, "apps")
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("remote content"))
	}))
	t.Cleanup(remote.Close)
	abs := t.TempDir()
	selected := map[string]string{"grafana_datasource": "yes"}
	secrets := e.kube.CoreV1().Secrets(ns)
	_, err := secrets.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ds", Labels: selected},
		Data: map[string][]byte{"ds.yaml": []byte("apiVersion: 1\n"), "bin.url": []byte(remote.URL + "/bin")}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = secrets.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "not-yes", Labels: map[string]string{"grafana_datasource": "no"}},
		Data: map[string][]byte{"no.yaml": []byte("x")}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = e.kube.CoreV1().ConfigMaps(other).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cm", Labels: selected, Annotations: map[string]string{"k8s-sidecar-target-directory": "sub/dir"}},
		Data:       map[string]string{"text.json": "{}", "page.json.url": remote.URL + "/page\n", "gone.json.url": remote.URL + "/missing"},
		BinaryData: map[string][]byte{"blob.bin": {0, 1, 2, 255}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = e.kube.CoreV1().ConfigMaps(other).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "abs", Labels: selected, Annotations: map[string]string{"k8s-sidecar-target-directory": abs}},
		Data:       map[string]string{"abs.json": "{}"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	dir := t.TempDir()
	srv := newReloadServer(t, dir)
	marker := filepath.Join(t.TempDir(), "script-ran")
	script := filepath.Join(t.TempDir(), "script.sh")
	// Not executable: run with sh.
	require.NoError(t, os.WriteFile(script, []byte("ls "+dir+" > "+marker+"\n"), 0o644))
	c, _ := run(t, e, Options{
		Resources: []Resource{Secret, ConfigMap}, Label: "grafana_datasource", LabelValue: "yes",
		Folder: dir, FolderAnnotation: "k8s-sidecar-target-directory", FileMode: 0o440,
		HTTP:   HTTP{Timeout: 5 * time.Second, Username: "admin", Password: "pässword", Latin1: true},
		Reload: Reload{URL: srv.URL, Method: "POST", Payload: []byte(`{"reload":true}`), Script: script},
	})
	r := srv.waitReloads(t, 1)[0]
	require.Equal(t, []string{"bin", "ds.yaml", "sub/dir/blob.bin", "sub/dir/page.json", "sub/dir/text.json"}, r.files)
	require.Equal(t, "POST", r.method)
	require.JSONEq(t, `{"reload":true}`, r.body)
	require.Equal(t, "Basic "+base64.StdEncoding.EncodeToString([]byte("admin:p\xe4ssword")), r.auth)
	require.Equal(t, "apiVersion: 1\n", read(t, filepath.Join(dir, "ds.yaml")))
	require.Equal(t, "remote content", read(t, filepath.Join(dir, "bin")))
	require.Equal(t, "remote content", read(t, filepath.Join(dir, "sub/dir/page.json")))
	require.Equal(t, "\x00\x01\x02\xff", read(t, filepath.Join(dir, "sub/dir/blob.bin")))
	require.Equal(t, "{}", read(t, filepath.Join(abs, "abs.json")))
	st, err := os.Stat(filepath.Join(dir, "ds.yaml"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o440), st.Mode().Perm())
	require.Equal(t, 1.0, testutil.ToFloat64(c.m.urlErrors), "gone.json.url")
	require.Equal(t, "bin\nds.yaml\nsub\n", read(t, marker), "the script ran before the request, with the files on disk")
	require.Equal(t, 1.0, testutil.ToFloat64(c.m.scripts))

	// Unique file names, and RESOURCE_NAME: the Secret named, whatever its
	// labels, and the ConfigMaps by label; without FOLDER_ANNOTATION, every
	// file in the folder.
	unique := t.TempDir()
	run(t, e, Options{
		Namespaces: []string{ns, other}, Resources: []Resource{Secret, ConfigMap}, Label: "grafana_datasource",
		Names: []string{"secret/not-yes", "apps/secret/none"}, Folder: unique, UniqueFilenames: true,
	})
	want := []string{
		"namespace_apps.configmap_abs.abs.json", "namespace_apps.configmap_cm.blob.bin", "namespace_apps.configmap_cm.page.json", "namespace_apps.configmap_cm.text.json",
		"namespace_monitoring.secret_not-yes.no.yaml",
	}
	wait.Until(t, 30*time.Second, 10*time.Millisecond, "unique names", func() error {
		files, _ := listFiles(t, unique)
		if strings.Join(files, " ") != strings.Join(want, " ") {
			return fmt.Errorf("files %v", files)
		}
		return nil
	})
}

// TestList: METHOD=LIST lists, writes, reloads once and returns.
func TestList(t *testing.T) {
	e := start(t)
	ns := e.namespace(t, "grafana")
	for i := range 10 {
		e.configMap(t, ns, fmt.Sprintf("d-%d", i), dashboard(), map[string]string{fmt.Sprintf("d-%d.json", i): "{}"})
	}
	dir := t.TempDir()
	srv := newReloadServer(t, dir)
	client, err := NewRESTClient(e.cfg)
	require.NoError(t, err)
	c, err := New(discard(), nil, Options{Client: client, Namespaces: []string{ns}, Resources: []Resource{ConfigMap}, Label: "grafana_dashboard", Folder: dir, Method: List, Reload: Reload{URL: srv.URL}})
	require.NoError(t, err)
	require.NoError(t, c.Run(t.Context()))
	r := srv.reloads()
	require.Len(t, r, 1)
	require.Len(t, r[0].files, 10)
	require.NoError(t, c.Ready())
}

// TestSleepSkipInitIgnoreProcessed: METHOD=SLEEP lists every SLEEP_TIME,
// picks up creations and deletions; REQ_SKIP_INIT sends no start-up
// reload; IGNORE_ALREADY_PROCESSED fetches a .url key once, where without
// it every list fetches it again.
func TestSleepSkipInitIgnoreProcessed(t *testing.T) {
	e := start(t)
	ns := e.namespace(t, "grafana")
	var fetches atomic.Int32
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		_, _ = w.Write([]byte("remote"))
	}))
	t.Cleanup(remote.Close)
	e.configMap(t, ns, "url", dashboard(), map[string]string{"remote.json.url": remote.URL})
	for _, ignore := range []bool{true, false} {
		t.Run(fmt.Sprintf("IGNORE_ALREADY_PROCESSED=%t", ignore), func(t *testing.T) {
			fetches.Store(0)
			dir := t.TempDir()
			srv := newReloadServer(t, dir)
			c, _ := run(t, e, Options{
				Namespaces: []string{ns}, Resources: []Resource{ConfigMap}, Label: "grafana_dashboard", Folder: dir,
				Method: Sleep, SleepTime: 100 * time.Millisecond, SkipInitReload: true, IgnoreAlreadyProcessed: ignore,
				Reload: Reload{URL: srv.URL},
			})
			waitFile(t, filepath.Join(dir, "remote.json"), "remote")
			wait.Until(t, 30*time.Second, 10*time.Millisecond, "five lists", func() error {
				if n := testutil.ToFloat64(c.m.lists); n < 5 {
					return fmt.Errorf("%v lists", n)
				}
				return nil
			})
			require.NoError(t, c.Ready())
			if ignore {
				require.Equal(t, int32(1), fetches.Load(), "fetched once")
			} else {
				require.GreaterOrEqual(t, fetches.Load(), int32(5), "fetched at every list")
			}
			require.Empty(t, srv.reloads(), "REQ_SKIP_INIT: no start-up reload")
			name := "sleep-" + strconv.FormatBool(ignore)
			e.configMap(t, ns, name, dashboard(), map[string]string{name + ".json": "{}"})
			r := srv.waitReloads(t, 1)
			require.Contains(t, r[0].files, name+".json")
			require.NoError(t, e.kube.CoreV1().ConfigMaps(ns).Delete(t.Context(), name, metav1.DeleteOptions{}))
			waitGone(t, filepath.Join(dir, name+".json"))
		})
	}
}

// TestWatchResumes: a watch the API server ends (WATCH_SERVER_TIMEOUT)
// resumes where it stopped, without a list, and misses nothing.
func TestWatchResumes(t *testing.T) {
	e := start(t)
	ns := e.namespace(t, "grafana")
	dir := t.TempDir()
	c, _ := run(t, e, Options{
		Namespaces: []string{ns}, Resources: []Resource{ConfigMap}, Label: "grafana_dashboard", Folder: dir,
		ServerTimeout: time.Second,
	})
	wait.Until(t, 30*time.Second, 10*time.Millisecond, "synced", c.Ready)
	for i := range 5 {
		wait.Until(t, 30*time.Second, 10*time.Millisecond, "a watch ended", func() error {
			if n := testutil.ToFloat64(c.m.watchRestarts.WithLabelValues("ended")); n < float64(i+1) {
				return fmt.Errorf("%v ended", n)
			}
			return nil
		})
		e.configMap(t, ns, fmt.Sprintf("d-%d", i), dashboard(), map[string]string{fmt.Sprintf("d-%d.json", i): "{}"})
	}
	for i := range 5 {
		waitFile(t, filepath.Join(dir, fmt.Sprintf("d-%d.json", i)), "{}")
	}
	require.Equal(t, 1.0, testutil.ToFloat64(c.m.lists), "listed once, resumed since")
}
