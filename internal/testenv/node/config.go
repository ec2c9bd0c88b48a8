package node

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"
)

// writeConfig writes the node's certificates, tokens, kubeconfigs and the
// configuration files of containerd, the CNI bridge, kube-proxy and the
// kubelet.
func (n *Node) writeConfig(opts Options) error {
	p, err := newPKI(n.path("pki"))
	if err != nil {
		return err
	}
	if err := p.issue("apiserver", "kube-apiserver", nil, nodeIP, serviceIP, "127.0.0.1",
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"); err != nil {
		return err
	}
	if err := p.issue("apiserver-kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"}); err != nil {
		return err
	}
	if err := p.issue("kubelet", Name, nil, nodeIP, Name); err != nil {
		return err
	}
	if err := p.serviceAccountKey(); err != nil {
		return err
	}
	// The node's clients, each with a static token: the names and groups
	// Kubernetes' bootstrap RBAC policy and Node authorizer know.
	users := []struct{ file, user, groups string }{
		{"admin", "podreload-admin", "system:masters"},
		{"kubelet", "system:node:" + Name, "system:nodes"},
		{"controller-manager", "system:kube-controller-manager", ""},
		{"scheduler", "system:kube-scheduler", ""},
		{"kube-proxy", "system:kube-proxy", ""},
		{"coredns", dnsUser, ""},
	}
	var tokens strings.Builder
	for _, u := range users {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		token := hex.EncodeToString(b)
		fmt.Fprintf(&tokens, "%s,%s,%s,%q\n", token, u.user, u.user, u.groups)
		if err := n.writeFile("etc/"+u.file+".kubeconfig", kubeconfig(p.path("ca.crt"), token)); err != nil {
			return err
		}
	}
	if err := os.WriteFile(p.path("tokens.csv"), []byte(tokens.String()), 0o600); err != nil {
		return err
	}
	n.Kubeconfig = n.path("etc", "admin.kubeconfig")

	files := map[string]string{
		"etc/containerd.toml":        containerdConfig(n.Dir),
		"etc/cni/10-bridge.conflist": cniConfig(n.Dir),
		"etc/kube-proxy.yaml":        kubeProxyConfig(n.Dir),
		"etc/kubelet.yaml":           kubeletConfig(n.Dir, opts.SyncFrequency),
		"etc/resolv.conf":            "",
		"etc/Corefile":               corefile(n.Dir),
	}
	for name, content := range files {
		if err := n.writeFile(name, content); err != nil {
			return err
		}
	}
	return nil
}

func (n *Node) writeFile(name, content string) error {
	return os.WriteFile(n.path(name), []byte(content), 0o600)
}

func kubeconfig(ca, token string) string {
	return `apiVersion: v1
kind: Config
clusters:
- name: node
  cluster:
    server: https://` + nodeIP + `:6443
    certificate-authority: ` + ca + `
users:
- name: user
  user:
    token: ` + token + `
contexts:
- name: node
  context: {cluster: node, user: user}
current-context: node
`
}

// containerdConfig: the CRI plugin with the local pause image as sandbox
// image, runc from Debian (found in PATH), the CNI plugins of Debian, and
// restrict_oom_score_adj, without which every sandbox fails on a machine
// without CAP_SYS_RESOURCE ("can't get final child's PID from pipe").
func containerdConfig(dir string) string {
	return `version = 3
root = "` + dir + `/containerd/root"
state = "` + dir + `/containerd/state"

[grpc]
  address = "` + dir + `/containerd/containerd.sock"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "` + PauseImage + `"

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "` + dir + `/etc/cni"
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      SystemdCgroup = false
`
}

// cniConfig: pods on a bridge of the node's namespace, addresses from
// host-local (its state in dir, not /var/lib/cni).
func cniConfig(dir string) string {
	return `{
  "cniVersion": "1.0.0",
  "name": "podreload-node",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "` + dir + `/cni-ipam",
        "ranges": [[{"subnet": "` + podSubnet + `"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "loopback"}
  ]
}
`
}

// kubeProxyConfig: iptables mode; conntrack settings left alone (they are
// global sysctls).
func kubeProxyConfig(dir string) string {
	return `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: ` + dir + `/etc/kube-proxy.kubeconfig
hostnameOverride: ` + Name + `
clusterCIDR: ` + podSubnet + `
bindAddress: ` + nodeIP + `
conntrack:
  maxPerCore: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`
}

// kubeletConfig: cgroup v1 allowed (this machine has hybrid cgroups), no
// image garbage collection (the images cannot be pulled again), pod logs
// in dir, the cluster DNS (startDNS) in the pods' resolv.conf; the node's
// own resolv.conf is empty (no way out).
func kubeletConfig(dir string, syncFrequency time.Duration) string {
	sync := ""
	if syncFrequency > 0 {
		sync = "syncFrequency: " + syncFrequency.String() + "\n"
	}
	return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
failSwapOn: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://` + dir + `/containerd/containerd.sock
podLogsDir: ` + dir + `/pod-logs
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: ` + dir + `/pki/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: ` + dir + `/pki/kubelet.crt
tlsPrivateKeyFile: ` + dir + `/pki/kubelet.key
readOnlyPort: 0
resolvConf: ` + dir + `/etc/resolv.conf
clusterDNS: [` + DNSServiceIP + `]
clusterDomain: ` + ClusterDomain + `
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi"}
registerNode: true
` + sync
}
