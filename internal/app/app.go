// Package app holds what the podreload binaries share in main: the metrics
// registry, the HTTP server and the memory limit.
package app

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
)

// NewRegistry returns a registry with the Go, process and build-info collectors.
func NewRegistry(program string) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		versioncollector.NewCollector(strings.ReplaceAll(program, "-", "_")),
	)
	return reg
}

// Server serves /metrics, /healthz and /-/ready.
type Server struct {
	srv   *http.Server
	flags *web.FlagConfig
	log   *slog.Logger
}

// NewServer returns a server for addr; webConfig is an exporter-toolkit web
// configuration file (TLS, basic auth), or empty. metricsPath defaults to /metrics.
func NewServer(logger *slog.Logger, reg *prometheus.Registry, addr, webConfig, metricsPath string, ready func() bool) *Server {
	if metricsPath == "" {
		metricsPath = "/metrics"
	}
	mux := http.NewServeMux()
	mux.Handle(metricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"status":"up"}`))
	})
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		if !ready() {
			http.Error(w, "not ready: no reload has succeeded yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	systemd := false
	return &Server{
		srv:   &http.Server{Handler: mux},
		flags: &web.FlagConfig{WebListenAddresses: &[]string{addr}, WebConfigFile: &webConfig, WebSystemdSocket: &systemd},
		log:   logger,
	}
}

// Run serves until Close is called.
func (s *Server) Run() error {
	err := web.ListenAndServe(s.srv, s.flags, s.log)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops the server.
func (s *Server) Close() { _ = s.srv.Shutdown(context.Background()) }

// SetMemoryLimit sets the Go memory limit to ratio of the cgroup's memory
// limit, when there is one, and returns the limit set (0 for none).
func SetMemoryLimit(ratio float64) int64 {
	b, err := os.ReadFile("/sys/fs/cgroup/memory.max")
	if err != nil {
		return 0
	}
	limit, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || limit <= 0 {
		return 0 // "max": no limit.
	}
	n := int64(float64(limit) * ratio)
	debug.SetMemoryLimit(n)
	return n
}
