package app

import (
	"context"
	"log/slog"
	"time"

	oklog "github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/podreload/podreload/internal/tune"
)

// Sidecar is the start-up both reloader sidecars share: the runtime sized
// for a sidecar, the metrics registry, the trimmer of code pages, and the
// run group of their actors, the web server and the trimmer.
type Sidecar struct {
	// Registry has the Go, process and build-info collectors (see
	// NewRegistry).
	Registry *prometheus.Registry
	// Trimmer drops the code pages used only at start-up or in a burst of
	// work; tell it of each burst with Worked.
	Trimmer *tune.Trimmer

	logger *slog.Logger
	actors []func(context.Context) error
	server *Server
}

// NewSidecar sizes the runtime (tune.Runtime), drops the code pages that
// start-up touched, and returns a Sidecar whose registry has the build
// info of program and of its aliases.
func NewSidecar(logger *slog.Logger, program string, aliases ...string) *Sidecar {
	tune.Runtime()
	// Drop the code pages that runtime and package initialisation touched:
	// they would set the process' peak RSS.
	_, _ = tune.TrimCode()
	return &Sidecar{
		Registry: NewRegistry(program, aliases...),
		Trimmer:  tune.NewTrimmer(logger, 2*time.Second),
		logger:   logger,
	}
}

// Add adds an actor to the run group; run returns when its ctx is done.
func (s *Sidecar) Add(run func(context.Context) error) { s.actors = append(s.actors, run) }

// Serve has Run serve the registry, /healthz and /-/ready on addr (see
// NewServer); an empty addr serves nothing.
func (s *Sidecar) Serve(addr, webConfig, metricsPath string, ready func() error) {
	if addr != "" {
		s.server = NewServer(s.logger.With("component", "web"), s.Registry, addr, webConfig, metricsPath, ready)
	}
}

// Run runs the actors, the web server and the trimmer until ctx is done,
// one of them ends, or SIGINT or SIGTERM arrives, and returns the exit
// code, as Run does.
func (s *Sidecar) Run(ctx context.Context) int {
	var g oklog.Group
	for _, run := range s.actors {
		ctx, cancel := context.WithCancel(ctx)
		g.Add(func() error { return run(ctx) }, func(error) { cancel() })
	}
	if srv := s.server; srv != nil {
		g.Add(srv.Run, func(error) { srv.Close() })
	}
	{ // Trimmer: drops the code pages used only at start-up or in a burst of work.
		ctx, cancel := context.WithCancel(ctx)
		g.Add(func() error { return s.Trimmer.Run(ctx) }, func(error) { cancel() })
	}
	return Run(ctx, s.logger, &g)
}
