package handoff

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/internal/testenv/testlog"
)

// controllerProc is bin/controller running as a process of this machine.
type controllerProc struct {
	cmd *exec.Cmd
	// addr is its web address (metrics, readiness).
	addr string
	logs *testlog.Buffer
	// done is closed once it exited; exit and exitedAt say how and when.
	done     chan struct{}
	exit     error
	exitedAt time.Time
}

// startController runs bin/controller with kubeconfig, limited to the
// namespace ns, taking over the objects annotated with controllerID, and
// args, and returns once it is ready (its caches synced). It stops with
// the test (SIGTERM), if it has not exited before; its log goes to the
// test's log when the test fails.
func (e *env) startController(t testing.TB, kubeconfig, ns string, args ...string) *controllerProc {
	t.Helper()
	return e.startBinary(t, e.controllerBin, reloaderImage, kubeconfig, ns, args...)
}

// startBinary is startController with the controller binary bin, its
// config-reloader image image.
func (e *env) startBinary(t testing.TB, bin, image, kubeconfig, ns string, args ...string) *controllerProc {
	t.Helper()
	addr := freeAddress(t)
	flags := []string{
		"--kubeconfig=" + kubeconfig, "--namespace=" + ns, "--web.listen-address=" + addr,
		"--controller-id=" + controllerID, "--reloader-image=" + image,
		"--auto-gomemlimit-ratio=0",
	}
	cmd := exec.Command(bin, append(flags, args...)...)
	p := &controllerProc{cmd: cmd, addr: addr, logs: &testlog.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	require.NoError(t, cmd.Start())
	go func() {
		p.exit = cmd.Wait()
		p.exitedAt = time.Now()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-p.done
			}
		}
		if t.Failed() {
			t.Logf("controller %v (pid %d, exit: %v) log:\n%s", args, cmd.Process.Pid, p.exit, p.logs.String())
		}
	})
	ready := "http://" + addr + "/-/ready"
	eventually(t, "the controller ready", func() error {
		if p.exited() {
			t.Fatalf("the controller exited at its start: %v", p.exit)
		}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ready, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s %s", ready, resp.Status, b)
		}
		return nil
	})
	return p
}

// stop stops the process as a Deployment's rollout does (SIGTERM), and
// waits for its exit.
func (p *controllerProc) stop(t testing.TB) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the controller did not stop within 30 s of SIGTERM")
	}
}

// exited reports whether the process exited.
func (p *controllerProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill kills the process (SIGKILL: no cleanup of its own) and waits for
// it to be gone.
func (p *controllerProc) kill(t testing.TB) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	<-p.done
}

// freeAddress returns a loopback address with a port free a moment ago.
func freeAddress(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// kubeconfig writes a kubeconfig reaching the API server at server (its
// own address, or a proxy's) with the administrator's credentials, or
// the token when not empty, and returns its path.
func (e *env) kubeconfig(t testing.TB, server, token string) string {
	t.Helper()
	cfg := e.cp.Config
	if server == "" {
		server = cfg.Host
	}
	user := &clientcmdapi.AuthInfo{Token: token}
	if token == "" {
		user = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	}
	out := clientcmdapi.NewConfig()
	out.Clusters["cluster"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: cfg.CAData}
	out.AuthInfos["user"] = user
	out.Contexts["context"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "user"}
	out.CurrentContext = "context"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*out, path))
	return path
}

// adminToken creates the ServiceAccount name in ns, bound to the role
// cluster-admin, and returns a token of it: the audit log tells its
// writes from the others' by its user name,
// system:serviceaccount:<ns>:<name>.
func (e *env) adminToken(t testing.TB, ns, name string) string {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, e.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))
	require.NoError(t, e.c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
	}))
	kube, err := kubernetes.NewForConfig(e.cp.Config)
	require.NoError(t, err)
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	return tr.Status.Token
}

// proxy forwards TCP connections to the API server: a process given its
// address (kubeconfig) reaches the API server through it, with the
// latency it adds, or not at all once it is cut.
type proxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  []net.Conn
	closed bool
	delay  time.Duration
	// cut: nothing is forwarded any more, either way, and no
	// connection closed: the peers see an API server that stopped
	// answering, as behind a network partition.
	cut bool
}

// newProxy starts a proxy to the API server; it stops with the test.
func (e *env) newProxy(t testing.TB) *proxy {
	t.Helper()
	u, err := url.Parse(e.cp.Config.Host)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{ln: ln, target: u.Host}
	p.wg.Go(p.serve)
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		p.closed = true
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// URL is the proxy's address, for a kubeconfig.
func (p *proxy) URL() string { return "https://" + p.ln.Addr().String() }

// setDelay makes each chunk the clients send wait d before it is
// forwarded.
func (p *proxy) setDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// blackhole stops forwarding, for good: what either side sends is read
// and dropped, the connections stay open.
func (p *proxy) blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
}

// state returns the delay and whether the proxy is cut.
func (p *proxy) state() (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.delay, p.cut
}

// track keeps c, to close it when the test ends (at once if it ended).
func (p *proxy) track(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return
	}
	p.conns = append(p.conns, c)
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.track(c)
		p.wg.Go(func() { p.handle(c) })
	}
}

// handle forwards the connection c to the API server.
func (p *proxy) handle(c net.Conn) {
	if _, cut := p.state(); cut {
		p.pipe(nil, c, false)
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.track(up)
	p.wg.Go(func() { p.pipe(c, up, false) })
	p.pipe(up, c, true)
}

// pipe copies what src sends to dst (nil: nowhere), delayed when
// delayed, dropped once the proxy is cut, until src closes; it then
// closes both.
func (p *proxy) pipe(dst, src net.Conn, delayed bool) {
	defer func() {
		_ = src.Close()
		if dst != nil {
			_ = dst.Close()
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			delay, cut := p.state()
			if delayed && delay > 0 && !cut {
				// The latency injected: this copy is the only reader
				// of its connection, so the bytes behind wait too.
				time.Sleep(delay)
				_, cut = p.state()
			}
			if dst != nil && !cut {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}
