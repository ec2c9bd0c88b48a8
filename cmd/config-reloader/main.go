// Command config-reloader is a sidecar that renders a mounted Prometheus
// configuration (gunzip, $(VAR) expansion) and reloads Prometheus whenever it
// or a watched rules directory changes. It accepts prometheus-config-reloader's
// flags and serves its metric names.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/alecthomas/units"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/version"

	"github.com/podreload/podreload/apisource"
	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/envsubst"
	"github.com/podreload/podreload/internal/app"
	"github.com/podreload/podreload/internal/tune"
	"github.com/podreload/podreload/reloader"
)

const program = "config-reloader"

type config struct {
	configFile, output, webConfig, listen string
	partsDir                              string
	watchedDirs, rulesInputDirs           []string
	watchInterval, delayInterval          time.Duration
	retryInterval, reloadTimeout          time.Duration
	reloadURL, runtimeInfoURL             *url.URL
	pidFile, signal                       string
	command                               string
	method, processName, ordinalFrom      string
	strict, version, shortVersion         bool
	allowEmpty                            bool
	stateDir                              string
	memlimitRatio                         float64
	tls                                   reloader.TLS
	maxSize                               units.Base2Bytes
	log                                   promslog.Config
	api                                   apiConfig
	reportPod, stateSecret                string
}

func main() {
	tune.ExecWithOneP()
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run runs until ctx is done or a termination signal arrives, logging to
// stderr, and returns the exit code. Only --version and --short-version
// write to stdout, as prometheus-config-reloader's do.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg := config{log: promslog.Config{Level: promslog.NewLevel(), Format: promslog.NewFormat(), Writer: stderr}}
	a, level := newApp(&cfg)
	if _, err := a.Parse(args); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", program, err)
		return 2
	}
	switch {
	case cfg.shortVersion:
		fmt.Fprintln(stdout, version.Version)
		return 0
	case cfg.version:
		fmt.Fprintln(stdout, version.Print(program))
		return 0
	}
	if cfg.maxSize <= 0 {
		fmt.Fprintf(stderr, "%s: --config-max-size must be positive\n", program)
		return 2
	}
	logger := newLogger(&cfg.log, level)
	tune.SetMemoryLimit(logger, cfg.memlimitRatio)

	trigger, tlsMode, err := newTrigger(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", program, err)
		return 2
	}
	sc := app.NewSidecar(logger, program, "prometheus-config-reloader")
	reg := sc.Registry
	promauto.With(reg).NewGaugeVec(prometheus.GaugeOpts{
		Name: "reloader_info",
		Help: "A metric with a constant '1' value labeled by reload method (http, signal or command).",
	}, []string{"method"}).WithLabelValues(cfg.method).Set(1)
	src, err := newSource(logger.With("component", "api-source"), reg, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", program, err)
		return 2
	}
	reporter, err := newReporter(logger.With("component", "reporter"), reg, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", program, err)
		return 2
	}
	mirror, err := newStateSecret(logger.With("component", "state-secret"), reg, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", program, err)
		return 2
	}
	opts := reloaderOptions(cfg, logger, trigger, sc.Trimmer, src, reporter)
	if mirror != nil {
		opts.StateMirror = mirror
	}
	rel, err := reloader.New(logger.With("component", "reloader"), reg, opts)
	if err != nil {
		logger.Error("invalid flags", "err", err)
		return 2
	}
	logger.Info("starting", "program", program, "version", version.Info())
	if tlsMode != "" {
		logger.Info("reload TLS", "mode", tlsMode)
	}

	if cfg.watchInterval == 0 {
		return renderOnce(ctx, rel, src)
	}
	sc.Add(rel.Run)
	if src != nil { // API source.
		sc.Add(src.Run)
	}
	if reporter != nil { // Reporter: what Prometheus runs, into the pod's annotation.
		sc.Add(reporter.Run)
	}
	if mirror != nil { // The state dir's mirror in a Secret.
		sc.Add(mirror.Run)
	}
	// Ready once Prometheus accepted a reload; degraded, not unready, while
	// the API source serves the last state (the API server out of reach, a
	// Secret missing), input files are left out or an empty configuration
	// is held back: taking the pod out of its Service would not help.
	sc.Serve(cfg.listen, cfg.webConfig, "", app.Readiness(rel.Ready, src.Err, rel.Degraded))
	return sc.Run(ctx)
}

// renderOnce runs the init-container mode, the API source running
// meanwhile, and returns the exit code.
func renderOnce(ctx context.Context, rel *reloader.Reloader, src *apisource.Source) int {
	if src != nil { // A signal ends the wait for the source's content.
		var stop, cancel context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		var wg sync.WaitGroup
		defer wg.Wait()
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		wg.Go(func() { _ = src.Run(ctx) })
	}
	if rel.RenderOnce(ctx) != nil {
		return 1
	}
	return 0
}

// newApp defines the flags, prometheus-config-reloader's spellings and
// defaults, bound to cfg.
func newApp(cfg *config) (*kingpin.Application, *logLevel) {
	a := kingpin.New(program, "Renders a mounted Prometheus configuration and reloads Prometheus when it or a watched directory changes.")
	a.Flag("version", "Print the version and build information, and exit.").BoolVar(&cfg.version)
	a.Flag("short-version", "Print just the version number, and exit.").BoolVar(&cfg.shortVersion)
	a.HelpFlag.Short('h')
	a.Flag("config-file", "Configuration file to render, plain or gzipped (detected by its magic bytes).").StringVar(&cfg.configFile)
	a.Flag("config-envsubst-file", "Output file: the configuration gunzipped and with $(VAR) expanded, written atomically.").StringVar(&cfg.output)
	a.Flag("config-parts-dir", "Directory holding the parts a split configuration names ("+strings.TrimSpace(contract.PartDirective)+" lines), each a file of the part's name, plain or gzipped; each is rendered as the configuration into "+contract.PartsOutDir+"/NAME.yaml next to --config-envsubst-file. With --config-secret, the parts are the Secrets of those names instead.").StringVar(&cfg.partsDir)
	a.Flag("watched-dir", "Directory whose top-level files are watched, non-recursively (repeatable).").StringsVar(&cfg.watchedDirs)
	a.Flag("watch-interval", "How often everything is re-read as a safety net; 0 renders the configuration once and exits (init-container mode).").Default("3m").DurationVar(&cfg.watchInterval)
	a.Flag("delay-interval", "Wait this long after the last change before reloading; 0 reloads the first change at once and coalesces a burst into one trailing reload.").Default("0s").DurationVar(&cfg.delayInterval)
	a.Flag("retry-interval", "First wait before retrying a failed reload; it doubles, with jitter, up to 2m.").Default("5s").DurationVar(&cfg.retryInterval)
	a.Flag("reload-timeout", "How long a reload request (or its confirmation) may take.").Default("30s").DurationVar(&cfg.reloadTimeout)
	a.Flag("reload-url", "URL called with POST to reload.").Default("http://127.0.0.1:9090/-/reload").SetValue(app.URLValue{Flag: "reload-url", URL: &cfg.reloadURL})
	a.Flag("reload-method", "How to reload: http (POST --reload-url), signal (--reload-signal to --pid-file's process or else to --process-executable-name, confirmed through --runtimeinfo-url) or command (run --reload-command).").Default("http").EnumVar(&cfg.method, "http", "signal", "command")
	a.Flag("process-executable-name", "Executable name of the process to signal with --reload-method=signal (needs a shared process namespace).").Default("prometheus").StringVar(&cfg.processName)
	a.Flag("pid-file", "File holding the PID of the process to signal, instead of --process-executable-name.").StringVar(&cfg.pidFile)
	a.Flag("reload-signal", "Signal sent with --reload-method=signal.").Default("HUP").StringVar(&cfg.signal)
	a.Flag("runtimeinfo-url", "Prometheus runtime information URL that confirms a reload by signal, with Prometheus' /metrics and /api/v1/notifications under the same prefix when its path ends in /api/v1/status/runtimeinfo (a load, and a failure after a failure, are then told at once); empty sends the signal without confirmation (for other apps).").Default("http://127.0.0.1:9090/api/v1/status/runtimeinfo").SetValue(app.URLValue{Flag: "runtimeinfo-url", URL: &cfg.runtimeInfoURL})
	a.Flag("reload-tls-ca-file", "CA certificates that verify an https --reload-url's or --runtimeinfo-url's server, read at each connection; by default the system's roots, and no verification for a loopback host (localhost, 127.0.0.0/8, ::1) without a CA file or server name.").StringVar(&cfg.tls.CAFile)
	a.Flag("reload-tls-cert-file", "Client certificate presented to an https --reload-url or --runtimeinfo-url (read at each connection).").StringVar(&cfg.tls.CertFile)
	a.Flag("reload-tls-key-file", "Key of --reload-tls-cert-file.").StringVar(&cfg.tls.KeyFile)
	a.Flag("reload-tls-server-name", "Name the server's certificate must hold; by default the URL's host.").StringVar(&cfg.tls.ServerName)
	a.Flag("reload-tls-insecure-skip-verify", "Accept any server certificate, whatever the host.").BoolVar(&cfg.tls.InsecureSkipVerify)
	a.Flag("reload-command", "Command run with --reload-method=command, split on spaces (no shell); it must exist in this container.").StringVar(&cfg.command)
	a.Flag("statefulset-ordinal-from-envvar", "Environment variable whose trailing digits give $(STATEFULSET_ORDINAL_NUMBER).").Default("POD_NAME").StringVar(&cfg.ordinalFrom)
	a.Flag("config-envsubst-strict", "Treat a reference to an undefined variable as an error and keep the previous output; by default it is left verbatim, counted and warned about, as prometheus-config-reloader does.").BoolVar(&cfg.strict)
	a.Flag("config-allow-empty", "Apply an empty configuration, or rule file of --rules-dir (nothing but whitespace, plain or gunzipped), where the last one rendered had content; by default it is held back, the previous version kept, counted in reloader_inputs_held_back, and /-/ready says so: a writer that truncates before it writes, or a Secret emptied by mistake, would make Prometheus drop every target or rule.").BoolVar(&cfg.allowEmpty)
	a.Flag("state-dir", "Directory keeping the last configuration and rule files Prometheus accepted, and the content it rejected after them, so that no restart starts Prometheus on content it rejected: by default "+reloader.DefaultStateDir+" beside --config-envsubst-file (it outlives a restart of this container); on Prometheus' data volume it also outlives a restart of the pod. Give the init container the same one.").StringVar(&cfg.stateDir)
	a.Flag("config-max-size", "Largest configuration accepted, gunzipped: a larger one (a gzip bomb) is refused and the previous output kept.").Default("16MiB").BytesVar(&cfg.maxSize)
	a.Flag("listen-address", "Address serving /metrics, /healthz and /-/ready; empty disables it.").StringVar(&cfg.listen)
	a.Flag("web-config-file", "exporter-toolkit web configuration file enabling TLS or authentication.").StringVar(&cfg.webConfig)
	a.Flag("auto-gomemlimit-ratio", "Ratio of the container's memory limit (else the system's memory) set as the Go memory limit; 0, the default, sets none, above 1 counts as 1.").Default("0").Float64Var(&cfg.memlimitRatio)
	a.Flag("config-secret", "Read the configuration from this Secret, NAMESPACE/NAME or NAME in the pod's namespace, through the Kubernetes API instead of --config-file: live about a millisecond after it changes, where a mounted volume waits for the kubelet's next sync.").StringVar(&cfg.api.secret)
	a.Flag("config-secret-name", "Same as --config-secret (VictoriaMetrics' config-reloader spelling).").StringVar(&cfg.api.secret)
	a.Flag("config-secret-key", "Key of --config-secret holding the configuration, plain or gzipped.").Default("config.yaml.gz").StringVar(&cfg.api.secretKey)
	a.Flag("rules-configmap-selector", "With --config-secret: also read the ConfigMaps of the pod's namespace that match this label selector, each key written to --rules-dir/CONFIGMAP/KEY.").StringVar(&cfg.api.rulesSelector)
	a.Flag("rules-dir", "Directory the rule ConfigMaps (--rules-configmap-selector or --rules-input-dir) are written into, a key X.gz gunzipped into the file X; files of ConfigMaps that no longer match are removed from it.").StringVar(&cfg.api.rulesDir)
	a.Flag("rules-input-dir", "Directory of rule files, a ConfigMap's volume, watched and written into --rules-dir/BASENAME/, a file X.gz gunzipped into X (at most --config-max-size), any other copied (repeatable): for a process that cannot read gzipped files, where --watched-dir hands it the volume itself.").StringsVar(&cfg.rulesInputDirs)
	a.Flag("api-server", "URL of the Kubernetes API server; by default the in-cluster one ($KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT).").SetValue(app.URLValue{Flag: "api-server", Raw: &cfg.api.Server})
	a.Flag("api-token-file", "Bearer token for the API server, read again for each request (a rotated token is used at once).").Default(apisource.DefaultTokenFile).StringVar(&cfg.api.TokenFile)
	a.Flag("api-ca-file", "Certificates that verify the API server.").Default(apisource.DefaultCAFile).StringVar(&cfg.api.CAFile)
	a.Flag("report-pod", "Write what Prometheus runs (the content hash of what it last accepted, and its last rejection) into this pod's "+contract.AppliedAnnotation+" annotation, NAMESPACE/NAME, through the API server (--api-server, --api-token-file, --api-ca-file); empty reports nothing.").StringVar(&cfg.reportPod)
	a.Flag("state-secret", "Keep a copy of --state-dir in this Secret, NAMESPACE/NAME or NAME in the pod's namespace, through the API server (--api-server, --api-token-file, --api-ca-file), for a pod whose --state-dir is on an emptyDir: written (gzipped, one patch per change, never holding up a reload) each time the state changes, and read into --state-dir when this container starts and --state-dir holds nothing (a new pod). The Secret must exist; the reloader needs get and patch on it. A state larger than a Secret holds (1 MiB gzipped) is kept in --state-dir only.").StringVar(&cfg.stateSecret)
	a.Flag("log-format", "Log format: logfmt or json.").Default("logfmt").SetValue(cfg.log.Format)
	level := &logLevel{level: cfg.log.Level}
	a.Flag("log-level", "Log level: all (the same as debug), debug, info, warn, error or none (nothing logged).").Default("info").SetValue(level)
	return a, level
}

// reloaderOptions are the reloader's options for the flags.
func reloaderOptions(cfg config, logger *slog.Logger, trigger reloader.Trigger, trimmer *tune.Trimmer, src *apisource.Source, reporter *apisource.Reporter) reloader.Options {
	opts := reloader.Options{
		ConfigFile:    cfg.configFile,
		ConfigOutput:  cfg.output,
		PartsDir:      cfg.partsDir,
		MaxConfigSize: int64(cfg.maxSize),
		WatchedDirs:   cfg.watchedDirs,
		Expander: envsubst.New(envsubst.Options{Strict: cfg.strict, OrdinalFromEnv: cfg.ordinalFrom, Undefined: func(refs []envsubst.Reference) {
			logger.Warn("environment variables not set: references left verbatim", "file", cfg.configFile, "undefined", describe(refs))
		}}),
		Trigger:          trigger,
		DelayInterval:    cfg.delayInterval,
		WatchInterval:    cfg.watchInterval,
		RetryInterval:    cfg.retryInterval,
		AfterApply:       trimmer.Worked,
		Retries:          -1,
		KeepAccepted:     true,
		StateDir:         cfg.stateDir,
		AllowEmptyConfig: cfg.allowEmpty,
	}
	if src != nil {
		opts.Source, opts.RulesDir = src, cfg.api.rulesDir
	}
	if len(cfg.rulesInputDirs) > 0 {
		opts.RulesInputDirs, opts.RulesDir = cfg.rulesInputDirs, cfg.api.rulesDir
	}
	if reporter != nil {
		opts.OnApplied = reporter.Report
	}
	return opts
}
