// Package app holds what the podreload mains share to serve: the metrics
// registry, the HTTP server and the end of their run group; and the
// start-up both sidecars share (Sidecar).
package app

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"syscall"

	oklog "github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
)

// NewRegistry returns a registry with the Go, process and build-info
// collectors: <program>_build_info, and the same for each alias (the
// program a binary replaces, whose dashboards use its name).
func NewRegistry(program string, aliases ...string) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	for _, name := range append([]string{program}, aliases...) {
		reg.MustRegister(versioncollector.NewCollector(strings.ReplaceAll(name, "-", "_")))
	}
	return reg
}

// Server serves /metrics, /healthz and /-/ready.
type Server struct {
	srv   *http.Server
	flags *web.FlagConfig
	log   *slog.Logger
}

// NewServer returns a server for addr (a nil logger discards logs); webConfig is an exporter-toolkit web
// configuration file (TLS, basic auth), or empty. metricsPath defaults to /metrics. /-/ready answers 503
// with the error ready returns, if any, but a DegradedError.
func NewServer(logger *slog.Logger, reg prometheus.Gatherer, addr, webConfig, metricsPath string, ready func() error) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if metricsPath == "" {
		metricsPath = "/metrics"
	}
	mux := http.NewServeMux()
	opts := promhttp.HandlerOpts{}
	if r, ok := reg.(prometheus.Registerer); ok {
		opts.Registry = r
	}
	mux.Handle(metricsPath, promhttp.HandlerFor(reg, opts))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"status":"up"}`))
	})
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		err := ready()
		var degraded *DegradedError
		switch {
		case errors.As(err, &degraded):
			_, _ = w.Write([]byte("ready, degraded: " + degraded.Err.Error() + "\n"))
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		default:
			_, _ = w.Write([]byte("ready\n"))
		}
	})
	systemd := false
	return &Server{
		srv:   &http.Server{Handler: mux},
		flags: &web.FlagConfig{WebListenAddresses: &[]string{addr}, WebConfigFile: &webConfig, WebSystemdSocket: &systemd},
		log:   logger,
	}
}

// DegradedError is what a server's ready function returns when the
// process serves, but not as it should (it keeps its last state while a
// source of changes is unreachable): /-/ready answers 200 and says why,
// since taking the pod out of its Service would not help.
type DegradedError struct{ Err error }

func (e *DegradedError) Error() string { return "degraded: " + e.Err.Error() }

func (e *DegradedError) Unwrap() error { return e.Err }

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

// Readiness returns a server's ready function: ready's error, if any
// (503); else a DegradedError joining those of degraded (200, each saying
// why and what is served meanwhile); else nil.
func Readiness(ready func() error, degraded ...func() error) func() error {
	return func() error {
		if err := ready(); err != nil {
			return err
		}
		var errs []error
		for _, f := range degraded {
			errs = append(errs, f())
		}
		if err := errors.Join(errs...); err != nil {
			return &DegradedError{Err: err}
		}
		return nil
	}
}

// Run adds to g an actor that ends it on SIGINT or SIGTERM, runs it until
// ctx is done or an actor ends, and returns the exit code: 0 for a
// requested stop, 1 for a failure.
func Run(ctx context.Context, logger *slog.Logger, g *oklog.Group) int {
	g.Add(oklog.SignalHandler(ctx, os.Interrupt, syscall.SIGTERM))
	if err := g.Run(); err != nil {
		if errors.As(err, new(*oklog.SignalError)) || errors.Is(err, context.Canceled) {
			logger.Info("stopping", "reason", err)
			return 0
		}
		logger.Error("run", "err", err)
		return 1
	}
	return 0
}
