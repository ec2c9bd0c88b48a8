// Command config-reloader is a sidecar that renders a mounted Prometheus
// configuration (gunzip, $(VAR) expansion) and reloads Prometheus whenever it
// or a watched rules directory changes. It accepts prometheus-config-reloader's
// flags and serves its metric names.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/alecthomas/units"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/version"

	"github.com/podreload/podreload/envsubst"
	"github.com/podreload/podreload/internal/app"
	"github.com/podreload/podreload/reloader"
)

const program = "config-reloader"

type config struct {
	configFile, output, webConfig, listen string
	watchedDirs                           []string
	watchInterval, delayInterval          time.Duration
	retryInterval, reloadTimeout          time.Duration
	reloadURL                             *url.URL
	runtimeInfoURL, pidFile, signal       string
	command                               string
	method, processName, ordinalFrom      string
	strict                                bool
	memlimitRatio                         float64
	maxSize                               units.Base2Bytes
	log                                   promslog.Config
}

func main() {
	app.ExecWithOneP()
	os.Exit(run(context.Background(), os.Args[1:], os.Stderr))
}

// run runs until ctx is done or a termination signal arrives, logging to
// stderr, and returns the exit code.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	cfg := config{log: promslog.Config{Level: promslog.NewLevel(), Format: promslog.NewFormat(), Writer: stderr}}
	a := kingpin.New(program, "Renders a mounted Prometheus configuration and reloads Prometheus when it or a watched directory changes.")
	a.Version(version.Print(program))
	a.HelpFlag.Short('h')
	a.Flag("config-file", "Configuration file to render, plain or gzipped (detected by its magic bytes).").StringVar(&cfg.configFile)
	a.Flag("config-envsubst-file", "Output file: the configuration gunzipped and with $(VAR) expanded, written atomically.").StringVar(&cfg.output)
	a.Flag("watched-dir", "Directory whose top-level files are watched, non-recursively (repeatable).").StringsVar(&cfg.watchedDirs)
	a.Flag("watch-interval", "How often everything is re-read as a safety net; 0 renders the configuration once and exits (init-container mode).").Default("3m").DurationVar(&cfg.watchInterval)
	a.Flag("delay-interval", "Wait this long after the last change before reloading; 0 reloads the first change at once and coalesces a burst into one trailing reload.").Default("0s").DurationVar(&cfg.delayInterval)
	a.Flag("retry-interval", "First wait before retrying a failed reload; it doubles, with jitter, up to 2m.").Default("5s").DurationVar(&cfg.retryInterval)
	a.Flag("reload-timeout", "How long a reload request (or its confirmation) may take.").Default("30s").DurationVar(&cfg.reloadTimeout)
	a.Flag("reload-url", "URL called with POST to reload.").Default("http://127.0.0.1:9090/-/reload").URLVar(&cfg.reloadURL)
	a.Flag("reload-method", "How to reload: http (POST --reload-url), signal (--reload-signal to --pid-file's process or else to --process-executable-name, confirmed through --runtimeinfo-url) or command (run --reload-command).").Default("http").EnumVar(&cfg.method, "http", "signal", "command")
	a.Flag("process-executable-name", "Executable name of the process to signal with --reload-method=signal (needs a shared process namespace).").Default("prometheus").StringVar(&cfg.processName)
	a.Flag("pid-file", "File holding the PID of the process to signal, instead of --process-executable-name.").StringVar(&cfg.pidFile)
	a.Flag("reload-signal", "Signal sent with --reload-method=signal.").Default("HUP").StringVar(&cfg.signal)
	a.Flag("runtimeinfo-url", "Prometheus runtime information URL that confirms a reload by signal; empty sends the signal without confirmation (for other apps).").Default("http://127.0.0.1:9090/api/v1/status/runtimeinfo").StringVar(&cfg.runtimeInfoURL)
	a.Flag("reload-command", "Command run with --reload-method=command, split on spaces (no shell); it must exist in this container.").StringVar(&cfg.command)
	a.Flag("statefulset-ordinal-from-envvar", "Environment variable whose trailing digits give $(STATEFULSET_ORDINAL_NUMBER).").Default("POD_NAME").StringVar(&cfg.ordinalFrom)
	a.Flag("config-envsubst-strict", "Treat a reference to an undefined variable as an error and keep the previous output; with --no-config-envsubst-strict it is left verbatim and counted.").Default("true").BoolVar(&cfg.strict)
	a.Flag("config-max-size", "Largest configuration accepted, gunzipped: a larger one (a gzip bomb) is refused and the previous output kept.").Default("16MiB").BytesVar(&cfg.maxSize)
	a.Flag("listen-address", "Address serving /metrics, /healthz and /-/ready; empty disables it.").StringVar(&cfg.listen)
	a.Flag("web-config-file", "exporter-toolkit web configuration file enabling TLS or authentication.").StringVar(&cfg.webConfig)
	a.Flag("auto-gomemlimit-ratio", "Ratio of the container memory limit set as the Go memory limit.").Default("0.9").Float64Var(&cfg.memlimitRatio)
	a.Flag("log-format", "Log format: logfmt or json.").Default("logfmt").SetValue(cfg.log.Format)
	a.Flag("log-level", "Log level: debug, info, warn or error.").Default("info").SetValue(cfg.log.Level)
	if _, err := a.Parse(args); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", program, err)
		return 2
	}
	if cfg.maxSize <= 0 {
		fmt.Fprintf(stderr, "%s: --config-max-size must be positive\n", program)
		return 2
	}
	logger := promslog.New(&cfg.log)
	if _, err := app.SetMemoryLimit(cfg.memlimitRatio); err != nil {
		logger.Error(err.Error(), "ratio", cfg.memlimitRatio)
		return 2
	}

	trigger, err := newTrigger(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", program, err)
		return 2
	}
	app.TuneRuntime()
	// Drop the code pages that runtime and package initialisation touched:
	// they would set the process' peak RSS.
	_, _ = app.TrimCode()
	trimmer := app.NewTrimmer(logger, 2*time.Second)
	reg := app.NewRegistry(program)
	rel, err := reloader.New(logger.With("component", "reloader"), reg, reloader.Options{
		ConfigFile:    cfg.configFile,
		ConfigOutput:  cfg.output,
		MaxConfigSize: int64(cfg.maxSize),
		WatchedDirs:   cfg.watchedDirs,
		Expander:      envsubst.New(envsubst.Options{Strict: cfg.strict, OrdinalFromEnv: cfg.ordinalFrom}),
		Trigger:       trigger,
		DelayInterval: cfg.delayInterval,
		WatchInterval: cfg.watchInterval,
		RetryInterval: cfg.retryInterval,
		AfterApply:    trimmer.Worked,
		Retries:       -1,
	})
	if err != nil {
		logger.Error("invalid flags", "err", err)
		return 2
	}
	logger.Info("starting", "program", program, "version", version.Info())

	if cfg.watchInterval == 0 {
		if err := rel.Render(); err != nil {
			logger.Error("render config", "err", err)
			return 1
		}
		logger.Info("config rendered", "output", cfg.output)
		return 0
	}

	return app.Sidecar{
		Reloader: rel, Registry: reg, Trimmer: trimmer,
		Listen: cfg.listen, WebConfig: cfg.webConfig, MetricsPath: "",
	}.Run(ctx, logger)
}

// newTrigger returns the trigger --reload-method selects.
func newTrigger(cfg config) (reloader.Trigger, error) {
	switch cfg.method {
	case "signal":
		sig, err := reloader.ParseSignal(cfg.signal)
		if err != nil {
			return nil, fmt.Errorf("--reload-signal: %w", err)
		}
		t := &reloader.SignalTrigger{ProcessName: cfg.processName, PIDFile: cfg.pidFile, Signal: sig, Timeout: cfg.reloadTimeout}
		if cfg.runtimeInfoURL != "" {
			u, err := url.Parse(cfg.runtimeInfoURL)
			if err != nil {
				return nil, fmt.Errorf("--runtimeinfo-url: %w", err)
			}
			t.RuntimeInfoURL = u
		}
		return t, nil
	case "command":
		args := strings.Fields(cfg.command)
		if len(args) == 0 {
			return nil, errors.New("--reload-method=command needs --reload-command")
		}
		return &reloader.CommandTrigger{Args: args, Timeout: cfg.reloadTimeout}, nil
	default:
		return &reloader.HTTPTrigger{URL: cfg.reloadURL, Timeout: cfg.reloadTimeout}, nil
	}
}
