// Command controller runs the podreload controller: it renders each
// PrometheusServer, with the ServiceMonitors, PodMonitors and
// PrometheusRules it selects, into a gzipped config Secret, rule file
// ConfigMaps, a headless Service and a StatefulSet, and keeps them current.
package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-logr/logr"
	oklog "github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/version"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/podreload/podreload/controller"
	"github.com/podreload/podreload/internal/app"
	"github.com/podreload/podreload/internal/tune"
)

const program = "controller"

type config struct {
	kubeconfig                string
	namespaces                []string
	listen, webConfig         string
	leaderElection            bool
	leaderNamespace, leaderID string
	prometheusImage, reloader string
	resync                    time.Duration
	qps                       float32
	memlimitRatio             float64
	burst                     int
	log                       promslog.Config
}

func main() { os.Exit(run(context.Background(), os.Args[1:], os.Stderr)) }

// run runs until ctx is done or a termination signal arrives, logging to
// stderr, and returns the exit code.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	cfg := config{log: promslog.Config{Level: promslog.NewLevel(), Format: promslog.NewFormat(), Writer: stderr}}
	a := kingpin.New(program, "Renders PrometheusServers and the monitors and rules they select into the objects that run Prometheus.")
	a.Version(version.Print(program))
	a.HelpFlag.Short('h')
	a.Flag("kubeconfig", "kubeconfig file; empty means $KUBECONFIG, the in-cluster config, then ~/.kube/config.").StringVar(&cfg.kubeconfig)
	a.Flag("namespace", "Namespace to watch (repeatable); none means every namespace.").StringsVar(&cfg.namespaces)
	a.Flag("web.listen-address", "Address serving /metrics, /healthz and /-/ready.").Default(":8080").StringVar(&cfg.listen)
	a.Flag("web.config.file", "exporter-toolkit web configuration file enabling TLS or authentication.").StringVar(&cfg.webConfig)
	a.Flag("leader-election", "Write only while holding the leader Lease, so that several replicas can run.").BoolVar(&cfg.leaderElection)
	a.Flag("leader-election-namespace", "Namespace of the leader Lease; empty means the controller's own (in a cluster).").StringVar(&cfg.leaderNamespace)
	a.Flag("leader-election-id", "Name of the leader Lease.").Default(controller.Name).StringVar(&cfg.leaderID)
	a.Flag("prometheus-image", "Prometheus image of the PrometheusServers that set none.").Default("quay.io/prometheus/prometheus:v3.15.0").StringVar(&cfg.prometheusImage)
	a.Flag("reloader-image", "config-reloader image of the PrometheusServers that set none.").Default("ghcr.io/podreload/podreload:" + cmp.Or(version.Version, "latest")).StringVar(&cfg.reloader)
	a.Flag("resync-interval", "How often every PrometheusServer is reconciled even when nothing changed.").Default("10h").DurationVar(&cfg.resync)
	a.Flag("kube-api-qps", "Requests per second to the API server.").Default("50").Float32Var(&cfg.qps)
	a.Flag("kube-api-burst", "Burst of requests to the API server.").Default("100").IntVar(&cfg.burst)
	a.Flag("auto-gomemlimit-ratio", "Ratio of the container's memory limit (else the system's memory) set as the Go memory limit; 0 sets none, above 1 counts as 1.").Default("0.9").Float64Var(&cfg.memlimitRatio)
	a.Flag("log.format", "Log format: logfmt or json.").Default("logfmt").SetValue(cfg.log.Format)
	a.Flag("log.level", "Log level: debug, info, warn or error.").Default("info").SetValue(cfg.log.Level)
	if _, err := a.Parse(args); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", program, err)
		return 2
	}
	logger := promslog.New(&cfg.log)
	tune.SetMemoryLimit(logger, cfg.memlimitRatio)
	// controller-runtime and client-go log through their own package-level
	// loggers; send them to ours.
	ctrllog.SetLogger(logr.FromSlogHandler(logger.Handler()))
	klog.SetSlogLogger(logger)

	restConfig, err := restConfig(cfg.kubeconfig)
	if err != nil {
		logger.Error("load kubeconfig", "err", err)
		return 2
	}
	restConfig.QPS, restConfig.Burst = cfg.qps, cfg.burst
	restConfig.UserAgent = controller.Name + "/" + version.Version

	// controller-runtime's registry already has the Go and process
	// collectors.
	reg := prometheus.NewRegistry()
	reg.MustRegister(versioncollector.NewCollector(program))
	c, err := controller.New(logger.With("component", "controller"), reg, controller.Options{
		Config:     restConfig,
		Namespaces: cfg.namespaces,
		Workload: controller.WorkloadOptions{
			DefaultPrometheusImage: cfg.prometheusImage,
			DefaultReloaderImage:   cfg.reloader,
		},
		LeaderElection:          cfg.leaderElection,
		LeaderElectionNamespace: cfg.leaderNamespace,
		LeaderElectionID:        cfg.leaderID,
		SyncPeriod:              cfg.resync,
	})
	if err != nil {
		logger.Error("start", "err", err)
		return 2
	}
	logger.Info("starting", "version", version.Info(), "namespaces", cfg.namespaces, "leader_election", cfg.leaderElection)

	var g oklog.Group
	{ // Controller.
		ctx, cancel := context.WithCancel(ctx)
		g.Add(func() error { return c.Run(ctx) }, func(error) { cancel() })
	}
	{ // Web server: our metrics and controller-runtime's.
		srv := app.NewServer(logger.With("component", "web"), prometheus.Gatherers{reg, ctrlmetrics.Registry}, cfg.listen, cfg.webConfig, "", c.Ready)
		g.Add(srv.Run, func(error) { srv.Close() })
	}
	return app.Run(ctx, logger, &g)
}

// restConfig loads the API server configuration from path, or from the
// usual places when path is empty.
func restConfig(path string) (*rest.Config, error) {
	if path != "" {
		return clientcmd.BuildConfigFromFlags("", path)
	}
	return ctrlconfig.GetConfig()
}
