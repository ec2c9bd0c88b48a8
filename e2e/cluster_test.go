package e2e

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/projector"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

const (
	prometheusImage = "quay.io/prometheus/prometheus:e2e"
	reloaderImage   = "ghcr.io/podreload/podreload:e2e"
)

// cluster is a real kube-apiserver and etcd with the CRDs installed and
// the controller binary running against them.
type cluster struct {
	kubeconfig string
	// cfg reaches the API server as an administrator.
	cfg *rest.Config
	// host and ca reach the API server, as a pod's service account does.
	host       string
	ca         []byte
	c          client.WithWatch
	controller *process
	// metricsURL serves the controller's metrics.
	metricsURL string
}

// startCluster starts the control plane and the controller, both stopped
// when the test ends.
func startCluster(t testing.TB) *cluster {
	t.Helper()
	env := controlplane.Start(t, filepath.Join("..", "deploy", "crds"))
	cfg, kubeconfig := env.Config, env.Kubeconfig

	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	require.NoError(t, monitoringv1.AddToScheme(scheme))
	require.NoError(t, monitoringv1alpha1.AddToScheme(scheme))
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)

	addr := freeAddr(t)
	cl := &cluster{kubeconfig: kubeconfig, cfg: cfg, host: cfg.Host, ca: cfg.CAData, c: c, metricsURL: "http://" + addr + "/metrics"}
	cl.controller = start(t, "controller", nil, ours("controller"), "--kubeconfig="+kubeconfig,
		"--web.listen-address="+addr, "--prometheus-image="+prometheusImage, "--reloader-image="+reloaderImage)
	eventually(t, "controller ready", func() error {
		return errors.Join(cl.controller.exited(), ok(t.Context(), "http://"+addr+"/-/ready"))
	})
	return cl
}

// apply creates the objects of the YAML documents in the files under dir
// that a kustomization lists, in its order.
func (cl *cluster) apply(t testing.TB, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	require.NoError(t, err)
	var k struct {
		Resources []string `json:"resources"`
	}
	require.NoError(t, utilyaml.Unmarshal(b, &k))
	require.NotEmpty(t, k.Resources)
	for _, file := range k.Resources {
		b, err := os.ReadFile(filepath.Join(dir, file))
		require.NoError(t, err)
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			var u unstructured.Unstructured
			err := dec.Decode(&u.Object)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, file)
			if len(u.Object) == 0 {
				continue
			}
			require.NoError(t, cl.c.Create(t.Context(), &u), "%s: %s %s", file, u.GetKind(), u.GetName())
		}
	}
}

// kubectl runs the real kubectl (bin/kubectl) against the cluster, as a
// user would, and returns its output.
func (cl *cluster) kubectl(t testing.TB, args ...string) string {
	t.Helper()
	bin, err := toolbin.Path("kubectl")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig=" + cl.kubeconfig}, args...)...).CombinedOutput()
	require.NoError(t, err, "kubectl %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// statefulSet waits for the StatefulSet the controller renders for a
// PrometheusServer.
func (cl *cluster) statefulSet(t testing.TB, key client.ObjectKey) *appsv1.StatefulSet {
	t.Helper()
	var sts appsv1.StatefulSet
	eventually(t, "StatefulSet "+key.String(), func() error { return cl.c.Get(t.Context(), key, &sts) })
	return &sts
}

// loopbackPod runs the pod template of a StatefulSet on this machine, as
// the kubelet would run its first pod: the Secret and ConfigMap volumes
// are projected from the API server by the kubelet's atomic writer, the
// init containers run to completion, then the containers start, with the
// arguments and environment of the template. Images map to binaries.
// Two things differ from a real pod, because the pod shares this
// machine's filesystem and network: every mount path is prefixed with the
// pod's directory, and each container port is mapped to a free port of
// the machine, in the arguments that name them; and a config-reloader with
// the API source or reporting on its pod is told the API server, the
// service account token and the CA (--api-server, --api-token-file,
// --api-ca-file) where a pod has them in its environment and at
// /var/run/secrets/kubernetes.io.
type loopbackPod struct {
	name, namespace string
	root            string
	template        corev1.PodTemplateSpec
	images          map[string]string
	ports           map[int32]string // container port -> host address
	paths           *regexp.Regexp
	rewrite         *strings.Replacer
	kubelet         *projector.Kubelet // nil without Secret or ConfigMap volumes
	apiArgs         []string           // for a config-reloader with the API source
	containers      map[string]*process
	initLog         string // the init containers' output, after restart
}

// startPod starts the first pod of sts; images maps each image to the
// binary that runs it.
func (cl *cluster) startPod(t testing.TB, sts *appsv1.StatefulSet, images map[string]string) *loopbackPod {
	t.Helper()
	p := &loopbackPod{
		name:       sts.Name + "-0",
		namespace:  sts.Namespace,
		root:       t.TempDir(),
		template:   sts.Spec.Template,
		images:     images,
		ports:      map[int32]string{},
		containers: map[string]*process{},
	}
	spec := &p.template.Spec
	all := slices.Concat(spec.InitContainers, spec.Containers)

	// One mount path per volume: the volume's directory is that path under
	// the pod's root.
	mounts := map[string]string{}
	var olds []string
	for _, c := range all {
		for _, m := range c.VolumeMounts {
			if prev, ok := mounts[m.Name]; ok {
				require.Equal(t, prev, m.MountPath, "volume %s mounted at two paths: a loopback pod needs one", m.Name)
				continue
			}
			mounts[m.Name] = m.MountPath
			olds = append(olds, m.MountPath)
		}
		for _, port := range c.Ports {
			p.ports[port.ContainerPort] = freeAddr(t)
		}
	}
	// Longest first, so that a path wins over its prefixes; a path starts
	// an argument or follows a "=", and is whole.
	sort.Slice(olds, func(i, j int) bool { return len(olds[i]) > len(olds[j]) })
	quoted := make([]string, len(olds))
	for i, m := range olds {
		quoted[i] = regexp.QuoteMeta(m)
	}
	p.paths = regexp.MustCompile(`(^|=)(` + strings.Join(quoted, "|") + `)(/|$)`)
	var pairs []string
	for port, addr := range p.ports {
		_, hostPort, _ := net.SplitHostPort(addr)
		pairs = append(pairs, ":"+strconv.Itoa(int(port)), ":"+hostPort)
	}
	p.rewrite = strings.NewReplacer(pairs...)

	var vols []projector.KubeletVolume
	for _, v := range spec.Volumes {
		dir := p.root + mounts[v.Name]
		switch {
		case v.Secret != nil:
			vols = append(vols, projector.KubeletVolume{Kind: "secret", Name: v.Secret.SecretName, Dir: dir, Optional: v.Secret.Optional != nil && *v.Secret.Optional})
		case v.ConfigMap != nil:
			vols = append(vols, projector.KubeletVolume{Kind: "configmap", Name: v.ConfigMap.Name, Dir: dir, Optional: v.ConfigMap.Optional != nil && *v.ConfigMap.Optional})
		case v.EmptyDir != nil:
			require.NoError(t, os.MkdirAll(dir, 0o755))
		default:
			t.Fatalf("volume %s: a loopback pod has Secret, ConfigMap and emptyDir volumes only", v.Name)
		}
	}
	if len(vols) > 0 {
		kubelet, err := projector.StartKubelet(t.Context(), cl.kubeconfig, p.namespace, vols)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, kubelet.Close()) })
		p.kubelet = kubelet
	}
	if slices.ContainsFunc(all, apiClient) {
		p.apiArgs = cl.serviceAccount(t, p.namespace, cmp.Or(spec.ServiceAccountName, "default"), p.root)
	}
	// The pod as the API server knows it, ready, with the template's
	// labels: its config-reloader reports in it what Prometheus runs, and
	// the controller reads the report.
	obj := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.namespace, Name: p.name, Labels: p.template.Labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "prometheus", Image: "prometheus"}}},
	}
	require.NoError(t, cl.c.Create(t.Context(), obj), "pod %s", p.name)
	obj.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	require.NoError(t, cl.c.Status().Update(t.Context(), obj), "pod %s ready", p.name)
	// The kubelet starts a pod once its volumes are mounted.
	for _, v := range vols {
		if !v.Optional {
			eventually(t, "volume "+v.Name+" projected", func() error {
				_, err := os.Stat(filepath.Join(v.Dir, "..data"))
				return err
			})
		}
	}

	for _, c := range spec.InitContainers {
		require.NoError(t, p.run(t, c).wait(t), "init container %s", c.Name)
	}
	for _, c := range spec.Containers {
		p.containers[c.Name] = p.run(t, c)
	}
	return p
}

// apiClient reports whether c is a config-reloader that talks to the API
// server: with the API source, reporting on its pod, or keeping its state
// in a Secret.
func apiClient(c corev1.Container) bool {
	return slices.ContainsFunc(c.Args, func(a string) bool {
		return strings.HasPrefix(a, "--config-secret=") || strings.HasPrefix(a, "--report-pod=") || strings.HasPrefix(a, "--state-secret=")
	})
}

// serviceAccount writes, under root, a token of the service account name
// and the API server's CA, as the kubelet mounts them into a pod, and
// returns the config-reloader flags that use them.
func (cl *cluster) serviceAccount(t testing.TB, ns, name, root string) []string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	require.NoError(t, cl.c.SubResource("token").Create(t.Context(), sa, req), "token of service account %s/%s", ns, name)
	dir := filepath.Join(root, "var/run/secrets/kubernetes.io/serviceaccount")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	token, ca := filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(token, []byte(req.Status.Token), 0o600))
	require.NoError(t, os.WriteFile(ca, cl.ca, 0o600))
	return []string{"--api-server=" + cl.host, "--api-token-file=" + token, "--api-ca-file=" + ca}
}

// run starts container c.
func (p *loopbackPod) run(t testing.TB, c corev1.Container) *process {
	t.Helper()
	bin, ok := p.images[c.Image]
	require.True(t, ok, "container %s: no binary for image %s", c.Name, c.Image)
	require.Empty(t, c.Command, "container %s: the image's entrypoint runs", c.Name)
	var env, vars []string
	for _, e := range c.Env {
		v := e.Value
		if f := e.ValueFrom; f != nil {
			require.NotNil(t, f.FieldRef, "env %s of %s", e.Name, c.Name)
			switch f.FieldRef.FieldPath {
			case "metadata.name":
				v = p.name
			case "metadata.namespace":
				v = p.namespace
			default:
				t.Fatalf("env %s of %s: field %s", e.Name, c.Name, f.FieldRef.FieldPath)
			}
		}
		env = append(env, e.Name+"="+v)
		vars = append(vars, "$("+e.Name+")", v)
	}
	// The kubelet expands $(VAR) in arguments from the container's environment.
	expand := strings.NewReplacer(vars...)
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = p.rewrite.Replace(p.paths.ReplaceAllString(expand.Replace(a), "${1}"+p.root+"${2}${3}"))
	}
	if apiClient(c) {
		args = append(args, p.apiArgs...)
	}
	return start(t, c.Name, env, bin, args...)
}

// url is the URL of a container port of the pod.
func (p *loopbackPod) url(port int32) string { return "http://" + p.ports[port] }

// containerPort returns the port named name of container c.
func (p *loopbackPod) containerPort(t testing.TB, container, name string) int32 {
	t.Helper()
	for _, c := range p.template.Spec.Containers {
		for _, port := range c.Ports {
			if c.Name == container && port.Name == name {
				return port.ContainerPort
			}
		}
	}
	t.Fatalf("container %s has no port %s", container, name)
	return 0
}

// kill kills a container, as a crash would.
func (p *loopbackPod) kill(t testing.TB, name string) {
	t.Helper()
	p.containers[name].kill(t)
}

// start starts a container of the pod again, as the kubelet restarts a
// crashed one.
func (p *loopbackPod) start(t testing.TB, name string) {
	t.Helper()
	i := slices.IndexFunc(p.template.Spec.Containers, func(c corev1.Container) bool { return c.Name == name })
	require.GreaterOrEqual(t, i, 0, "no container %s", name)
	p.containers[name] = p.run(t, p.template.Spec.Containers[i])
}
