// Command proxy is a reverse proxy in kube-rbac-proxy's place, without its
// authorization, for e2e/node's takeover of a Prometheus with listenLocal:
// a container of the Prometheus pod that serves on the pod's address what
// Prometheus serves on 127.0.0.1 only. `make host-images` packs it as the
// proxy image.
package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	fl := flag.NewFlagSet("proxy", flag.ContinueOnError)
	fl.SetOutput(stderr)
	listen := fl.String("listen-address", ":9091", "Address to serve on.")
	upstream := fl.String("upstream", "http://127.0.0.1:9090", "URL of the server to proxy to.")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	target, err := url.Parse(*upstream)
	if err != nil || target.Scheme == "" || target.Host == "" {
		logger.Error("parse --upstream", "upstream", *upstream, "err", err)
		return 2
	}
	srv := &http.Server{
		Addr: *listen,
		Handler: &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.SetXForwarded()
		}},
		ReadHeaderTimeout: 10 * time.Second,
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe() }()
	logger.Info("proxying", "listen_address", *listen, "upstream", target.String())
	select {
	case err := <-served:
		logger.Error("serve", "err", err)
		return 1
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		logger.Error("shut down", "err", err)
		return 1
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		logger.Error("serve", "err", err)
		return 1
	}
	return 0
}
