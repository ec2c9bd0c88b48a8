// Command rules-reloader is a sidecar that watches ConfigMap and Secret
// volume directories and calls reload webhooks, signals a process or runs a
// command when their content changes. It accepts configmap-reload's flags and
// serves its metric names.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/version"

	"github.com/podreload/podreload/internal/app"
	"github.com/podreload/podreload/internal/tune"
	"github.com/podreload/podreload/reloader"
)

const program = "rules-reloader"

type config struct {
	volumeDirs, webhooks                  []string
	method                                string
	status, retries                       int
	listen, metricsPath, webConfig        string
	passwordFile, tokenFile               string
	caFile, certFile, keyFile             string
	processName, pidFile, signal, command string
	delayInterval, watchInterval          time.Duration
	retryInterval, reloadTimeout          time.Duration
	log                                   promslog.Config
}

func main() {
	tune.ExecWithOneP()
	os.Exit(run(context.Background(), os.Args[1:], os.Stderr))
}

// run runs until ctx is done or a termination signal arrives, logging to
// stderr, and returns the exit code.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	cfg := config{log: promslog.Config{Level: promslog.NewLevel(), Format: promslog.NewFormat(), Writer: stderr}}
	a := newApp(&cfg)
	// Help and version end the program, but not the tests that call run.
	exit := -1
	a.UsageWriter(stderr).Terminate(func(code int) { exit = code })
	args, err := goStyleArgs(a.Model().Flags, args)
	if err == nil {
		_, err = a.Parse(args)
	}
	if exit >= 0 {
		return exit
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", program, err)
		return 2
	}
	logger := promslog.New(&cfg.log)
	sc := app.NewSidecar(logger, program)
	reg := sc.Registry
	trigger, err := triggers(cfg, reg)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", program, err)
		return 2
	}
	retries := cfg.retries
	if retries < 0 {
		retries = 0
	}
	rel, err := reloader.New(logger.With("component", "reloader"), reg, reloader.Options{
		WatchedDirs:   cfg.volumeDirs,
		Trigger:       trigger,
		DelayInterval: cfg.delayInterval,
		WatchInterval: cfg.watchInterval,
		RetryInterval: cfg.retryInterval,
		AfterApply:    sc.Trimmer.Worked,
		Retries:       retries,
	})
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", program, err)
		return 2
	}
	promauto.With(reg).NewCounterFunc(prometheus.CounterOpts{
		Name: "configmap_reload_watcher_errors_total",
		Help: "Total filesystem watcher errors.",
	}, func() float64 { return float64(rel.WatchErrors()) })
	logger.Info("starting", "program", program, "version", version.Info(), "trigger", trigger.String())

	sc.Add(rel.Run)
	sc.Serve(cfg.listen, cfg.webConfig, cfg.metricsPath, app.Readiness(rel.Ready, rel.Degraded))
	return sc.Run(ctx)
}

// newApp defines the flags, configmap-reload's spellings and defaults,
// bound to cfg.
func newApp(cfg *config) *kingpin.Application {
	a := kingpin.New(program, "Calls reload webhooks, signals a process or runs a command when watched volume directories change. "+
		"Flags also take the spellings of Go's flag package, as configmap-reload's do: -volume-dir=DIR, -webhook-url URL.")
	a.Version(version.Print(program))
	a.HelpFlag.Short('h')
	a.Flag("volume-dir", "Volume directory to watch (repeatable). A missing one is waited for.").Required().StringsVar(&cfg.volumeDirs)
	a.Flag("webhook-url", "URL to call on a change (repeatable: every URL is called). User info in the URL is sent as basic auth.").StringsVar(&cfg.webhooks)
	a.Flag("webhook-method", "HTTP method of the webhook call.").Default("POST").StringVar(&cfg.method)
	a.Flag("webhook-status-code", "Status code that means the reload worked.").Default("200").SetValue(goInt{"webhook-status-code", &cfg.status})
	a.Flag("webhook-retries", "Retries of a failed reload, with backoff, before waiting for the next change or --watch-interval.").Default("1").SetValue(goInt{"webhook-retries", &cfg.retries})
	a.Flag("webhook-password-file", "File holding the basic auth password; the user name comes from the URL.").StringVar(&cfg.passwordFile)
	a.Flag("webhook-bearer-token-file", "File holding a bearer token, read again on every call.").StringVar(&cfg.tokenFile)
	a.Flag("webhook-ca-file", "CA certificate file verifying the webhook's TLS certificate.").StringVar(&cfg.caFile)
	a.Flag("webhook-cert-file", "Client certificate file for the webhook.").StringVar(&cfg.certFile)
	a.Flag("webhook-key-file", "Client key file for the webhook.").StringVar(&cfg.keyFile)
	a.Flag("process-executable-name", "Signal the process with this executable name on a change (needs a shared process namespace).").StringVar(&cfg.processName)
	a.Flag("pid-file", "Signal the process whose PID this file holds on a change.").StringVar(&cfg.pidFile)
	a.Flag("reload-signal", "Signal sent to the process.").Default("HUP").StringVar(&cfg.signal)
	a.Flag("reload-command", "Command run on a change, split on spaces (no shell); it must exist in this container.").StringVar(&cfg.command)
	a.Flag("delay-interval", "Wait this long after the last change; 0 reloads the first change at once and coalesces a burst.").Default("0s").DurationVar(&cfg.delayInterval)
	a.Flag("watch-interval", "How often everything is re-read as a safety net.").Default("3m").DurationVar(&cfg.watchInterval)
	a.Flag("retry-interval", "First wait before retrying a failed reload; it doubles, with jitter, up to 2m.").Default("1s").DurationVar(&cfg.retryInterval)
	a.Flag("reload-timeout", "How long a webhook call or the command may take.").Default("30s").DurationVar(&cfg.reloadTimeout)
	a.Flag("web.listen-address", "Address serving metrics, /healthz and /-/ready; empty disables it.").Default(":9533").StringVar(&cfg.listen)
	a.Flag("web.telemetry-path", "Path of the metrics.").Default("/metrics").StringVar(&cfg.metricsPath)
	a.Flag("web.config.file", "exporter-toolkit web configuration file enabling TLS or authentication.").StringVar(&cfg.webConfig)
	a.Flag("log.format", "Log format: logfmt or json.").Default("logfmt").SetValue(cfg.log.Format)
	a.Flag("log.level", "Log level: debug, info, warn or error.").Default("info").SetValue(cfg.log.Level)
	return a
}

// triggers builds one trigger per webhook, the signal and the command.
func triggers(cfg config, reg prometheus.Registerer) (reloader.Triggers, error) {
	var ts reloader.Triggers
	m := newWebhookMetrics(reg)
	for _, raw := range cfg.webhooks {
		u, err := app.ParseURL("webhook-url", raw)
		if err != nil {
			return nil, err
		}
		client, err := webhookClient(cfg, u)
		if err != nil {
			return nil, err
		}
		t := &reloader.HTTPTrigger{URL: u, Method: cfg.method, Status: cfg.status, Timeout: cfg.reloadTimeout, Client: client}
		t.Observe = m.observe(t.String())
		ts = append(ts, t)
	}
	if cfg.processName != "" || cfg.pidFile != "" {
		sig, err := reloader.ParseSignal(cfg.signal)
		if err != nil {
			return nil, fmt.Errorf("--reload-signal: %w", err)
		}
		ts = append(ts, &reloader.SignalTrigger{ProcessName: cfg.processName, PIDFile: cfg.pidFile, Signal: sig})
	}
	if args := strings.Fields(cfg.command); len(args) > 0 {
		ts = append(ts, &reloader.CommandTrigger{Args: args, Timeout: cfg.reloadTimeout})
	}
	if len(ts) == 0 {
		return nil, errors.New("nothing to reload: give --webhook-url, --process-executable-name, --pid-file or --reload-command")
	}
	return ts, nil
}

// webhookClient returns a client with the webhook's credentials and TLS
// settings; files are read again on every call, so rotated ones work.
func webhookClient(cfg config, u *url.URL) (*http.Client, error) {
	hc := commoncfg.HTTPClientConfig{
		TLSConfig: commoncfg.TLSConfig{CAFile: cfg.caFile, CertFile: cfg.certFile, KeyFile: cfg.keyFile},
	}
	if cfg.passwordFile != "" {
		if u.User == nil {
			return nil, fmt.Errorf("--webhook-password-file needs a user name in --webhook-url %s", reloader.RedactURL(u))
		}
		hc.BasicAuth = &commoncfg.BasicAuth{Username: u.User.Username(), PasswordFile: cfg.passwordFile}
	}
	if cfg.tokenFile != "" {
		hc.Authorization = &commoncfg.Authorization{Type: "Bearer", CredentialsFile: cfg.tokenFile}
	}
	if err := hc.Validate(); err != nil {
		return nil, fmt.Errorf("webhook %s: %w", reloader.RedactURL(u), err)
	}
	client, err := commoncfg.NewClientFromConfig(hc, program, commoncfg.WithKeepAlivesDisabled())
	if err != nil {
		return nil, fmt.Errorf("webhook %s: %w", reloader.RedactURL(u), err)
	}
	if cfg.passwordFile != "" {
		u.User = nil // The password comes from the file.
	}
	return client, nil
}
