package node

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// The upgrade of the controller on the node (issue 41, item 2): the
// previous release's image (make bin/images/podreload-previous-<arch>.tar,
// its binaries built from the git history) runs the controller, and its
// config-reloaders, until the Deployment's image changes to the current
// one, as `helm upgrade` changes it.
const (
	previousImage = "ghcr.io/podreload/podreload:previous"
	// controllerNamespace and controllerName are deploy/controller.yaml's.
	controllerNamespace, controllerName = "podreload-system", "podreload-controller"
)

// previousImageArchive returns the archive of the previous release's image.
func previousImageArchive(t testing.TB) string {
	t.Helper()
	path, err := toolbin.Path(filepath.Join("images", "podreload-previous-"+runtime.GOARCH+".tar"))
	require.NoError(t, err, "`make bin/images/podreload-previous-%s.tar` builds it", runtime.GOARCH)
	return path
}

// deployPreviousController applies deploy/, its controller Deployment
// running the previous release's image, its config-reloaders too, and
// waits for it to be available.
func (cl *cluster) deployPreviousController(t testing.TB) {
	t.Helper()
	data, err := os.ReadFile("../../deploy/controller.yaml")
	require.NoError(t, err)
	manifest := strings.Replace(string(data), "image: "+currentImage(t), "image: "+previousImage, 1)
	manifest = strings.Replace(manifest, "- --controller-id=podreload", "- --controller-id=podreload\n            - --reloader-image="+previousImage, 1)
	require.NotEqual(t, string(data), manifest)
	var kust struct{ Resources []string }
	b, err := os.ReadFile("../../deploy/kustomization.yaml")
	require.NoError(t, err)
	require.NoError(t, sigsyaml.Unmarshal(b, &kust))
	require.Contains(t, kust.Resources, "controller.yaml")
	for _, r := range kust.Resources {
		if r == "controller.yaml" {
			cl.applyYAML(t, "deploy/controller.yaml (the previous release)", []byte(manifest))
			continue
		}
		cl.applyFile(t, filepath.Join("../../deploy", r))
	}
	cl.waitControllerImage(t, previousImage)
}

// currentImage is the image deploy/controller.yaml runs.
func currentImage(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile("../../deploy/controller.yaml")
	require.NoError(t, err)
	for line := range strings.SplitSeq(string(data), "\n") {
		if image, ok := strings.CutPrefix(strings.TrimSpace(line), "image: "); ok {
			return image
		}
	}
	t.Fatal("deploy/controller.yaml has no image")
	return ""
}

// upgradeController applies deploy/controller.yaml as it is, the current
// image (its config-reloaders' image the one it defaults to), and waits
// until its new pod leads and has reconciled an object of each kind
// (PrometheusServer, Prometheus, Alertmanager).
func (cl *cluster) upgradeController(t testing.TB) {
	t.Helper()
	cl.applyFile(t, "../../deploy/controller.yaml")
	pod := cl.waitControllerImage(t, currentImage(t))
	eventually(t, 2*time.Minute, "the new controller pod "+pod+" leads", func() error {
		var lease coordinationv1.Lease
		if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: controllerNamespace, Name: controllerName}, &lease); err != nil {
			return err
		}
		if h := ptrValue(lease.Spec.HolderIdentity); !strings.HasPrefix(h, pod) {
			return fmt.Errorf("the Lease is %q's", h)
		}
		return nil
	})
	for _, kind := range []string{"PrometheusServer", "Prometheus", "Alertmanager"} {
		eventually(t, time.Minute, "the new controller reconciled the "+kind+" objects", func() error {
			b, err := cl.kube.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/" + controllerNamespace + "/pods/" + pod + ":8080/proxy/metrics").DoRaw(t.Context())
			if err != nil {
				return err
			}
			for line := range strings.SplitSeq(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, `podreload_controller_reconciles_total{kind="`+kind+`"} `); ok && v != "0" {
					return nil
				}
			}
			return fmt.Errorf("no reconcile of a %s yet", kind)
		})
	}
}

// waitControllerImage waits until the controller Deployment has rolled
// out, its one pod running image and available, and returns the pod.
func (cl *cluster) waitControllerImage(t testing.TB, image string) string {
	t.Helper()
	var pod string
	eventually(t, startTimeout, "the controller running "+image, func() error {
		var d appsv1.Deployment
		if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: controllerNamespace, Name: controllerName}, &d); err != nil {
			return err
		}
		if d.Status.ObservedGeneration != d.Generation || d.Status.UpdatedReplicas != 1 || d.Status.AvailableReplicas != 1 || d.Status.Replicas != 1 {
			return fmt.Errorf("rolling out: %+v", d.Status)
		}
		var pods corev1.PodList
		if err := cl.c.List(t.Context(), &pods, client.InNamespace(controllerNamespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
			return err
		}
		if len(pods.Items) != 1 || pods.Items[0].Spec.Containers[0].Image != image || pods.Items[0].DeletionTimestamp != nil {
			return fmt.Errorf("%d controller pods", len(pods.Items))
		}
		pod = pods.Items[0].Name
		return nil
	})
	return pod
}

// workload is a StatefulSet of default and its pods.
type workload struct {
	sts  string
	pods []string
}

// createServers creates in default a PrometheusServer of one replica for
// each source of its reloader (API and volume), for the previous
// release's controller to run, and returns their workloads. Their
// pods are not waited for: see waitWorkloads.
func (cl *cluster) createServers(t testing.TB) []workload {
	t.Helper()
	var out []workload
	for _, source := range []string{"api", "volume"} {
		srv := &v1alpha1.PrometheusServer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "upgraded-" + source}}
		srv.Spec.Replicas = ptr.To[int32](1)
		srv.Spec.ServiceAccountName = "prometheus"
		srv.Spec.ServiceMonitorSelector, srv.Spec.RuleSelector = &metav1.LabelSelector{}, &metav1.LabelSelector{}
		srv.Spec.Reloader.Source = source
		require.NoError(t, cl.c.Create(t.Context(), srv), "create PrometheusServer %s", srv.Name)
		out = append(out, workload{sts: srv.Name, pods: []string{srv.Name + "-0"}})
	}
	return out
}

// waitWorkloads waits until every pod of workloads is ready.
func (cl *cluster) waitWorkloads(t testing.TB, workloads []workload) {
	t.Helper()
	for _, w := range workloads {
		for _, pod := range w.pods {
			eventually(t, startTimeout, "pod "+pod+" of "+w.sts+" ready", func() error {
				_, err := cl.readyPod(t, "default", pod)
				return err
			})
		}
	}
}

// podState is what an upgrade must leave as it was of a pod.
type podState struct {
	UID      string
	Restarts int32
	Images   []string
}

// workloadState is what an upgrade must leave as it was of a workload:
// its StatefulSet's generation (raised by any change of its spec) and
// its pods.
type workloadState struct {
	generation int64
	pods       map[string]podState
}

// workloadStates returns the state of each workload, by StatefulSet.
func (cl *cluster) workloadStates(t testing.TB, workloads []workload) map[string]workloadState {
	t.Helper()
	out := map[string]workloadState{}
	for _, w := range workloads {
		st := workloadState{pods: map[string]podState{}}
		for _, name := range w.pods {
			var p corev1.Pod
			require.NoError(t, cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: name}, &p))
			ps := podState{UID: string(p.UID)}
			for _, c := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
				ps.Restarts += c.RestartCount
			}
			for _, c := range slices.Concat(p.Spec.InitContainers, p.Spec.Containers) {
				ps.Images = append(ps.Images, c.Name+"="+c.Image)
			}
			st.pods[name] = ps
		}
		var s appsv1.StatefulSet
		require.NoError(t, cl.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: w.sts}, &s))
		st.generation = s.Generation
		out[w.sts] = st
	}
	return out
}

func ptrValue(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
