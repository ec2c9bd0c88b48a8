package node

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/internal/testenv/node"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

const (
	// operatorServiceAccount is the ServiceAccount of
	// testdata/prometheus-operator, in default, whose token the operator
	// runs with.
	operatorServiceAccount = "prometheus-operator"
	// operatorStorageClass is the class of the operator's Prometheus
	// claims and of the hostPath volumes bound to them in advance.
	operatorStorageClass = "podreload-hostpath"
	// operatorPrometheusImage is our image of Prometheus (`make
	// host-images`, PROMETHEUS_IMAGE), which the operator's Prometheus
	// names; operatorPrometheusVersion its version, from which the
	// operator derives Prometheus' flags.
	operatorPrometheusImage, operatorPrometheusVersion = "quay.io/prometheus/prometheus:" + operatorPrometheusVersion, "v3.15.0"
	// operatorRecord is the recording rule of the operator's
	// PrometheusRule.
	operatorRecord = "podreload:operator_e2e:one"
	// operatorUID and operatorGID run the operator's Prometheus pods
	// (spec.securityContext, as kube-prometheus-stack's defaults set it)
	// and own their hostPath volumes.
	operatorUID, operatorGID = 1000, 2000
)

// operatorAddress finds in the operator's log the address its web server
// listens on.
var operatorAddress = regexp.MustCompile(`msg="starting insecure server".* address=(\S+)`)

// TestOperatorOnNode runs prometheus-operator's operator at the pinned
// version (bin/prometheus-operator) on the node with the RBAC its
// documentation installs, and checks that it runs a Prometheus with two
// replicas on persistent volumes, scraping a ServiceMonitor's targets and
// evaluating a PrometheusRule: what the takeover's acceptance (issue 26)
// starts from.
func TestOperatorOnNode(t *testing.T) {
	cl := startCluster(t, node.Options{})
	operator := cl.startOperator(t, "")
	const name = "operated"
	cl.operatorPrometheus(t, name, 2)
	pods := cl.waitOperatorPrometheus(t, name, 2)

	t.Run("the operator runs as its ServiceAccount and wrote the StatefulSet", func(t *testing.T) {
		// Its kubeconfig's identity: the RBAC of testdata, nothing more.
		cfg, err := clientcmd.BuildConfigFromFlags("", operator.kubeconfig)
		require.NoError(t, err)
		kube, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		review, err := kube.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		require.NoError(t, err)
		require.Equal(t, "system:serviceaccount:default:"+operatorServiceAccount, review.Status.UserInfo.Username)
		// Written by the operator (its field manager), owned by the
		// Prometheus.
		sts, err := cl.kube.AppsV1().StatefulSets("default").Get(t.Context(), "prometheus-"+name, metav1.GetOptions{})
		require.NoError(t, err)
		require.True(t, slices.ContainsFunc(sts.ManagedFields, func(f metav1.ManagedFieldsEntry) bool {
			return f.Manager == "PrometheusOperator"
		}), "managed fields %+v", sts.ManagedFields)
		require.Len(t, sts.OwnerReferences, 1)
		require.Equal(t, monitoringv1.PrometheusesKind, sts.OwnerReferences[0].Kind)
		require.Equal(t, name, sts.OwnerReferences[0].Name)
	})

	for _, pod := range pods {
		t.Run(pod+" scrapes and evaluates", func(t *testing.T) {
			eventually(t, 2*time.Minute, "targets of "+operatorScrapeJob(name)+" up in "+pod, func() error {
				return cl.targetUp(t, pod, operatorScrapeJob(name))
			})
			eventually(t, time.Minute, "series "+operatorRecord+" in "+pod, func() error {
				return cl.hasSeries(t, pod, operatorRecord)
			})
		})
	}

	t.Run("the data lives on the claims of the hostPath volumes", func(t *testing.T) {
		uids := cl.operatorClaimUIDs(t, name, 2)
		require.Len(t, uids, 2)
		for i, pod := range pods {
			claim := operatorClaimName(name, i)
			require.NotEmpty(t, uids[claim], claim)
			p, err := cl.kube.CoreV1().Pods("default").Get(t.Context(), pod, metav1.GetOptions{})
			require.NoError(t, err)
			require.True(t, slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool {
				return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim
			}), "pod %s does not mount claim %s: %+v", pod, claim, p.Spec.Volumes)
			pvc, err := cl.kube.CoreV1().PersistentVolumeClaims("default").Get(t.Context(), claim, metav1.GetOptions{})
			require.NoError(t, err)
			require.Equal(t, corev1.ClaimBound, pvc.Status.Phase, claim)
			require.Equal(t, operatorVolumeName(claim), pvc.Spec.VolumeName, claim)
			// Prometheus wrote its TSDB into the volume's sub-path.
			entries, err := os.ReadDir(filepath.Join(cl.node.HostPathDir(operatorVolumeName(claim)), "prometheus-db"))
			require.NoError(t, err)
			require.True(t, slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() == "wal" }),
				"%s: no wal in %v", claim, entries)
		}
	})

	t.Run("the operator was never denied", func(t *testing.T) {
		logs := operator.Logs()
		require.Contains(t, logs, "Starting Prometheus Operator")
		// At its start it asks what it may do (SelfSubjectAccessReviews)
		// and logs what it misses; later denials are "forbidden".
		require.NotContains(t, logs, "missing permission", "testdata/prometheus-operator misses a permission")
		require.NotContains(t, strings.ToLower(logs), "forbidden", "an RBAC denial: testdata/prometheus-operator misses a permission")
	})
}

// operatorScrapeJob is the scrape job of operatorPrometheus' ServiceMonitor.
func operatorScrapeJob(name string) string { return "serviceMonitor/default/" + name + "/0" }

// operatorClaimName is the claim of the data volume of a replica of the
// operator's Prometheus name: its volumeClaimTemplate (default name
// prometheus-<name>-db) and the StatefulSet's pod.
func operatorClaimName(name string, replica int) string {
	return "prometheus-" + name + "-db-prometheus-" + name + "-" + strconv.Itoa(replica)
}

// operatorVolumeName is the PersistentVolume bound in advance to claim.
func operatorVolumeName(claim string) string { return "pv-" + claim }

// installOperator installs what prometheus-operator's operator needs
// before it starts: the monitoring.coreos.com CRDs of deploy/crds, its
// ServiceAccount and ClusterRole (testdata/prometheus-operator, as its
// documentation installs them) and those of its Prometheus pods, and
// waits for the API server to serve the CRDs (the operator checks them
// once, at its start). It applies, so it may run again.
func (cl *cluster) installOperator(t testing.TB) {
	t.Helper()
	crds, err := filepath.Glob("../../deploy/crds/monitoring.coreos.com_*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, crds)
	for _, crd := range crds {
		cl.applyFile(t, crd)
	}
	cl.apply(t, "testdata/prometheus-operator")
	want := map[string][]string{
		"monitoring.coreos.com/v1":       {"prometheuses", "servicemonitors", "podmonitors", "probes", "prometheusrules"},
		"monitoring.coreos.com/v1alpha1": {"scrapeconfigs"},
	}
	eventually(t, time.Minute, "the monitoring.coreos.com CRDs served", func() error {
		for gv, resources := range want {
			list, err := cl.kube.Discovery().ServerResourcesForGroupVersion(gv)
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

// operatorProcess is prometheus-operator's operator running as a process
// of this machine (startOperator).
type operatorProcess struct {
	// kubeconfig is the path of the kubeconfig it runs with.
	kubeconfig string
	stop       func()
	logs       *syncBuffer
}

// Stop stops the operator (SIGTERM, then SIGKILL after 30 s) and waits for
// it to exit. It may be called more than once.
func (o *operatorProcess) Stop() { o.stop() }

// Logs returns what the operator logged so far.
func (o *operatorProcess) Logs() string { return o.logs.String() }

// startOperator installs the operator (installOperator) and runs
// bin/prometheus-operator (`make bin/prometheus-operator`) as a process of
// this machine with a kubeconfig holding the token of its ServiceAccount,
// so that it has exactly the installed RBAC, and returns once its
// Prometheus controller is ready. id is its --controller-id: empty, its
// default, reconciles the Prometheus objects without the
// operator.prometheus.io/controller-id annotation or with an empty value.
// The operator stops with the test, or earlier with Stop; its log goes to
// the test's log when the test fails.
func (cl *cluster) startOperator(t testing.TB, id string) *operatorProcess {
	t.Helper()
	cl.installOperator(t)
	bin, err := toolbin.Path("prometheus-operator")
	require.NoError(t, err, "`make bin/prometheus-operator` builds it")
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cl.writeServiceAccountKubeconfig(t, "default", operatorServiceAccount, kubeconfig)

	// The operator has no --kubeconfig flag: it reads KUBECONFIG. Its
	// HTTP server (metrics, health) on a free port of the loopback, which
	// it logs (operatorAddress).
	args := []string{"--web.listen-address=127.0.0.1:0", "--log-level=debug"}
	if id != "" {
		args = append(args, "--controller-id="+id)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	logs := &syncBuffer{}
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
	eventually(t, time.Minute, "prometheus-operator ready", func() error {
		select {
		case err := <-done:
			done <- err // For stop.
			t.Fatalf("prometheus-operator exited at its start: %v (its log follows)", err)
		default:
		}
		m := operatorAddress.FindStringSubmatch(logs.String())
		if m == nil {
			return errors.New("its web server has not started")
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + m[1] + "/metrics")
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
	})
	return &operatorProcess{kubeconfig: kubeconfig, stop: stop, logs: logs}
}

// writeServiceAccountKubeconfig writes to path a kubeconfig reaching the
// node's API server as the ServiceAccount namespace/name, with a token the
// TokenRequest API issues for an hour.
func (cl *cluster) writeServiceAccountKubeconfig(t testing.TB, namespace, name, path string) {
	t.Helper()
	tr, err := cl.kube.CoreV1().ServiceAccounts(namespace).CreateToken(t.Context(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}},
		metav1.CreateOptions{})
	require.NoError(t, err, "token of ServiceAccount %s/%s", namespace, name)
	admin, err := clientcmd.LoadFromFile(cl.node.Kubeconfig)
	require.NoError(t, err)
	current, ok := admin.Contexts[admin.CurrentContext]
	require.True(t, ok, "%s: no current context", cl.node.Kubeconfig)
	cluster, ok := admin.Clusters[current.Cluster]
	require.True(t, ok, "%s: no cluster %s", cl.node.Kubeconfig, current.Cluster)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["node"] = cluster
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "node", AuthInfo: name, Namespace: namespace}
	cfg.CurrentContext = name
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
}

// operatorPrometheus creates in default, for the operator to run, a
// Prometheus name of replicas replicas on our Prometheus image, with
// persistent storage: a StorageClass operatorStorageClass (the operator
// checks the class exists) and, bound in advance to each replica's claim
// (operatorClaimName), a hostPath volume of that class
// (operatorVolumeName). It selects a ServiceMonitor name that scrapes the
// Prometheus pods themselves through the operator's governing Service
// prometheus-operated (job operatorScrapeJob) and a PrometheusRule name
// with the recording rule operatorRecord; scrape and evaluation every 5 s.
// Prometheus is not waited for: see waitOperatorPrometheus.
func (cl *cluster) operatorPrometheus(t testing.TB, name string, replicas int) *monitoringv1.Prometheus {
	t.Helper()
	ctx := t.Context()
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: operatorStorageClass},
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
	if err := cl.c.Create(ctx, sc); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	for i := range replicas {
		claim := operatorClaimName(name, i)
		pv := operatorVolumeName(claim)
		require.NoError(t, cl.node.HostPathVolumeOfClass(ctx, operatorStorageClass, pv, "default", claim, "1Gi", operatorUID, operatorGID))
		// The operator mounts the volume's sub-path prometheus-db: the
		// kubelet would create it as root, where Prometheus cannot write.
		sub := filepath.Join(cl.node.HostPathDir(pv), "prometheus-db")
		require.NoError(t, os.MkdirAll(sub, 0o750))
		require.NoError(t, os.Chown(sub, operatorUID, operatorGID))
	}

	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"prometheus": name}}
	sm := &monitoringv1.ServiceMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: selector.MatchLabels},
		Spec: monitoringv1.ServiceMonitorSpec{
			// The operator's labels of its governing Service.
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"operated-prometheus": "true"}},
			Endpoints: []monitoringv1.Endpoint{{Port: "web"}},
		},
	}
	rule := &monitoringv1.PrometheusRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: selector.MatchLabels},
		Spec: monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{
			Name:  "operator-e2e",
			Rules: []monitoringv1.Rule{{Record: operatorRecord, Expr: intstr.FromString("vector(1)")}},
		}}},
	}
	prom := &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: monitoringv1.PrometheusSpec{
			CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
				Replicas:               ptr.To(int32(replicas)),
				Image:                  ptr.To(operatorPrometheusImage),
				Version:                operatorPrometheusVersion,
				ServiceAccountName:     "prometheus",
				ServiceMonitorSelector: selector,
				ScrapeInterval:         "5s",
				SecurityContext: &corev1.PodSecurityContext{
					RunAsUser: ptr.To[int64](operatorUID), RunAsGroup: ptr.To[int64](operatorGID),
					FSGroup: ptr.To[int64](operatorGID), RunAsNonRoot: ptr.To(true),
				},
				Storage: &monitoringv1.StorageSpec{VolumeClaimTemplate: monitoringv1.EmbeddedPersistentVolumeClaim{
					Spec: corev1.PersistentVolumeClaimSpec{
						StorageClassName: ptr.To(operatorStorageClass),
						AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceStorage: resource.MustParse("1Gi"),
						}},
					},
				}},
			},
			RuleSelector:       selector,
			EvaluationInterval: "5s",
		},
	}
	for _, obj := range []client.Object{sm, rule, prom} {
		require.NoError(t, cl.c.Create(ctx, obj), "create %T %s", obj, name)
	}
	return prom
}

// waitOperatorPrometheus waits until the replicas pods of the operator's
// Prometheus name (prometheus-<name>-<i>) are ready, and returns their
// names.
func (cl *cluster) waitOperatorPrometheus(t testing.TB, name string, replicas int) []string {
	t.Helper()
	var pods []string
	for i := range replicas {
		pod := "prometheus-" + name + "-" + strconv.Itoa(i)
		eventually(t, startTimeout, "pod "+pod+" ready", func() error {
			_, err := cl.readyPod(t, "default", pod)
			return err
		})
		pods = append(pods, pod)
	}
	return pods
}

// operatorClaimUIDs returns the UIDs of the data claims of the replicas
// of the operator's Prometheus name, by claim name: the takeover must keep
// the same claims.
func (cl *cluster) operatorClaimUIDs(t testing.TB, name string, replicas int) map[string]types.UID {
	t.Helper()
	uids := map[string]types.UID{}
	for i := range replicas {
		claim := operatorClaimName(name, i)
		pvc, err := cl.kube.CoreV1().PersistentVolumeClaims("default").Get(t.Context(), claim, metav1.GetOptions{})
		require.NoError(t, err, "claim %s", claim)
		uids[claim] = pvc.UID
	}
	return uids
}

// hasSeries returns nil once an instant query of the pod's Prometheus for
// the metric name returns a series.
func (cl *cluster) hasSeries(t testing.TB, pod, name string) error {
	var data struct {
		Result []any `json:"result"`
	}
	if err := cl.prometheus(t, pod, "/api/v1/query", url.Values{"query": {name}}, &data); err != nil {
		return err
	}
	if len(data.Result) == 0 {
		return fmt.Errorf("no series %s", name)
	}
	return nil
}

// syncBuffer is a bytes.Buffer a process writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
