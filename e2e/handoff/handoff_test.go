package handoff

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podreload/podreload/api/v1alpha1"

	"github.com/go-logr/logr"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/toolbin"
	"github.com/podreload/podreload/internal/testenv/wait"
)

const (
	// controllerID is the id the controller takes over.
	controllerID = "podreload"
	// reloaderRepository is the repository of the controller's
	// config-reloader images: what tells its pod template from
	// prometheus-operator's. reloaderImage is the one the tests run.
	reloaderRepository = "ghcr.io/podreload/podreload"
	reloaderImage      = reloaderRepository + ":handoff"
	// testAgent is the user agent of the test's own writes.
	testAgent = "handoff-test"
	// timeout bounds every wait for a controller.
	timeout = 2 * time.Minute
	// slow is the latency the proxy of a process adds to each of its
	// requests while a roll is to be interrupted: a roll of some ten
	// writes then takes seconds, and the kill lands in its middle.
	slow = 500 * time.Millisecond
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent(),
		// client-go's and klog's background goroutines outlive the clients.
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"))
}

// auditPolicy records every write once answered: those of StatefulSets
// with the object answered (its resourceVersion and spec), the others
// without their bodies.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
  - level: RequestResponse
    verbs: ["create", "update", "patch"]
    resources: [{group: apps, resources: [statefulsets]}]
  - level: Metadata
    verbs: ["create", "update", "patch", "delete", "deletecollection"]
  - level: None
`

// env is what the subtests share: one control plane, its audit log, the
// controller's binary.
type env struct {
	cp *controlplane.ControlPlane
	// c is the test's client (user agent testAgent).
	c client.Client
	// auditLog is the API server's audit log file.
	auditLog string
	// controllerBin is bin/controller.
	controllerBin string
}

// figure records a duration a fault scenario measured: the test logs
// it, the benchmark reports it.
type figure func(what string, d time.Duration)

// scenario is a fault and what it checks, in a namespace of its own.
type scenario struct {
	name string
	run  func(testing.TB, *env, figure)
}

// scenarios are the faults of issue 41 (items 3 and 4).
func scenarios() []scenario {
	return []scenario{
		{"controller killed", controllerKilled(prometheusKind())},
		{"controller killed, an Alertmanager", controllerKilled(alertmanagerKind())},
		{"operator killed", operatorKilled(prometheusKind())},
		{"operator killed, an Alertmanager", operatorKilled(alertmanagerKind())},
		{"controller killed, a PrometheusAgent", controllerKilled(agentKind())},
		{"operator killed, a PrometheusAgent", operatorKilled(agentKind())},
		{"annotation flipped", testFlips},
		{"controller down", testControllerDown},
		{"deleted during the roll", testDeletedDuringRoll},
		{"leader partitioned", testLeaderPartitioned},
		{"upgraded from the previous release", testUpgrade},
	}
}

// TestHandoff runs the faults of issue 41 (items 3 and 4), each in a
// namespace of its own, on one control plane, at once: each runs its own
// prometheus-operator (--namespaces) and controllers (--namespace).
func TestHandoff(t *testing.T) {
	e := startEnv(t)
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			sc.run(t, e, func(what string, d time.Duration) { t.Logf("%s: %s", what, d) })
		})
	}
}

// startEnv starts the control plane, with its audit log.
func startEnv(t testing.TB) *env {
	t.Helper()
	bin, err := toolbin.Path("controller")
	require.NoError(t, err, "build it with `go build -o bin/controller ./cmd/controller` (or `make build`)")
	dir := t.TempDir()
	policy, auditLog := filepath.Join(dir, "audit-policy.yaml"), filepath.Join(dir, "audit.log")
	require.NoError(t, os.WriteFile(policy, []byte(auditPolicy), 0o600))
	cp := controlplane.StartWithFlags(t, map[string]string{
		"audit-policy-file": policy, "audit-log-path": auditLog, "audit-log-format": "json",
	}, filepath.Join("..", "..", "deploy", "crds"))
	return &env{cp: cp, c: newClient(t, cp.Config), auditLog: auditLog, controllerBin: bin}
}

// newClient returns a client of cfg with the test's user agent.
func newClient(t testing.TB, cfg *rest.Config) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, monitoringv1.AddToScheme(scheme))
	require.NoError(t, monitoringv1alpha1.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = testAgent
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return c
}

// namespace creates the namespace name.
func (e *env) namespace(t testing.TB, name string) string {
	t.Helper()
	require.NoError(t, e.c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	return name
}

// eventually calls cond until it returns nil, and fails the test with
// what and cond's last error after timeout.
func eventually(t testing.TB, what string, cond func() error) {
	t.Helper()
	wait.Until(t, timeout, 50*time.Millisecond, what, cond)
}
