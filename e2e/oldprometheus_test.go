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
// configuration Secret and the flags that matter outside a pod. It loads
// the configuration, and a reload of an edited one is applied; the
// rendering for the newest version (keys v2.35 does not know) is refused,
// which shows the version gates are what makes it load.
func TestOldPrometheusV2(t *testing.T) {
	bin, err := toolbin.Path(oldPrometheus)
	require.NoError(t, err) // Never a skip: `make tools` builds it.

	t.Run("newest rendering refused", func(t *testing.T) {
		config, _ := renderTakenOver(t, "", "15s")
		dir := t.TempDir()
		file := writeRendered(t, dir, config)
		p := start(t, "prometheus", nil, bin, oldArgs(t, oldPrometheusVersion, file, dir, freeAddr(t))...)
		err := p.wait(t)
		require.Error(t, err, "Prometheus %s loaded the newest rendering", oldPrometheusVersion)
		require.Contains(t, p.output(), "field retention not found")
	})

	t.Run("its rendering loaded and reloaded", func(t *testing.T) {
		config, _ := renderTakenOver(t, oldPrometheusVersion, "15s")
		dir := t.TempDir()
		file := writeRendered(t, dir, config)
		addr := freeAddr(t)
		url := "http://" + addr
		p := start(t, "prometheus", nil, bin, oldArgs(t, oldPrometheusVersion, file, dir, addr)...)
		alive := func(err error) error {
			if e := p.exited(); e != nil {
				t.Fatalf("%v:\n%s", e, p.output())
			}
			return err
		}
		eventually(t, "prometheus ready", func() error { return alive(ok(t.Context(), url+"/-/ready")) })
		require.Equal(t, 1.0, reloadMetric(t, url))
		requireScrapeInterval(t, url, "15s")

		edited, _ := renderTakenOver(t, oldPrometheusVersion, "42s")
		require.NotEqual(t, config, edited)
		writeRendered(t, dir, edited)
		postReload(t, url)
		requireScrapeInterval(t, url, "42s")
		require.Equal(t, 1.0, reloadMetric(t, url))
	})
}

// renderTakenOver renders, as the takeover does, a Prometheus object of
// version (empty: the newest) selecting every ServiceMonitor, scraping at
// interval: its configuration and its Prometheus flags.
func renderTakenOver(t *testing.T, version, interval string) ([]byte, []monitoringv1.Argument) {
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
	config, err := io.ReadAll(zr)
	require.NoError(t, err)
	return config, promserver.OperatorPrometheusArgs(target)
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

// oldArgs are the flags the takeover renders for a Prometheus of version,
// those naming the pod's paths and address replaced: the configuration
// file, the storage path and the listen address; the web configuration
// file, which the pod mounts from a Secret, left out.
func oldArgs(t *testing.T, version, config, data, addr string) []string {
	t.Helper()
	_, rendered := renderTakenOver(t, version, "15s")
	args := []string{"--config.file=" + config, "--storage.tsdb.path=" + filepath.Join(data, "tsdb"), "--web.listen-address=" + addr}
	seen := map[string]bool{}
	for _, a := range rendered {
		seen[a.Name] = true
		switch a.Name {
		case "config.file", "storage.tsdb.path", "web.listen-address", "web.config.file":
			continue
		}
		if a.Value == "" {
			args = append(args, "--"+a.Name)
		} else {
			args = append(args, "--"+a.Name+"="+a.Value)
		}
	}
	for _, name := range []string{"config.file", "storage.tsdb.path", "web.enable-lifecycle", "storage.tsdb.retention.time"} {
		require.True(t, seen[name], "the rendered flags set no --%s: %v", name, rendered)
	}
	return args
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
