package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podreload/podreload/controller/prometheus"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// oldPrometheus is the oldest v2 Prometheus built here
// (tools/prometheus-v2, `make tools`), and its version.
const (
	oldPrometheus        = "prometheus-v2.35"
	oldPrometheusVersion = "v2.35.0"
)

// TestOldPrometheusV2 runs the oldest v2 Prometheus built here on what the
// takeover renders for a Prometheus object of its version: the
// configuration Secret, the web configuration Secret and the flags of the
// prometheus container, those naming the pod's paths pointed at a
// directory. It loads them, runs with the rendered flags, and a reload of
// an edited configuration is applied; the rendering for the newest version
// (the retention in the configuration file, from Prometheus 3.11) is
// refused, which shows the version gates are what makes it load.
func TestOldPrometheusV2(t *testing.T) {
	bin, err := toolbin.Path(oldPrometheus)
	require.NoError(t, err) // Never a skip: `make tools` builds it.

	t.Run("newest rendering refused", func(t *testing.T) {
		r := renderTakenOver(t, "", "15s")
		require.NotContains(t, r.image, ":"+oldPrometheusVersion)
		p := start(t, "prometheus", nil, bin, r.localArgs(t, t.TempDir(), freeAddr(t))...)
		require.Contains(t, p.refused(t), "field tsdb not found in type config.StorageConfig")
	})

	t.Run("its rendering loaded and reloaded", func(t *testing.T) {
		r := renderTakenOver(t, oldPrometheusVersion, "15s")
		require.True(t, strings.HasSuffix(r.image, ":"+oldPrometheusVersion), "image %s", r.image)
		require.Contains(t, r.args, "--storage.tsdb.retention.time=5d", "the retention of a v2 is a flag")
		dir, addr := t.TempDir(), freeAddr(t)
		url := "http://" + addr
		args := r.localArgs(t, dir, addr)
		p := start(t, "prometheus", nil, bin, args...)
		eventually(t, "prometheus ready", func() error {
			if err := p.exited(); err != nil {
				t.Fatalf("%v:\n%s", err, p.output())
			}
			return ok(t.Context(), url+"/-/ready")
		})
		var build struct {
			Version string `json:"version"`
		}
		require.NoError(t, getJSON(t.Context(), url+"/api/v1/status/buildinfo", &build))
		require.Equal(t, strings.TrimPrefix(oldPrometheusVersion, "v"), build.Version)
		requireFlags(t, url, args)
		require.Equal(t, 1.0, reloadMetric(t, url))
		requireScrapeInterval(t, url, "15s")

		edited := renderTakenOver(t, oldPrometheusVersion, "42s")
		require.NotEqual(t, r.config, edited.config)
		require.Equal(t, r.args, edited.args, "a reload applies an edit of the configuration alone")
		writeRendered(t, dir, edited.config)
		postReload(t, url)
		requireScrapeInterval(t, url, "42s")
		require.Equal(t, 1.0, reloadMetric(t, url))
	})
}

// takenOver is what the takeover renders for a Prometheus object.
type takenOver struct {
	config []byte   // the configuration, before $(POD_NAME) is substituted
	web    []byte   // the web configuration file; nil when there is none
	image  string   // the prometheus container's image
	args   []string // the prometheus container's arguments
}

// renderTakenOver renders, as the takeover does, a Prometheus object of
// version (empty: the newest) selecting every ServiceMonitor, scraping at
// interval, with a retention: its configuration, its web configuration and
// its prometheus container.
func renderTakenOver(t *testing.T, version, interval string) takenOver {
	t.Helper()
	obj := &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "monitoring", UID: "0ld"},
		Spec: monitoringv1.PrometheusSpec{
			CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
				Version:                version,
				ServiceMonitorSelector: &metav1.LabelSelector{},
				ScrapeInterval:         monitoringv1.Duration(interval),
				ExternalLabels:         map[string]string{"cluster": "e2e"},
			},
			Retention: "5d",
		},
	}
	target, unsupported := prometheus.FromPrometheus(obj)
	require.Empty(t, unsupported)
	objs, err := promserver.Render(promserver.Inputs{Server: target.PrometheusServer, Layout: target.Layout, UserConfig: target.UserConfig},
		promserver.WorkloadOptions{DefaultPrometheusImage: "quay.io/prometheus/prometheus", DefaultReloaderImage: "ghcr.io/podreload/podreload:e2e"}, nil)
	require.NoError(t, err)
	require.NotNil(t, objs.ConfigSecret)
	zr, err := gzip.NewReader(bytes.NewReader(objs.ConfigSecret.Data[promserver.ConfigSecretKey]))
	require.NoError(t, err)
	var r takenOver
	r.config, err = io.ReadAll(zr)
	require.NoError(t, err)
	if objs.WebConfigSecret != nil {
		r.web = objs.WebConfigSecret.Data[promserver.WebConfigSecretKey]
	}
	require.Len(t, objs.StatefulSets, 1)
	for _, c := range objs.StatefulSets[0].Spec.Template.Spec.Containers {
		if c.Name == "prometheus" {
			r.image, r.args = c.Image, c.Args
		}
	}
	require.NotEmpty(t, r.args, "no prometheus container")
	return r
}

// localArgs writes r's configuration files into dir and returns r's
// arguments, those naming the pod's paths pointed at dir: the
// configuration file, the web configuration file and the storage path;
// Prometheus listens on addr rather than on the pod's port.
func (r takenOver) localArgs(t *testing.T, dir, addr string) []string {
	t.Helper()
	local := map[string]string{
		"config.file":       writeRendered(t, dir, r.config),
		"storage.tsdb.path": filepath.Join(dir, "tsdb"),
	}
	if r.web != nil {
		web := filepath.Join(dir, "web-config.yaml")
		require.NoError(t, os.WriteFile(web, r.web, 0o600))
		local["web.config.file"] = web
	}
	args := []string{"--web.listen-address=" + addr}
	seen := map[string]bool{}
	for _, a := range r.args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		seen[name] = true
		if path, found := local[name]; found {
			a = "--" + name + "=" + path
		}
		args = append(args, a)
	}
	for _, name := range []string{"config.file", "storage.tsdb.path", "web.enable-lifecycle"} {
		require.True(t, seen[name], "the rendered arguments set no --%s: %v", name, r.args)
	}
	return args
}

// writeRendered writes config into dir as the config-reloader would, the
// pod's name in place of $(POD_NAME), and returns the file's path.
func writeRendered(t *testing.T, dir string, config []byte) string {
	t.Helper()
	file := filepath.Join(dir, "prometheus.env.yaml")
	tmp := file + ".tmp"
	require.NoError(t, os.WriteFile(tmp, bytes.ReplaceAll(config, []byte("$(POD_NAME)"), []byte(podName)), 0o600))
	require.NoError(t, os.Rename(tmp, file))
	return file
}

// requireFlags requires that Prometheus at url runs with args: each of them
// as /api/v1/status/flags answers it, a flag without a value as true.
func requireFlags(t *testing.T, url string, args []string) {
	t.Helper()
	var flags map[string]string
	require.NoError(t, getJSON(t.Context(), url+"/api/v1/status/flags", &flags))
	for _, a := range args {
		name, value, found := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !found {
			value = "true"
		}
		require.Contains(t, flags, name, "Prometheus %s has no flag %s", oldPrometheusVersion, a)
		require.Equal(t, value, flags[name], "flag --%s", name)
	}
}

// reloadMetric returns prometheus_config_last_reload_successful.
func reloadMetric(t *testing.T, url string) float64 {
	t.Helper()
	v, err := metric(t.Context(), url+"/metrics", "prometheus_config_last_reload_successful")
	require.NoError(t, err)
	return v
}

// requireScrapeInterval waits until /api/v1/status/config answers a
// configuration whose global scrape interval is interval.
func requireScrapeInterval(t *testing.T, url, interval string) {
	t.Helper()
	eventually(t, "scrape interval "+interval, func() error {
		var cfg struct {
			YAML string `json:"yaml"`
		}
		if err := getJSON(t.Context(), url+"/api/v1/status/config", &cfg); err != nil {
			return err
		}
		if !strings.Contains(cfg.YAML, "scrape_interval: "+interval+"\n") {
			return fmt.Errorf("configuration without scrape_interval: %s:\n%s", interval, cfg.YAML)
		}
		return nil
	})
}

// postReload asks Prometheus to reload its configuration and requires
// that it accepts it.
func postReload(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/-/reload", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode, "POST /-/reload: %s", body)
}
