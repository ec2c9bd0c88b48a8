// Command collector writes the ConfigMaps and Secrets selected by a label
// into files and asks an application to reload them: a drop-in for
// kiwigrid's k8s-sidecar (Grafana's dashboard and datasource sidecars),
// configured by the same environment variables (docs/collector.md), with
// one reload per burst of changes, atomic files, and watches that resume.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/version"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/podreload/podreload/collect"
	"github.com/podreload/podreload/internal/app"
	"github.com/podreload/podreload/internal/tune"
)

const program = "collector"

// namespaceFile holds the pod's namespace, NAMESPACE's default.
const namespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

func main() {
	tune.ExecWithOneP()
	os.Exit(run(context.Background(), os.Args[1:], os.LookupEnv, os.Stderr))
}

// run runs until ctx is done or a termination signal arrives (with
// METHOD=LIST, until everything is written), configured by args and the
// variables lookup finds, logging to stderr, and returns the exit code.
func run(ctx context.Context, args []string, lookup func(string) (string, bool), stderr io.Writer) int {
	var usernameFile, passwordFile, nsFile string
	a := kingpin.New(program, "Writes the ConfigMaps and Secrets selected by a label into files and asks an application to reload them; "+
		"configured by k8s-sidecar's environment variables (docs/collector.md).")
	a.Version(version.Print(program))
	a.HelpFlag.Short('h')
	a.Flag("req-username-file", "File holding the basic auth user name of REQ_URL and .url fetches; over REQ_USERNAME_FILE.").StringVar(&usernameFile)
	a.Flag("req-password-file", "File holding the basic auth password of REQ_URL and .url fetches; over REQ_PASSWORD_FILE.").StringVar(&passwordFile)
	a.Flag("namespace-file", "File holding the pod's namespace, read when NAMESPACE is not set.").Hidden().Default(namespaceFile).StringVar(&nsFile)
	exit := -1
	a.UsageWriter(stderr).ErrorWriter(stderr).Terminate(func(code int) { exit = code })
	_, err := a.Parse(args)
	if exit >= 0 {
		return exit
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", program, err)
		return 2
	}
	cfg, err := parseEnv(lookup, usernameFile, passwordFile)
	if err == nil && cfg.defaultNamespace {
		var b []byte
		b, err = os.ReadFile(nsFile)
		if err != nil {
			err = fmt.Errorf("NAMESPACE is not set and the pod's namespace is unknown: %w", err)
		}
		cfg.opts.Namespaces = []string{strings.TrimSpace(string(b))}
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", program, strings.ReplaceAll(err.Error(), "\n", "; "))
		return 2
	}
	logger := newLogger(cfg, stderr)
	// client-go logs through klog: in the same format, at the same level.
	klog.SetSlogLogger(logger.With("component", "client-go"))
	for _, note := range cfg.notes {
		logger.Warn("configuration", "note", note)
	}
	restConfig, err := kubeConfig(cfg)
	if err == nil {
		cfg.opts.Client, err = collect.NewRESTClient(restConfig)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", program, err)
		return 2
	}
	sc := app.NewSidecar(logger, program)
	cfg.opts.AfterBurst = sc.Trimmer.Worked
	col, err := collect.New(logger.With("component", "collector"), sc.Registry, cfg.opts)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", program, err)
		return 2
	}
	logger.Info("starting", "program", program, "version", version.Info())
	sc.Add(col.Run)
	if cfg.opts.Method != collect.List {
		addr := net.JoinHostPort(cfg.healthHost, strconv.Itoa(cfg.healthPort))
		h := newHealth(logger.With("component", "web"), addr, sc.Registry, col.Ready, col.Live)
		sc.Add(h.run)
	}
	return sc.Run(ctx)
}

// kubeConfig is k8s-sidecar's: KUBECONFIG (else ~/.kube/config) when
// that file exists, else the pod's service account.
func kubeConfig(cfg config) (*rest.Config, error) {
	path := cfg.kubeconfig
	if path == "" {
		if home, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(home, ".kube", "config")
		}
	} else if rest, ok := strings.CutPrefix(path, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(home, rest)
		}
	}
	var (
		c   *rest.Config
		err error
	)
	if _, statErr := os.Stat(path); path != "" && statErr == nil {
		c, err = clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("KUBECONFIG %s: %w", path, err)
		}
	} else {
		c, err = rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no kubeconfig (KUBECONFIG, ~/.kube/config) and not in a pod: %w", err)
		}
	}
	if cfg.skipTLSVerify {
		c.Insecure = true
		c.CAFile, c.CAData = "", nil
	}
	return c, nil
}

// newLogger logs as LOG_LEVEL, LOG_FORMAT and LOG_TZ say.
func newLogger(cfg config, w io.Writer) *slog.Logger {
	lc := promslog.Config{Level: promslog.NewLevel(), Format: promslog.NewFormat(), Writer: w}
	_ = lc.Level.Set(cfg.logLevel)
	if cfg.logJSON {
		_ = lc.Format.Set("json")
	}
	logger := promslog.New(&lc)
	if cfg.logUTC {
		logger = slog.New(utcHandler{logger.Handler()})
	}
	return logger
}

// utcHandler logs times in UTC (LOG_TZ=UTC).
type utcHandler struct{ slog.Handler }

func (h utcHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Time = r.Time.UTC()
	return h.Handler.Handle(ctx, r)
}

func (h utcHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return utcHandler{h.Handler.WithAttrs(attrs)}
}

func (h utcHandler) WithGroup(name string) slog.Handler { return utcHandler{h.Handler.WithGroup(name)} }
