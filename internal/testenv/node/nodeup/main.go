// Command nodeup runs a node (package node) until SIGINT or SIGTERM, then
// stops it: `make node-up` runs it in the background, `make node-down`
// signals it and runs `nodeup -clean`, which removes what a crashed node
// left behind.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/podreload/podreload/internal/testenv/node"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	fl := flag.NewFlagSet("nodeup", flag.ContinueOnError)
	fl.SetOutput(stderr)
	dir := fl.String("dir", node.DefaultDir, "State directory of the node.")
	kubeconfig := fl.String("kubeconfig", "", "Where to copy the administrator's kubeconfig.")
	sync := fl.Duration("sync-frequency", 0, "The kubelet's syncFrequency (0: the kubelet's default, 1m).")
	clean := fl.Bool("clean", false, "Remove what a node left behind, and exit.")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	if *clean {
		if err := node.Clean(*dir); err != nil {
			logger.Error("clean up the node", "err", err)
			return 1
		}
		return 0
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	start := time.Now()
	n, err := node.Up(ctx, logger, node.Options{Dir: *dir, SyncFrequency: *sync})
	if err != nil {
		logger.Error("start the node", "err", err)
		return 1
	}
	if *kubeconfig != "" {
		b, err := os.ReadFile(n.Kubeconfig)
		if err == nil {
			err = os.WriteFile(*kubeconfig, b, 0o600)
		}
		if err != nil {
			logger.Error("copy the kubeconfig", "err", err)
			_ = n.Stop()
			return 1
		}
	}
	logger.Info("node ready", "kubeconfig", cmp.Or(*kubeconfig, n.Kubeconfig), "duration", time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(stderr, "export KUBECONFIG=%s\n", cmp.Or(*kubeconfig, n.Kubeconfig))
	<-ctx.Done()
	logger.Info("stopping the node")
	if err := n.Stop(); err != nil {
		logger.Error("stop the node", "err", err)
		return 1
	}
	logger.Info("node stopped")
	return 0
}
