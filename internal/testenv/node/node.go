// Package node starts, for tests, a real single-machine Kubernetes node:
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler, containerd
// v2 with runc and the CNI bridge, kube-proxy (iptables), a kubelet and
// CoreDNS as the cluster DNS (cluster.local, at the Service
// kube-system/kube-dns, 10.96.0.10), with the images of `make images`
// imported. Kubernetes, containerd and CoreDNS are built into bin/ by `make
// node-bins`, which installs runc, the CNI plugins and iptables from Debian.
//
// Every component runs in a network namespace of its own (the node's
// "host" network), joined to the machine by a veth pair: the API server is
// reached at https://10.89.0.2:6443, pods are on a bridge 10.88.0.0/24
// inside, and the iptables rules of the kubelet and kube-proxy never touch
// the machine's. What is global (the sysctls the kubelet sets, the kubepods
// cgroups, mounts, a few host paths) is put back by Stop, and by the next
// Up or `make node-down` after a crash. One node runs at a time on a
// machine: Up waits for a lock.
//
// It needs root.
package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/internal/testenv/testlog"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

const (
	// Name is the node's name.
	Name = "podreload-node"
	// PauseImage is the sandbox image, built by `make images`.
	PauseImage = "podreload.dev/pause:1"
	// netnsName is the node's network namespace (/run/netns/<name>).
	netnsName = "podreload-node"
	// HostIP is the address of the machine's end of the veth pair: pods
	// reach a server of this machine (a test's) listening there, from the
	// node's address (the CNI bridge masquerades them).
	HostIP = "10.89.0.1"
	// hostVeth is the machine's end of the veth pair, nodeVeth the node's.
	hostVeth, nodeVeth = "prnode0", "eth0"
	nodeIP             = "10.89.0.2"
	// podSubnet is the CNI bridge's, serviceSubnet the Services'.
	podSubnet, serviceSubnet = "10.88.0.0/24", "10.96.0.0/24"
	// serviceIP is the kubernetes Service's, in serviceSubnet.
	serviceIP = "10.96.0.1"
	// DefaultDir holds a node's state unless Options.Dir says otherwise.
	DefaultDir = "/var/lib/podreload-node"
	// lockPath serialises the nodes of a machine.
	lockPath = "/run/podreload-node.lock"
	// startTimeout bounds each step of Up (the whole of Up takes about 15 s).
	startTimeout = 2 * time.Minute
)

// Options configure a node.
type Options struct {
	// Dir holds the node's state, logs and volumes; empty means DefaultDir.
	// It is emptied by Up and removed by Stop.
	Dir string
	// SyncFrequency is the kubelet's syncFrequency, the period of its
	// resync of every pod and so of the projection of Secrets and
	// ConfigMaps into volumes; zero keeps the kubelet's default (1m).
	SyncFrequency time.Duration
	// Images are the OCI archives imported into containerd; empty means
	// the images of `make host-images` for this machine's architecture.
	Images []string
	// ExtraImages are imported besides Images (the previous release's
	// image, say, for an upgrade).
	ExtraImages []string
}

// Node is a running node.
type Node struct {
	// Kubeconfig is the path of a kubeconfig file of an administrator.
	Kubeconfig string
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Dir is the node's state directory.
	Dir string

	logger     *slog.Logger
	bin        string
	lock       *os.File
	components []*component
	client     kubernetes.Interface
}

// Up starts a node and returns when it is Ready with its images imported.
// On error everything it started is stopped. A nil logger means discard.
func Up(ctx context.Context, logger *slog.Logger, opts Options) (_ *Node, err error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("a node needs root")
	}
	kubelet, err := toolbin.Path("kubelet")
	if err != nil {
		return nil, fmt.Errorf("%w; `make node-bins` builds the node's binaries", err)
	}
	n := &Node{Dir: opts.Dir, logger: logger, bin: filepath.Dir(kubelet)}
	if n.Dir == "" {
		n.Dir = DefaultDir
	}
	if n.lock, err = lock(ctx); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.Stop())
		}
	}()
	// A node that crashed left its processes, mounts and sysctls.
	if err := sweep(n.Dir, logger); err != nil {
		return nil, fmt.Errorf("clean up a previous node: %w", err)
	}
	for _, d := range []string{"pki", "logs", "etc/cni", "volumes"} {
		if err := os.MkdirAll(filepath.Join(n.Dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	if err := saveSysctls(n.Dir); err != nil {
		return nil, err
	}
	if err := network(); err != nil {
		return nil, fmt.Errorf("network namespace: %w", err)
	}
	if err := n.writeConfig(opts); err != nil {
		return nil, err
	}
	steps := []struct {
		what string
		f    func(context.Context) error
	}{
		{"control plane", n.startControlPlane},
		{"cluster DNS", n.startDNS},
		{"containerd", n.startContainerd},
		{"images", func(ctx context.Context) error { return n.importImages(ctx, opts.Images, opts.ExtraImages) }},
		{"kubelet", n.startKubelet},
	}
	for _, s := range steps {
		start := time.Now()
		sctx, cancel := context.WithTimeout(ctx, startTimeout)
		err := s.f(sctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", s.what, err)
		}
		logger.Info("node step done", "step", s.what, "duration", time.Since(start).Round(time.Millisecond))
	}
	return n, nil
}

// Start starts a node for the test t and stops it when the test ends or
// the test process is interrupted (SIGINT, SIGTERM); the test fails, naming
// the component and showing its last log lines, if the node cannot start.
// When the test has failed, Stop first logs the last lines of every
// component's log.
func Start(t testing.TB, opts Options) *Node {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(testlog.Output(t), nil))
	n, err := Up(t.Context(), logger, opts)
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	sig := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case s := <-sig:
			_ = n.Stop()
			// Die of the signal, as the test process would have.
			signal.Reset(s)
			_ = syscall.Kill(os.Getpid(), s.(syscall.Signal))
		case <-done:
		}
	}()
	t.Cleanup(func() {
		signal.Stop(sig)
		close(done)
		// To stderr, now: the test's own report (go test prints it when
		// the test ends, after this) then follows them, its failures
		// last, where a CI log's tail shows them.
		if t.Failed() {
			for _, c := range n.components {
				fmt.Fprintf(os.Stderr, "%s failed: --- last lines of %s ---\n%s\n", t.Name(), c.log, tail(c.log, tailLines))
			}
		}
		if err := n.Stop(); err != nil {
			t.Errorf("stop node: %v", err)
		}
	})
	return n
}

// Stop stops every component, kills the pods' processes, unmounts what the
// node mounted, deletes its network namespace, restores the sysctls and
// removes Dir. It may be called more than once.
func (n *Node) Stop() error {
	var errs []error
	// The kubelet first, so that nothing restarts what is stopped next.
	for i := len(n.components) - 1; i >= 0; i-- {
		n.components[i].stop(10 * time.Second)
	}
	n.components = nil
	if err := sweep(n.Dir, n.logger); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(n.Dir); err != nil {
		errs = append(errs, err)
	}
	if n.lock != nil {
		errs = append(errs, n.lock.Close())
		n.lock = nil
	}
	return errors.Join(errs...)
}

// Clean removes what a node whose process died left behind in dir and on
// the machine (processes, mounts, network namespace, cgroups, sysctls).
func Clean(dir string) error {
	return sweep(dir, slog.New(slog.DiscardHandler))
}

// lock takes the machine's node lock, waiting while another node runs.
func lock(ctx context.Context) (*os.File, error) {
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", lockPath, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for the node of another process to stop (%s): %w", lockPath, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// network creates the node's network namespace and the veth pair that
// joins it to the machine.
func network() error {
	cmds := [][]string{
		{"ip", "netns", "add", netnsName},
		{"ip", "-n", netnsName, "link", "set", "lo", "up"},
		{"ip", "link", "add", hostVeth, "type", "veth", "peer", "name", nodeVeth, "netns", netnsName},
		{"ip", "addr", "add", HostIP + "/30", "dev", hostVeth},
		{"ip", "link", "set", hostVeth, "up"},
		{"ip", "-n", netnsName, "addr", "add", nodeIP + "/30", "dev", nodeVeth},
		{"ip", "-n", netnsName, "link", "set", nodeVeth, "up"},
	}
	for _, c := range cmds {
		if err := run(c[0], c[1:]...); err != nil {
			return err
		}
	}
	return nil
}

func (n *Node) path(elem ...string) string { return filepath.Join(append([]string{n.Dir}, elem...)...) }

// start starts the component name from bin/<bin> in the node's namespace.
func (n *Node) start(name string, args ...string) (*component, error) {
	c, err := startComponent(n.path("logs"), n.bin, netnsName, name, filepath.Join(n.bin, name), args...)
	if err != nil {
		return nil, err
	}
	n.components = append(n.components, c)
	return c, nil
}

// waitFor polls cond until it holds, failing with the component that has
// exited, if one has, else with cond's last error and c's last log lines.
func (n *Node) waitFor(ctx context.Context, c *component, what string, cond func(context.Context) error) error {
	var last error
	for {
		for _, c := range n.components {
			if err := c.exited(); err != nil {
				return err
			}
		}
		if last = cond(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return c.failure(fmt.Errorf("wait for %s: %w (last: %w)", what, ctx.Err(), last))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (n *Node) startControlPlane(ctx context.Context) error {
	if _, err := n.start("etcd", "--data-dir="+n.path("etcd"), "--unsafe-no-fsync",
		"--listen-client-urls=http://127.0.0.1:2379", "--advertise-client-urls=http://127.0.0.1:2379",
		"--listen-peer-urls=http://127.0.0.1:2380", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
		"--initial-cluster=default=http://127.0.0.1:2380", "--listen-metrics-urls="); err != nil {
		return err
	}
	pki := n.path("pki")
	apiserver, err := n.start("kube-apiserver",
		"--etcd-servers=http://127.0.0.1:2379",
		"--advertise-address="+nodeIP, "--secure-port=6443", "--cert-dir="+pki,
		"--tls-cert-file="+pki+"/apiserver.crt", "--tls-private-key-file="+pki+"/apiserver.key",
		"--client-ca-file="+pki+"/ca.crt", "--token-auth-file="+pki+"/tokens.csv",
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+pki+"/sa.pub", "--service-account-signing-key-file="+pki+"/sa.key",
		"--service-cluster-ip-range="+serviceSubnet,
		"--kubelet-client-certificate="+pki+"/apiserver-kubelet-client.crt",
		"--kubelet-client-key="+pki+"/apiserver-kubelet-client.key",
		"--kubelet-preferred-address-types=InternalIP",
		"--profiling=false")
	if err != nil {
		return err
	}
	if n.Config, err = clientcmd.BuildConfigFromFlags("", n.Kubeconfig); err != nil {
		return err
	}
	if err := inlineTLSFiles(n.Config); err != nil {
		return err
	}
	n.Config.QPS, n.Config.Burst = 100, 200
	if n.client, err = kubernetes.NewForConfig(n.Config); err != nil {
		return err
	}
	if err := n.waitFor(ctx, apiserver, "kube-apiserver /readyz", func(ctx context.Context) error {
		_, err := n.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}); err != nil {
		return err
	}
	if _, err := n.start("kube-controller-manager", "--kubeconfig="+n.path("etc", "controller-manager.kubeconfig"),
		"--leader-elect=false", "--use-service-account-credentials=true",
		"--service-account-private-key-file="+pki+"/sa.key", "--root-ca-file="+pki+"/ca.crt",
		"--bind-address=127.0.0.1", "--profiling=false"); err != nil {
		return err
	}
	_, err = n.start("kube-scheduler", "--kubeconfig="+n.path("etc", "scheduler.kubeconfig"),
		"--leader-elect=false", "--bind-address=127.0.0.1", "--profiling=false")
	return err
}

func (n *Node) startContainerd(ctx context.Context) error {
	c, err := n.start("containerd", "--config="+n.path("etc", "containerd.toml"))
	if err != nil {
		return err
	}
	return n.waitFor(ctx, c, "containerd's socket", func(ctx context.Context) error {
		return n.ctr("version")
	})
}

func (n *Node) ctr(args ...string) error {
	return run(filepath.Join(n.bin, "ctr"), append([]string{"--address", n.path("containerd", "containerd.sock"), "--namespace", "k8s.io"}, args...)...)
}

// importImages imports the OCI archives into containerd's k8s.io
// namespace, where the kubelet finds them (pull policy IfNotPresent).
func (n *Node) importImages(_ context.Context, images, extra []string) error {
	if len(images) == 0 {
		// prometheus-config-reloader is prometheus-operator's, for its
		// operator's pods (e2e/node's TestOperatorOnNode); alertmanager-v0.25
		// an Alertmanager older than v0.30, for the takeover of one
		// (e2e/node's TestAlertmanagerTakeoverOnNode).
		for _, name := range []string{"pause", "podreload", "prometheus", "alertmanager", "alertmanager-v0.25", "prometheus-config-reloader"} {
			path, err := toolbin.Path(filepath.Join("images", name+"-"+runtime.GOARCH+".tar"))
			if err != nil {
				return fmt.Errorf("%w; `make host-images` builds it", err)
			}
			images = append(images, path)
		}
	}
	for _, img := range append(images, extra...) {
		if err := n.ctr("images", "import", "--platform", "linux/"+runtime.GOARCH, img); err != nil {
			return fmt.Errorf("import %s: %w", img, err)
		}
	}
	return nil
}

func (n *Node) startKubelet(ctx context.Context) error {
	if _, err := n.start("kube-proxy", "--config="+n.path("etc", "kube-proxy.yaml"), "--hostname-override="+Name); err != nil {
		return err
	}
	kubelet, err := n.start("kubelet", "--config="+n.path("etc", "kubelet.yaml"),
		"--kubeconfig="+n.path("etc", "kubelet.kubeconfig"), "--root-dir="+n.path("kubelet"),
		"--cert-dir="+n.path("kubelet", "pki"), "--hostname-override="+Name, "--node-ip="+nodeIP)
	if err != nil {
		return err
	}
	return n.waitFor(ctx, kubelet, "Node "+Name+" Ready", func(ctx context.Context) error {
		node, err := n.client.CoreV1().Nodes().Get(ctx, Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				if c.Status == corev1.ConditionTrue {
					return nil
				}
				return fmt.Errorf("node not ready: %s", c.Message)
			}
		}
		return errors.New("node has no Ready condition")
	})
}

// HostPathVolume creates a PersistentVolume of size backed by a new
// directory of the node owned by uid:gid (a hostPath volume ignores the
// pod's fsGroup), bound in advance to the claim namespace/claim, as a
// StatefulSet's volumeClaimTemplate creates it.
func (n *Node) HostPathVolume(ctx context.Context, name, namespace, claim, size string, uid, gid int) error {
	return n.HostPathVolumeOfClass(ctx, "", name, namespace, claim, size, uid, gid)
}

// HostPathVolumeOfClass is HostPathVolume for a claim that names the
// storage class class (the PersistentVolume carries it: a claim binds only
// to a volume of its class).
func (n *Node) HostPathVolumeOfClass(ctx context.Context, class, name, namespace, claim, size string, uid, gid int) error {
	dir := n.HostPathDir(name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		return err
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              class,
			ClaimRef:                      &corev1.ObjectReference{Namespace: namespace, Name: claim},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: dir, Type: ptr.To(corev1.HostPathDirectory),
			}},
		},
	}
	_, err := n.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create PersistentVolume %s: %w", name, err)
	}
	return nil
}

// HostPathDir returns the directory of the node that backs the
// PersistentVolume name of HostPathVolume.
func (n *Node) HostPathDir(name string) string { return n.path("volumes", name) }

// Logs returns the last lines of the log of the component name (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, containerd,
// kube-proxy, kubelet, coredns).
func (n *Node) Logs(name string, lines int) string {
	return tail(n.path("logs", name+".log"), lines)
}

// ContainerPID returns the process ID, on this machine, of the running
// container whose ID the pod status gives (containerd://<id>).
func (n *Node) ContainerPID(containerID string) (int, error) {
	id := strings.TrimPrefix(containerID, "containerd://")
	out, err := exec.Command(filepath.Join(n.bin, "ctr"), "--address", n.path("containerd", "containerd.sock"),
		"--namespace", "k8s.io", "tasks", "ls").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("ctr tasks ls: %w: %s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == id && f[2] == "RUNNING" {
			return strconv.Atoi(f[1])
		}
	}
	return 0, fmt.Errorf("container %s is not running", id)
}

// Command is the command name with args run in the node's network
// namespace, where the pods' addresses are reached (this machine's
// namespace reaches the API server alone).
func (n *Node) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", netnsName, name}, args...)...)
}

// VolumeDir returns the directory of the node where the kubelet projects
// the volume of the pod with the UID podUID, name volume, of the plugin
// kind (e.g. kubernetes.io~configmap).
func (n *Node) VolumeDir(podUID, kind, volume string) string {
	return n.path("kubelet", "pods", podUID, "volumes", kind, volume)
}

// inlineTLSFiles reads the CA, certificate and key files of cfg into its
// data fields and forgets the paths. client-go caches TLS transports by
// the paths of files given alone: a second node started by the same
// process, with new files at the same paths, would be reached through the
// first node's transport and its CA ("certificate signed by unknown
// authority").
func inlineTLSFiles(cfg *rest.Config) error {
	tls := &cfg.TLSClientConfig
	for _, f := range []struct {
		path *string
		data *[]byte
	}{{&tls.CAFile, &tls.CAData}, {&tls.CertFile, &tls.CertData}, {&tls.KeyFile, &tls.KeyData}} {
		if *f.path == "" || len(*f.data) > 0 {
			continue
		}
		b, err := os.ReadFile(*f.path)
		if err != nil {
			return err
		}
		*f.data, *f.path = b, ""
	}
	return nil
}
