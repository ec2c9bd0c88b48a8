// Package operator is for tests only: it runs prometheus-operator's
// operator at the pinned version (bin/prometheus-operator, `make
// bin/prometheus-operator`) as a process of this machine against an API
// server, with the token of the ServiceAccount and the RBAC its
// documentation installs (rbac/), so that it has exactly those
// permissions. e2e/node runs it on the real node, e2e/coexist against a
// bare control plane.
package operator

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/internal/testenv/testlog"
	"github.com/podreload/podreload/internal/testenv/toolbin"
	"github.com/podreload/podreload/internal/testenv/wait"
)

const (
	// ServiceAccount is the operator's ServiceAccount in rbac/, in
	// Namespace; the operator runs with its token.
	ServiceAccount = "prometheus-operator"
	// Namespace holds ServiceAccount and the ServiceAccount prometheus of
	// the operator's Prometheus pods.
	Namespace = "default"
	// FieldManager is the operator's field manager.
	FieldManager = "PrometheusOperator"
	// fieldOwner applies rbac/.
	fieldOwner = "podreload-testenv-operator"
)

// rbac holds the operator's RBAC as its documentation installs it, in the
// order of rbac/kustomization.yaml.
//
//go:embed rbac/*.yaml
var rbac embed.FS

// address finds in the operator's log the address its web server listens
// on.
var address = regexp.MustCompile(`msg="starting insecure server".* address=(\S+)`)

// Process is prometheus-operator's operator running as a process of this
// machine (Start).
type Process struct {
	// Kubeconfig is the path of the kubeconfig it runs with: its
	// ServiceAccount's token.
	Kubeconfig string
	// PID is its process id (its CPU time and memory are in /proc/PID).
	PID int
	// MetricsURL is the address of its /metrics.
	MetricsURL string
	stop       func()
	logs       *testlog.Buffer
}

// Stop stops the operator (SIGTERM, then SIGKILL after 30 s) and waits for
// it to exit. It may be called more than once.
func (p *Process) Stop() { p.stop() }

// Logs returns what the operator logged so far.
func (p *Process) Logs() string { return p.logs.String() }

// Install applies (server-side, so it may run again) the operator's RBAC
// of rbac/ through the administrator's kubeconfig, and waits for the API
// server to serve the monitoring.coreos.com CRDs, which the caller
// installed (the operator checks them once, at its start).
func Install(t testing.TB, kubeconfig string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	c, err := client.New(cfg, client.Options{})
	require.NoError(t, err)
	for _, obj := range objects(t) {
		eventually(t, time.Minute, "apply "+obj.GetKind()+" "+obj.GetName(), func() error {
			return c.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(obj.DeepCopy()),
				client.FieldOwner(fieldOwner), client.ForceOwnership)
		})
	}
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	want := map[string][]string{
		"monitoring.coreos.com/v1":       {"prometheuses", "servicemonitors", "podmonitors", "probes", "prometheusrules"},
		"monitoring.coreos.com/v1alpha1": {"scrapeconfigs"},
	}
	eventually(t, time.Minute, "the monitoring.coreos.com CRDs served", func() error {
		for gv, resources := range want {
			list, err := kube.Discovery().ServerResourcesForGroupVersion(gv)
			if err != nil {
				return err
			}
			for _, r := range resources {
				if !slices.ContainsFunc(list.APIResources, func(a metav1.APIResource) bool { return a.Name == r }) {
					return fmt.Errorf("%s/%s not served", gv, r)
				}
			}
		}
		return nil
	})
}

// objects returns the objects of rbac/, in the order of its kustomization.
func objects(t testing.TB) []*unstructured.Unstructured {
	t.Helper()
	b, err := rbac.ReadFile("rbac/kustomization.yaml")
	require.NoError(t, err)
	var kust struct {
		Resources []string `json:"resources"`
	}
	require.NoError(t, utilyaml.Unmarshal(b, &kust))
	require.NotEmpty(t, kust.Resources)
	var out []*unstructured.Unstructured
	for _, file := range kust.Resources {
		b, err := rbac.ReadFile(path.Join("rbac", file))
		require.NoError(t, err)
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			obj := &unstructured.Unstructured{}
			err := dec.Decode(&obj.Object)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, file)
			if len(obj.Object) > 0 {
				out = append(out, obj)
			}
		}
	}
	return out
}

// Start installs the operator's RBAC (Install) through the administrator's
// kubeconfig and runs bin/prometheus-operator as a process of this machine
// with a kubeconfig holding a token of its ServiceAccount, and returns
// once its Prometheus controller is ready. id is its --controller-id:
// empty, its default, reconciles the Prometheus objects without the
// operator.prometheus.io/controller-id annotation or with an empty value.
// args are more flags of the operator's; it logs at the debug level unless
// they set --log-level. The operator stops with the test, or earlier with
// Stop; its log goes to the test's log when the test fails.
func Start(t testing.TB, kubeconfig, id string, args ...string) *Process {
	t.Helper()
	Install(t, kubeconfig)
	bin, err := toolbin.Path("prometheus-operator")
	require.NoError(t, err, "`make bin/prometheus-operator` builds it")
	own := filepath.Join(t.TempDir(), "kubeconfig")
	writeServiceAccountKubeconfig(t, kubeconfig, Namespace, ServiceAccount, own)

	// The operator has no --kubeconfig flag: it reads KUBECONFIG. Its
	// HTTP server (metrics, health) on a free port of the loopback, which
	// it logs (address).
	flags := []string{"--web.listen-address=127.0.0.1:0"}
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--log-level=") }) {
		flags = append(flags, "--log-level=debug")
	}
	if id != "" {
		flags = append(flags, "--controller-id="+id)
	}
	cmd := exec.Command(bin, append(flags, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+own)
	logs := &testlog.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var (
		once sync.Once
		exit error
	)
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case exit = <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				exit = <-done
			}
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("prometheus-operator (--controller-id=%q, exit: %v) log:\n%s", id, exit, logs.String())
		}
	})
	// Ready: its Prometheus controller has synced its caches. It exits
	// at once on a bad flag or kubeconfig, or with no permission for any
	// controller.
	var metrics string
	eventually(t, time.Minute, "prometheus-operator ready", func() error {
		select {
		case err := <-done:
			done <- err // For stop.
			t.Fatalf("prometheus-operator exited at its start: %v (its log follows)", err)
		default:
		}
		m := address.FindStringSubmatch(logs.String())
		if m == nil {
			return errors.New("its web server has not started")
		}
		metrics = "http://" + m[1] + "/metrics"
		return ready(t.Context(), metrics)
	})
	return &Process{Kubeconfig: own, PID: cmd.Process.Pid, MetricsURL: metrics, stop: stop, logs: logs}
}

// ready returns nil once the operator's metrics at url say its Prometheus
// controller is ready.
func ready(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if !strings.Contains(string(b), `prometheus_operator_ready{controller="prometheus"} 1`) {
		return errors.New(`no prometheus_operator_ready{controller="prometheus"} 1 in its metrics`)
	}
	return nil
}

// writeServiceAccountKubeconfig writes to path a kubeconfig reaching the
// API server of the administrator's kubeconfig as the ServiceAccount
// namespace/name, with a token the TokenRequest API issues for an hour.
func writeServiceAccountKubeconfig(t testing.TB, kubeconfig, namespace, name, path string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	tr, err := kube.CoreV1().ServiceAccounts(namespace).CreateToken(t.Context(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}},
		metav1.CreateOptions{})
	require.NoError(t, err, "token of ServiceAccount %s/%s", namespace, name)
	admin, err := clientcmd.LoadFromFile(kubeconfig)
	require.NoError(t, err)
	current, ok := admin.Contexts[admin.CurrentContext]
	require.True(t, ok, "%s: no current context", kubeconfig)
	cluster, ok := admin.Clusters[current.Cluster]
	require.True(t, ok, "%s: no cluster %s", kubeconfig, current.Cluster)
	out := clientcmdapi.NewConfig()
	out.Clusters["cluster"] = cluster
	out.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	out.Contexts[name] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: name, Namespace: namespace}
	out.CurrentContext = name
	require.NoError(t, clientcmd.WriteToFile(*out, path))
}

// eventually calls cond until it returns nil, and fails the test with
// what and cond's last error after timeout.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	wait.Until(t, timeout, 200*time.Millisecond, what, cond)
}
