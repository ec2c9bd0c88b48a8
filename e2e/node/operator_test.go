package node

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/internal/testenv/node"
	"github.com/podreload/podreload/internal/testenv/operator"
)

const (
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

// TestOperatorOnNode runs prometheus-operator's operator at the pinned
// version (bin/prometheus-operator) on the node with the RBAC its
// documentation installs, and checks that it runs a Prometheus with two
// replicas on persistent volumes, scraping a ServiceMonitor's targets and
// evaluating a PrometheusRule: what the takeover's acceptance (issue 26)
// starts from.
func TestOperatorOnNode(t *testing.T) {
	cl := startCluster(t, node.Options{})
	op := cl.startOperator(t, "")
	const name = "operated"
	cl.operatorPrometheus(t, name, 2)
	pods := cl.waitOperatorPrometheus(t, name, 2)

	t.Run("the operator runs as its ServiceAccount and wrote the StatefulSet", func(t *testing.T) {
		// Its kubeconfig's identity: the RBAC of testdata, nothing more.
		cfg, err := clientcmd.BuildConfigFromFlags("", op.Kubeconfig)
		require.NoError(t, err)
		kube, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		review, err := kube.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		require.NoError(t, err)
		require.Equal(t, "system:serviceaccount:"+operator.Namespace+":"+operator.ServiceAccount, review.Status.UserInfo.Username)
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
		logs := op.Logs()
		require.Contains(t, logs, "Starting Prometheus Operator")
		// At its start it asks what it may do (SelfSubjectAccessReviews)
		// and logs what it misses; later denials are "forbidden".
		require.NotContains(t, logs, "missing permission", "internal/testenv/operator/rbac misses a permission")
		require.NotContains(t, strings.ToLower(logs), "forbidden", "an RBAC denial: internal/testenv/operator/rbac misses a permission")
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

// startOperator installs the monitoring.coreos.com CRDs of deploy/crds
// (applied, so it may run again) and runs prometheus-operator's operator
// with the RBAC its documentation installs (internal/testenv/operator),
// ready when it returns. id is its --controller-id: empty, its default,
// reconciles the Prometheus objects without the
// operator.prometheus.io/controller-id annotation or with an empty value.
func (cl *cluster) startOperator(t testing.TB, id string) *operator.Process {
	t.Helper()
	crds, err := filepath.Glob("../../deploy/crds/monitoring.coreos.com_*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, crds)
	for _, crd := range crds {
		cl.applyFile(t, crd)
	}
	return operator.Start(t, cl.node.Kubeconfig, id)
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
// Each of edits changes the Prometheus and the ServiceMonitor before they
// are created. Prometheus is not waited for: see waitOperatorPrometheus.
func (cl *cluster) operatorPrometheus(t testing.TB, name string, replicas int,
	edits ...func(*monitoringv1.Prometheus, *monitoringv1.ServiceMonitor),
) *monitoringv1.Prometheus {
	t.Helper()
	ctx := t.Context()
	cl.operatorVolumes(t, replicas, func(i int) string { return operatorClaimName(name, i) }, "prometheus-db")

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
	for _, edit := range edits {
		edit(prom, sm)
	}
	for _, obj := range []client.Object{sm, rule, prom} {
		require.NoError(t, cl.c.Create(ctx, obj), "create %T %s", obj, name)
	}
	return prom
}

// operatorVolumes creates the storage of a workload prometheus-operator
// runs with persistent storage: a StorageClass operatorStorageClass (the
// operator checks the class exists) and, bound in advance to the claim of
// each replica (claim names it), a hostPath volume of that class
// (operatorVolumeName) holding the sub-path subPath the operator mounts,
// owned by operatorUID:operatorGID: the kubelet would create it as root,
// where the process cannot write.
func (cl *cluster) operatorVolumes(t testing.TB, replicas int, claim func(replica int) string, subPath string) {
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
		name := claim(i)
		pv := operatorVolumeName(name)
		require.NoError(t, cl.node.HostPathVolumeOfClass(ctx, operatorStorageClass, pv, "default", name, "1Gi", operatorUID, operatorGID))
		sub := filepath.Join(cl.node.HostPathDir(pv), subPath)
		require.NoError(t, os.MkdirAll(sub, 0o750))
		require.NoError(t, os.Chown(sub, operatorUID, operatorGID))
	}
}

// waitOperatorPrometheus waits until the replicas pods of the operator's
// Prometheus name (prometheus-<name>-<i>) are ready, and returns their
// names.
func (cl *cluster) waitOperatorPrometheus(t testing.TB, name string, replicas int) []string {
	t.Helper()
	return cl.waitReplicas(t, replicas, func(i int) string { return "prometheus-" + name + "-" + strconv.Itoa(i) })
}

// operatorClaimUIDs returns the UIDs of the data claims of the replicas
// of the operator's Prometheus name, by claim name: the takeover must keep
// the same claims.
func (cl *cluster) operatorClaimUIDs(t testing.TB, name string, replicas int) map[string]types.UID {
	t.Helper()
	return cl.claimUIDs(t, replicas, func(i int) string { return operatorClaimName(name, i) })
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
