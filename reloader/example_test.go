package reloader_test

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podreload/podreload/envsubst"
	"github.com/podreload/podreload/reloader"
)

// A sidecar next to Prometheus: render the mounted configuration and reload
// Prometheus whenever it or the rules change.
func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "prometheus.yaml"), []byte("global:\n  external_labels:\n    replica: $(POD_NAME)\n"), 0o644)

	u, _ := url.Parse("http://127.0.0.1:9090/-/reload")
	r, err := reloader.New(nil, prometheus.NewRegistry(), reloader.Options{
		ConfigFile:   filepath.Join(dir, "prometheus.yaml"),
		ConfigOutput: filepath.Join(dir, "out", "prometheus.env.yaml"),
		WatchedDirs:  []string{filepath.Join(dir, "rules")},
		Expander: envsubst.New(envsubst.Options{Strict: true, Lookup: func(string) (string, bool) {
			return "prometheus-0", true
		}}),
		Trigger:       &reloader.HTTPTrigger{URL: u, Timeout: 30 * time.Second},
		WatchInterval: 3 * time.Minute,
		Retries:       -1,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The init-container mode renders once; a sidecar would call r.Run(ctx).
	if err := r.Render(); err != nil {
		fmt.Println(err)
		return
	}
	b, _ := os.ReadFile(filepath.Join(dir, "out", "prometheus.env.yaml"))
	fmt.Print(string(b))
	// Output:
	// global:
	//   external_labels:
	//     replica: prometheus-0
}
