package node

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/internal/testenv/node"
)

// takeoverID is the controller id deploy/controller.yaml gives the
// controller.
const takeoverID = "podreload"

// TestTakeoverOnNode is the acceptance of the takeover (issue 26):
// prometheus-operator's operator runs a Prometheus of two replicas on
// persistent volumes; annotated, the controller takes it over in place (the
// same claims, the samples from before still there, rule edits served,
// ConfigApplied True); the annotation removed, the operator takes it back,
// the same claims again and the samples of both periods there.
//
// The takeover is the previous release's controller's, upgraded to the
// current one in the middle (issue 41, item 2): it runs then a
// PrometheusServer of each source and an Alertmanager taken over too, none
// of whose pods the upgrade may restart or recreate.
//
// Beside it, annotated and handed back at the same time, a Prometheus of
// one replica on a persistent volume with listenLocal, a proxy container
// in kube-rbac-proxy's place in front of it, and the endpointslice role
// (localPrometheus, issue 37): the previous release refused those fields,
// so the current controller takes it over after the upgrade. Taken over
// and handed back, it keeps its claim and its samples from before, runs
// the proxy, serves nothing on the pod's port 9090 but everything through
// the proxy, and discovers and scrapes its target through EndpointSlices.
//
// Beside them, a Prometheus of two replicas with the Thanos sidecar, a
// FILESYSTEM bucket on the node (thanosPrometheus, issue 37 item 2),
// annotated after the upgrade and handed back with the others: a block
// made before the takeover and one after it are each in the bucket once,
// uploaded once (no sidecar uploads anything again after a roll), the
// sidecars' Store API answers through both rolls, from one pod at least
// at every instant, and the replicas' TSDBs merged have no gap in `up`
// of a target longer than the scrape interval.
//
// Last, on the same node, a PrometheusAgent is taken over and handed back
// (testAgentTakeover, issue 39).
func TestTakeoverOnNode(t *testing.T) {
	cl := startCluster(t, node.Options{ExtraImages: []string{previousImageArchive(t), proxyImageArchive(t), thanosImageArchive(t)}})
	cl.installAlertmanagerCRDs(t)
	operator := cl.startOperator(t, "")
	const name = "handed"
	cl.operatorPrometheus(t, name, 2)
	cl.localPrometheus(t)
	cl.thanosPrometheus(t)
	cl.operatorAlertmanager(t, name, 2)
	pods := cl.waitOperatorPrometheus(t, name, 2)
	amPods := cl.waitAlertmanager(t, name, 2)
	amClaims := cl.alertmanagerClaimUIDs(t, name, 2)
	for _, pod := range pods {
		eventually(t, 2*time.Minute, "series "+operatorRecord+" in "+pod, func() error { return cl.hasSeries(t, pod, operatorRecord) })
	}
	local := cl.waitLocalPrometheus(t)
	th := cl.waitThanosPrometheus(t)
	claims := cl.operatorClaimUIDs(t, name, 2)
	before := time.Now()

	// Taken over by the previous release's controller, which the current
	// one replaces (upgradeController).
	cl.deployPreviousController(t)
	servers := cl.createServers(t)
	cl.annotateController(t, name, takeoverID)
	cl.annotateController(t, localName, takeoverID)
	cl.annotateAlertmanager(t, name, takeoverID)
	t.Run("taken over: the pods roll onto the same claims", func(t *testing.T) {
		cl.waitPodsRunningOurs(t, name, pods, true)
		require.Equal(t, claims, cl.operatorClaimUIDs(t, name, 2), "the same PVCs")
		for _, pod := range pods {
			require.NoError(t, cl.seriesAt(t, pod, operatorRecord, before), "%s: a sample from before the takeover", pod)
		}
	})
	t.Run("the Alertmanager taken over: its pods roll onto the same claims", func(t *testing.T) {
		cl.waitPodsRunningOurs(t, name, amPods, true)
		require.Equal(t, amClaims, cl.alertmanagerClaimUIDs(t, name, 2), "the same PVCs")
	})
	t.Run("the previous release refuses the listenLocal Prometheus", func(t *testing.T) {
		eventually(t, time.Minute, "UnsupportedFields True", func() error {
			return cl.prometheusCondition(t, localName, "UnsupportedFields", monitoringv1.ConditionTrue)
		})
		cl.waitPodsRunningOurs(t, localName, []string{local.pod}, false)
	})
	t.Run("the controller upgraded: no pod restarted or recreated", func(t *testing.T) {
		workloads := append([]workload{{"prometheus-" + name, pods}, {"alertmanager-" + name, amPods}}, servers...)
		cl.waitWorkloads(t, workloads)
		before := cl.workloadStates(t, workloads)
		for sts, st := range before {
			for pod, p := range st.pods {
				require.Contains(t, p.Images, "config-reloader="+previousImage, "%s of %s runs the previous release's config-reloader", pod, sts)
			}
		}
		cl.upgradeController(t)
		// A write of a StatefulSet would have raised its generation at
		// once, its pods going within seconds: 15 s of the same pods.
		end := time.Now().Add(15 * time.Second)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for time.Now().Before(end) {
			<-tick.C
			require.Equal(t, before, cl.workloadStates(t, workloads),
				"the StatefulSets' generations (a template changed) and their pods (UID, restarts, images)")
		}
		require.Equal(t, claims, cl.operatorClaimUIDs(t, name, 2), "the same PVCs")
		require.Equal(t, amClaims, cl.alertmanagerClaimUIDs(t, name, 2), "the same PVCs of the Alertmanager")
	})
	cl.annotateController(t, thanosName, takeoverID)
	watch := cl.watchStores(t, th.pods)
	t.Run("ConfigApplied", func(t *testing.T) {
		eventually(t, 2*time.Minute, "ConfigApplied True", func() error {
			return cl.prometheusCondition(t, name, "ConfigApplied", monitoringv1.ConditionTrue)
		})
	})
	t.Run("a rule edit is served", func(t *testing.T) {
		const record = "podreload:takeover:edit"
		edited := time.Now()
		cl.addOperatorRule(t, name, record)
		for _, pod := range pods {
			eventuallyEvery(t, 30*time.Second, 20*time.Millisecond, "rule "+record+" in "+pod, func() error { return cl.hasRule(t, pod, record) })
		}
		// A figure, not an assert: make bench measures it.
		t.Logf("rule edit served by both replicas %v after the edit", time.Since(edited).Round(time.Millisecond))
	})
	t.Run("a Prometheus with a refused field stays untouched", func(t *testing.T) {
		refused := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: "refused", Annotations: map[string]string{"operator.prometheus.io/controller-id": takeoverID},
		}}
		topology := monitoringv1.TopologyShardingStrategyMode
		refused.Spec.ShardingStrategy = &monitoringv1.ShardingStrategy{Mode: &topology}
		refused.Spec.ServiceMonitorSelector = &metav1.LabelSelector{}
		require.NoError(t, cl.c.Create(t.Context(), refused))
		eventually(t, time.Minute, "UnsupportedFields and its Event", func() error {
			if err := cl.prometheusCondition(t, "refused", "UnsupportedFields", monitoringv1.ConditionTrue); err != nil {
				return err
			}
			events, err := cl.kube.EventsV1().Events("default").List(t.Context(), metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, e := range events.Items {
				if e.Reason == "UnsupportedFields" && e.Regarding.Name == "refused" && strings.Contains(e.Note, "shardingStrategy") {
					return nil
				}
			}
			return errors.New("no UnsupportedFields Event")
		})
		_, err := cl.kube.AppsV1().StatefulSets("default").Get(t.Context(), "prometheus-refused", metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "a StatefulSet for a refused Prometheus: %v", err)
	})
	t.Run("listenLocal behind a proxy, the endpointslice role: taken over on the same claim", func(t *testing.T) {
		cl.checkLocal(t, local, true, before)
	})
	t.Run("the Thanos sidecar taken over: its blocks uploaded once, the Store API answering through the roll", func(t *testing.T) {
		cl.checkThanos(t, th, watch, true)
		cl.thanosBlock(t, th, "after")
	})
	during := time.Now()
	eventually(t, time.Minute, "a sample during the takeover", func() error {
		if err := cl.seriesAt(t, pods[0], operatorRecord, during); err != nil {
			return err
		}
		return cl.seriesAt(t, proxied(local.pod), localUp, during)
	})

	cl.annotateController(t, name, "")
	cl.annotateController(t, localName, "")
	watch = cl.watchStores(t, th.pods)
	cl.annotateController(t, thanosName, "")
	t.Run("handed back: the operator's pods on the same claims", func(t *testing.T) {
		cl.waitPodsRunningOurs(t, name, pods, false)
		require.Equal(t, claims, cl.operatorClaimUIDs(t, name, 2), "the same PVCs")
		for _, pod := range pods {
			require.NoError(t, cl.seriesAt(t, pod, operatorRecord, before), "%s: a sample from before the takeover", pod)
			require.NoError(t, cl.seriesAt(t, pod, operatorRecord, during), "%s: a sample from during the takeover", pod)
		}
		eventually(t, time.Minute, "the reloaders' Role deleted", func() error { return cl.reloaderRoleGone(t, name) })
		require.NotContains(t, operator.Logs(), "forbidden")
	})
	t.Run("listenLocal behind a proxy, the endpointslice role: handed back on the same claim", func(t *testing.T) {
		cl.checkLocal(t, local, false, before, during)
	})
	t.Run("the Thanos sidecar handed back: its blocks uploaded once, the Store API answering through the roll", func(t *testing.T) {
		cl.checkThanos(t, th, watch, false)
	})
	// Off the node before the agent's gaps are measured.
	cl.deleteLocalPrometheus(t, local)
	cl.deleteThanosPrometheus(t, th)
	// On the same node, operator and controller (issue 39).
	t.Run("a PrometheusAgent remote-writing", cl.testAgentTakeover)
}

// annotateController sets the controller id of the Prometheus name.
func (cl *cluster) annotateController(t testing.TB, name, id string) {
	t.Helper()
	var p monitoringv1.Prometheus
	require.NoError(t, cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: name}, &p))
	patch := client.MergeFrom(p.DeepCopy())
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations["operator.prometheus.io/controller-id"] = id
	require.NoError(t, cl.c.Patch(t.Context(), &p, patch))
}

// waitPodsRunningOurs waits until every pod of pods is ready and runs the
// controller's sidecar (ours) or the operator's (not ours), as the pod
// template's input hash annotation tells.
func (cl *cluster) waitPodsRunningOurs(t testing.TB, name string, pods []string, ours bool) {
	t.Helper()
	for _, pod := range pods {
		eventually(t, 5*time.Minute, "pod "+pod+" ready, ours "+strconv.FormatBool(ours), func() error {
			p, err := cl.readyPod(t, "default", pod)
			if err != nil {
				return err
			}
			if _, has := p.Annotations[kube.AnnotationInputHash]; has != ours {
				return fmt.Errorf("pod %s: runs the podreload sidecar: %v", pod, has)
			}
			return nil
		})
	}
}

// reloaderRoleGone returns nil once the Role the controller gave the
// config-reloaders of the Prometheus name is deleted, as it deletes it
// handing the Prometheus back.
func (cl *cluster) reloaderRoleGone(t testing.TB, name string) error {
	err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "prometheus-" + name + "-podreload"}, &rbacv1.Role{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return errors.New("the reloaders' Role is still there")
}

// seriesAt returns nil when the pod's Prometheus has a sample of the
// metric name at instant at (within the query's 5-minute lookback).
func (cl *cluster) seriesAt(t testing.TB, pod, name string, at time.Time) error {
	var data struct {
		Result []any `json:"result"`
	}
	q := url.Values{"query": {name}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)}}
	if err := cl.prometheus(t, pod, "/api/v1/query", q, &data); err != nil {
		return err
	}
	if len(data.Result) == 0 {
		return fmt.Errorf("no sample of %s at %s", name, at.Format(time.RFC3339))
	}
	return nil
}

// prometheusCondition returns nil when the Prometheus name has the
// condition typ with status.
func (cl *cluster) prometheusCondition(t testing.TB, name, typ string, status monitoringv1.ConditionStatus) error {
	var p monitoringv1.Prometheus
	if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: name}, &p); err != nil {
		return err
	}
	return hasCondition(p.Status.Conditions, typ, status)
}

// hasCondition returns nil when conditions hold typ with status.
func hasCondition(conditions []monitoringv1.Condition, typ string, status monitoringv1.ConditionStatus) error {
	for _, c := range conditions {
		if string(c.Type) == typ {
			if c.Status != status {
				return fmt.Errorf("%s is %s: %s: %s", typ, c.Status, c.Reason, c.Message)
			}
			return nil
		}
	}
	return fmt.Errorf("no condition %s in %+v", typ, conditions)
}

// addOperatorRule adds the recording rule record to the PrometheusRule of
// operatorPrometheus name.
func (cl *cluster) addOperatorRule(t testing.TB, name, record string) {
	t.Helper()
	var pr monitoringv1.PrometheusRule
	require.NoError(t, cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: name}, &pr))
	patch := client.MergeFrom(pr.DeepCopy())
	pr.Spec.Groups[0].Rules = append(pr.Spec.Groups[0].Rules, monitoringv1.Rule{Record: record, Expr: intstr.FromString("vector(1)")})
	require.NoError(t, cl.c.Patch(t.Context(), &pr, patch))
}
