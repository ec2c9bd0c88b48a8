// Package controlplane is for tests only: it starts a real kube-apiserver
// and etcd (built into bin/ by `make controlplane`) through
// controller-runtime's envtest.
package controlplane

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// ControlPlane is a running kube-apiserver and etcd.
type ControlPlane struct {
	env *envtest.Environment
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Kubeconfig is a kubeconfig file for Config.
	Kubeconfig string
}

// Start starts a control plane that stops when the test ends, with the
// CRDs of the directories crdDirs installed. The API server keeps its
// certificates across RestartAPIServer.
func Start(t testing.TB, crdDirs ...string) *ControlPlane {
	t.Helper()
	return StartWithFlags(t, nil, crdDirs...)
}

// StartWithFlags is Start with more kube-apiserver flags, name to value.
func StartWithFlags(t testing.TB, flags map[string]string, crdDirs ...string) *ControlPlane {
	t.Helper()
	// envtest logs through controller-runtime's global logger; unset, it
	// prints a warning with a stack trace 30 s into the process (the first
	// thing `make demo` showed). Its errors go to stderr, the rest is noise.
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	bin, err := toolbin.Path("kube-apiserver")
	require.NoError(t, err)
	env := &envtest.Environment{
		BinaryAssetsDirectory: filepath.Dir(bin),
		CRDDirectoryPaths:     crdDirs,
		ErrorIfCRDPathMissing: true,
		// envtest's default, 20 s per component, is too short on 2 cores
		// shared with other API servers and builds (load average 10):
		// every start timed out, where a test waits on its own deadlines.
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	env.ControlPlane.GetAPIServer().CertDir = t.TempDir()
	for name, value := range flags {
		env.ControlPlane.GetAPIServer().Configure().Set(name, value)
	}
	cfg, err := env.Start()
	if err != nil {
		// It may have started them and failed after (installing the CRDs).
		_ = env.Stop()
	}
	require.NoError(t, err, "start kube-apiserver and etcd")
	t.Cleanup(func() { require.NoError(t, env.Stop()) })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, env.KubeConfig, 0o600))
	return &ControlPlane{env: env, Config: cfg, Kubeconfig: kubeconfig}
}

// RestartAPIServer kills the API server, as a crash would (a graceful stop
// waits for the clients' watches to end), and starts it again on the same
// address with the same certificates; etcd keeps running.
func (cp *ControlPlane) RestartAPIServer(t testing.TB) {
	t.Helper()
	cp.KillAPIServer(t)
	cp.StartAPIServer(t)
}

// StartAPIServer starts the API server KillAPIServer killed, on the same
// address with the same certificates.
func (cp *ControlPlane) StartAPIServer(t testing.TB) {
	t.Helper()
	require.NoError(t, cp.env.ControlPlane.GetAPIServer().Start())
}

// KillAPIServer kills the API server, as a crash would; etcd keeps
// running.
func (cp *ControlPlane) KillAPIServer(t testing.TB) {
	t.Helper()
	apiserver := cp.env.ControlPlane.GetAPIServer()
	port := apiserver.Port
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	require.NoError(t, err)
	killed := false
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if filepath.Base(args[0]) == "kube-apiserver" && slices.Contains(args, "--secure-port="+port) {
			pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			require.NoError(t, err)
			require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
			killed = true
			break
		}
	}
	require.True(t, killed, "no kube-apiserver serving on port %s", port)
	require.NoError(t, apiserver.Stop())
}

// ServiceAccount creates the namespace ns (if missing) and in it the
// service account name, bound to a Role of rules, and returns files holding
// a token for it and the API server's CA, as a pod would have them.
func (cp *ControlPlane) ServiceAccount(t testing.TB, ns, name string, rules []rbacv1.PolicyRule) (tokenFile, caFile string) {
	t.Helper()
	kube, err := kubernetes.NewForConfig(cp.Config)
	require.NoError(t, err)
	ctx := t.Context()
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	_, err = kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	tok, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	dir := t.TempDir()
	tokenFile, caFile = filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(tokenFile, []byte(tok.Status.Token), 0o600))
	require.NoError(t, os.WriteFile(caFile, cp.Config.CAData, 0o600))
	return tokenFile, caFile
}
