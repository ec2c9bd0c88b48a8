package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// health serves k8s-sidecar's /healthz on HEALTH_HOST:HEALTH_PORT: 503
// until the first full sync, 503 when a watch has been dead for longer
// than WATCH_CLIENT_TIMEOUT, else 200; /-/ready and /-/healthy each say
// one of the two, and /metrics the collector's metrics.
type health struct {
	logger      *slog.Logger
	addr        string
	srv         *http.Server
	ready, live func() error
}

func newHealth(logger *slog.Logger, addr string, reg *prometheus.Registry, ready, live func() error) *health {
	h := &health{logger: logger, addr: addr, ready: ready, live: live}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, "NOT READY: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		if err := live(); err != nil {
			http.Error(w, "NOT LIVE: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("OK"))
	})
	mux.HandleFunc("/-/ready", check(ready))
	mux.HandleFunc("/-/healthy", check(live))
	h.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return h
}

func check(f func() error) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if err := f(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("OK\n"))
	}
}

// run serves until ctx is done.
func (h *health) run(ctx context.Context) error {
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", h.addr)
	if err != nil {
		return err
	}
	h.logger.Info("serving /healthz and /metrics", "address", l.Addr().String())
	go func() {
		<-ctx.Done()
		_ = h.srv.Shutdown(context.Background())
	}()
	if err := h.srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
