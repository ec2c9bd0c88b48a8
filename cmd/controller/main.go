// Command controller runs the podreload controller: it renders each
// PrometheusServer, with the ServiceMonitors, PodMonitors, Probes,
// ScrapeConfigs and PrometheusRules it selects, into a gzipped config Secret, rule file
// ConfigMaps, a headless Service and a StatefulSet, and keeps them current.
package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
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
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/deploy/crds"
	"github.com/podreload/podreload/internal/app"
	"github.com/podreload/podreload/internal/tune"
)

const (
	program = "controller"
	// upstreamCRDPrefix starts the file names of the monitoring.coreos.com
	// CRDs in deploy/crds.
	upstreamCRDPrefix = "monitoring.coreos.com_"
)

type config struct {
	kubeconfig                string
	namespaces                []string
	listen, webConfig         string
	leaderElection            bool
	leaderNamespace, leaderID string
	leaderTiming              kube.LeaderElectionTiming
	prometheusImage, reloader string
	controllerID              string
	resync                    time.Duration
	qps                       float32
	memlimitRatio             float64
	burst                     int
	log                       promslog.Config
}

func main() { os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) }

// run runs the command args name, logging to stderr, and returns the exit
// code: the controller (the default command) until ctx is done or a
// termination signal arrives, or crds, which prints the CRDs to stdout.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg := config{log: promslog.Config{Level: promslog.NewLevel(), Format: promslog.NewFormat(), Writer: stderr}}
	a := kingpin.New(program, "Renders PrometheusServers and the monitors and rules they select into the objects that run Prometheus.")
	a.Version(version.Print(program))
	a.HelpFlag.Short('h')
	runCmd := a.Command("run", "Run the controller (the default command: flags alone run it).").Default()
	cfg.register(runCmd)
	crdsCmd := a.Command("crds", "Print the CustomResourceDefinitions the controller needs, for: controller crds | kubectl apply --server-side -f -")
	upstream := crdsCmd.Flag("upstream", "Include the monitoring.coreos.com ones (ServiceMonitor, PodMonitor, Probe, PrometheusRule, ScrapeConfig, Prometheus); --no-upstream leaves them to prometheus-operator's installation.").Default("true").Bool()
	checkCmd := a.Command("takeover-check", "Tell, for each prometheus-operator Prometheus and Alertmanager object of the cluster (or of the YAML files given), whether the controller can take it over, the fields that keep it from it, and what rolls; exit status 1 when any would be refused.")
	checkKubeconfig := checkCmd.Flag("kubeconfig", "kubeconfig file; empty means $KUBECONFIG, the in-cluster config, then ~/.kube/config.").String()
	checkFiles := checkCmd.Arg("file", "YAML files holding Prometheus objects (others are skipped); none reads the cluster.").ExistingFiles()
	cmd, err := a.Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", program, err)
		return 2
	}
	if cmd == crdsCmd.FullCommand() {
		if err := writeCRDs(stdout, *upstream); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", program, err)
			return 1
		}
		return 0
	}
	if cmd == checkCmd.FullCommand() {
		return takeoverCheck(ctx, *checkKubeconfig, *checkFiles, stdout, stderr)
	}
	return runController(ctx, &cfg)
}

// register defines the flags of the run command.
func (cfg *config) register(cmd *kingpin.CmdClause) {
	cmd.Flag("kubeconfig", "kubeconfig file; empty means $KUBECONFIG, the in-cluster config, then ~/.kube/config.").StringVar(&cfg.kubeconfig)
	cmd.Flag("namespace", "Namespace to watch (repeatable); none means every namespace.").StringsVar(&cfg.namespaces)
	cmd.Flag("web.listen-address", "Address serving /metrics, /healthz and /-/ready.").Default(":8080").StringVar(&cfg.listen)
	cmd.Flag("web.config.file", "exporter-toolkit web configuration file enabling TLS or authentication.").StringVar(&cfg.webConfig)
	cmd.Flag("leader-election", "Write only while holding the leader Lease, so that several replicas can run.").BoolVar(&cfg.leaderElection)
	cmd.Flag("leader-election-namespace", "Namespace of the leader Lease; empty means the controller's own (in a cluster).").StringVar(&cfg.leaderNamespace)
	cmd.Flag("leader-election-id", "Name of the leader Lease.").Default(controller.Name).StringVar(&cfg.leaderID)
	cmd.Flag("leader-election-lease-duration", "How long a replica waits, after the last renewal of the Lease it saw, before it takes it.").Default("15s").DurationVar(&cfg.leaderTiming.LeaseDuration)
	cmd.Flag("leader-election-renew-deadline", "How long the leader tries to renew the Lease before it stops leading and exits; with the retry period, below the lease duration.").Default("10s").DurationVar(&cfg.leaderTiming.RenewDeadline)
	cmd.Flag("leader-election-retry-period", "Time between two attempts at the Lease.").Default("2s").DurationVar(&cfg.leaderTiming.RetryPeriod)
	cmd.Flag("controller-id", "Take over prometheus-operator's Prometheus and Alertmanager objects whose operator.prometheus.io/controller-id annotation is this value, exactly; empty takes over those without the annotation, as prometheus-operator's own --controller-id.").Default("podreload").StringVar(&cfg.controllerID)
	cmd.Flag("prometheus-image", "Prometheus image of the PrometheusServers that set none.").Default("quay.io/prometheus/prometheus:v3.15.0").StringVar(&cfg.prometheusImage)
	cmd.Flag("reloader-image", "config-reloader image of the PrometheusServers that set none.").Default("ghcr.io/podreload/podreload:" + cmp.Or(version.Version, "latest")).StringVar(&cfg.reloader)
	cmd.Flag("resync-interval", "How often every PrometheusServer is reconciled even when nothing changed.").Default("10h").DurationVar(&cfg.resync)
	cmd.Flag("kube-api-qps", "Requests per second to the API server.").Default("50").Float32Var(&cfg.qps)
	cmd.Flag("kube-api-burst", "Burst of requests to the API server.").Default("100").IntVar(&cfg.burst)
	cmd.Flag("auto-gomemlimit-ratio", "Ratio of the container's memory limit (else the system's memory) set as the Go memory limit; 0 sets none, above 1 counts as 1.").Default("0.9").Float64Var(&cfg.memlimitRatio)
	cmd.Flag("log.format", "Log format: logfmt or json.").Default("logfmt").SetValue(cfg.log.Format)
	cmd.Flag("log.level", "Log level: debug, info, warn or error.").Default("info").SetValue(cfg.log.Level)
}

// runController runs the controller with cfg until ctx is done or a
// termination signal arrives, and returns the exit code.
func runController(ctx context.Context, cfg *config) int {
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
		Config:                  restConfig,
		Namespaces:              cfg.namespaces,
		Prometheus:              promserver.WorkloadOptions{DefaultPrometheusImage: cfg.prometheusImage},
		ReloaderImage:           cfg.reloader,
		TakeOver:                &takeover.Options{ControllerID: cfg.controllerID},
		LeaderElection:          cfg.leaderElection,
		LeaderElectionNamespace: cfg.leaderNamespace,
		LeaderElectionID:        cfg.leaderID,
		LeaderElectionTiming:    cfg.leaderTiming,
		SyncPeriod:              cfg.resync,
	})
	if err != nil {
		logger.Error("start", "err", err)
		return 2
	}
	logger.Info("starting", "version", version.Info(), "namespaces", cfg.namespaces, "leader_election", cfg.leaderElection, "controller_id", cfg.controllerID)

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

// writeCRDs writes the CRDs of deploy/crds to w as one multi-document
// YAML stream, in file name order; without upstream, only podreload's own.
func writeCRDs(w io.Writer, upstream bool) error {
	files, err := fs.Glob(crds.FS, "*.yaml")
	if err != nil {
		return err
	}
	for _, name := range files {
		if !upstream && strings.HasPrefix(name, upstreamCRDPrefix) {
			continue
		}
		data, err := fs.ReadFile(crds.FS, name)
		if err != nil {
			return err
		}
		// controller-gen starts each file with a separator; a file without
		// one would merge with the one before.
		if !bytes.HasPrefix(data, []byte("---\n")) {
			data = append([]byte("---\n"), data...)
		}
		if _, err := w.Write(data); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

// restConfig loads the API server configuration from path, or from the
// usual places when path is empty.
func restConfig(path string) (*rest.Config, error) {
	if path != "" {
		return clientcmd.BuildConfigFromFlags("", path)
	}
	return ctrlconfig.GetConfig()
}
