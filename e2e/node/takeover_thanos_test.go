package node

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/controller/promserver/thanos"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

const (
	// thanosName is TestTakeoverOnNode's Prometheus of two replicas with
	// the Thanos sidecar (issue 37 item 2).
	thanosName = "thanos"
	// thanosImage is the sidecar's image, prometheus-operator's default
	// Thanos (`make host-images` builds it from tools/thanos, of the same
	// version).
	thanosImage = thanos.DefaultBaseImage + ":" + thanos.DefaultVersion
	// thanosBucket is where the sidecars mount the bucket, a FILESYSTEM
	// one on a directory of the node both replicas share.
	thanosBucket = "/bucket"
	// thanosBackfill is the metric of the blocks the test makes.
	thanosBackfill = "podreload_thanos_backfill"
	// thanosSecret holds the bucket's configuration.
	thanosSecret = "thanos-objstore"
	// thanosTarget is the target whose `up` the gap through the rolls is
	// read in: an Alertmanager pod of TestTakeoverOnNode, taken over
	// before and never restarted after the upgrade; thanosScrape the
	// Prometheus' scrape interval (operatorPrometheus').
	thanosTarget, thanosScrape = "alertmanager-handed-0", 5 * time.Second
)

// thanosImageArchive is the archive of thanosImage.
func thanosImageArchive(t testing.TB) string {
	t.Helper()
	path, err := toolbin.Path(filepath.Join("images", "thanos-"+runtime.GOARCH+".tar"))
	require.NoError(t, err, "`make bin/images/thanos-%s.tar` builds it", runtime.GOARCH)
	return path
}

// thanosState is what the takeover of thanosPrometheus must keep: its
// pods, the UIDs of their claims, and the blocks in the bucket (the
// bytes of each block's meta.json there, by block ID).
type thanosState struct {
	pods   []string
	claims map[string]types.UID
	blocks map[string][]byte
}

// thanosBucketDir is the node's directory of the bucket.
func (cl *cluster) thanosBucketDir() string { return cl.node.HostPathDir("thanos-bucket") }

// thanosPrometheus creates in default, for the operator to run, the
// Prometheus thanosName of two replicas as operatorPrometheus does,
// scraping the Alertmanagers' governing Service (thanosTarget among
// them), with the Thanos sidecar of thanosImage: a FILESYSTEM bucket from a Secret,
// on a hostPath directory mounted by spec.thanos.volumeMounts, the
// sidecar asking Prometheus for its configuration every 2 s, and, by
// spec.containers, a readiness probe of the sidecar's own /-/ready (it
// is ready once it has Prometheus' external labels): a pod is then ready
// only once its Store API answers.
func (cl *cluster) thanosPrometheus(t testing.TB) {
	t.Helper()
	dir := cl.thanosBucketDir()
	require.NoError(t, os.MkdirAll(dir, 0o750))
	require.NoError(t, os.Chown(dir, operatorUID, operatorGID))
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: thanosSecret},
		StringData: map[string]string{"objstore.yaml": "type: FILESYSTEM\nconfig:\n  directory: " + thanosBucket + "\n"},
	}
	require.NoError(t, cl.c.Create(t.Context(), secret))
	cl.operatorPrometheus(t, thanosName, 2, func(p *monitoringv1.Prometheus, sm *monitoringv1.ServiceMonitor) {
		sm.Spec.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"operated-alertmanager": "true"}}
		p.Spec.Thanos = &monitoringv1.ThanosSpec{
			Image:               ptr.To(thanosImage),
			ObjectStorageConfig: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret.Name}, Key: "objstore.yaml"},
			GetConfigInterval:   monitoringv1.Duration("2s"),
			VolumeMounts:        []corev1.VolumeMount{{Name: "bucket", MountPath: thanosBucket}},
		}
		p.Spec.Volumes = []corev1.Volume{{Name: "bucket", VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: ptr.To(corev1.HostPathDirectory)},
		}}}
		p.Spec.Containers = []corev1.Container{{
			Name: thanos.ContainerName,
			ReadinessProbe: &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/-/ready", Port: intstr.FromString("http")}},
				PeriodSeconds: 1,
			},
		}}
	})
}

// waitThanosPrometheus waits until the pods of thanosPrometheus are
// ready, then makes a block in the first replica's TSDB and waits until
// its sidecar uploaded it, and returns the state.
func (cl *cluster) waitThanosPrometheus(t testing.TB) *thanosState {
	t.Helper()
	st := &thanosState{
		pods:   cl.waitOperatorPrometheus(t, thanosName, 2),
		claims: cl.operatorClaimUIDs(t, thanosName, 2),
		blocks: map[string][]byte{},
	}
	cl.thanosBlock(t, st, "before")
	return st
}

// thanosTSDB is the node's directory of the TSDB of the replica of
// thanosPrometheus (the sub-path of its claim's volume).
func (cl *cluster) thanosTSDB(replica int) string {
	return filepath.Join(cl.node.HostPathDir(operatorVolumeName(operatorClaimName(thanosName, replica))), "prometheus-db")
}

// thanosBlock makes, with promtool, a block of thanosBackfill{phase=phase}
// in an aligned 2-hour range (the first block's starts 8 to 10 hours ago,
// each next one's 2 hours later), puts it into the first replica's
// TSDB, waits until its sidecar has uploaded it once
// (thanos_shipper_uploads_total one more) and adds it to st.
func (cl *cluster) thanosBlock(t testing.TB, st *thanosState, phase string) {
	t.Helper()
	_, uploads := cl.shipper(t, st.pods[0])
	require.GreaterOrEqual(t, uploads, 0.0, "the uploads of %s's sidecar", st.pods[0])
	promtool, err := toolbin.Path("promtool")
	require.NoError(t, err)
	// Blocks of 2 hours, aligned: the first 8 to 6 hours ago, each
	// next one the 2 hours after it, none overlapping Prometheus' head.
	start := time.Now().Add(-8 * time.Hour).Truncate(2 * time.Hour).Add(time.Duration(len(st.blocks)) * 2 * time.Hour)
	var om strings.Builder
	fmt.Fprintf(&om, "# TYPE %s gauge\n", thanosBackfill)
	for i := range 10 {
		fmt.Fprintf(&om, "%s{phase=%q} %d %d\n", thanosBackfill, phase, i, start.Add(time.Duration(i+1)*time.Minute).Unix())
	}
	om.WriteString("# EOF\n")
	// On the volume, for the rename into the TSDB.
	work := filepath.Join(filepath.Dir(cl.thanosTSDB(0)), "backfill-"+phase)
	require.NoError(t, os.MkdirAll(work, 0o750))
	in := filepath.Join(work, "in.om")
	require.NoError(t, os.WriteFile(in, []byte(om.String()), 0o640))
	out := filepath.Join(work, "blocks")
	b, err := exec.CommandContext(t.Context(), promtool, "tsdb", "create-blocks-from", "openmetrics", in, out).CombinedOutput()
	require.NoError(t, err, "promtool: %s", b)
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	require.Len(t, entries, 1, "the blocks promtool made: %s", b)
	id := entries[0].Name()
	require.NoError(t, filepath.WalkDir(filepath.Join(out, id), func(path string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, operatorUID, operatorGID)
	}))
	require.NoError(t, os.Rename(filepath.Join(out, id), filepath.Join(cl.thanosTSDB(0), id)))
	require.NoError(t, os.RemoveAll(work))

	meta := filepath.Join(cl.thanosBucketDir(), id, "meta.json")
	eventually(t, 2*time.Minute, "block "+id+" ("+phase+") uploaded by "+st.pods[0], func() error {
		if _, err := os.Stat(meta); err != nil {
			return err
		}
		if _, n := cl.shipper(t, st.pods[0]); n != uploads+1 {
			return fmt.Errorf("%s: %v uploads, %v before the block", st.pods[0], n, uploads)
		}
		return nil
	})
	st.blocks[id], err = os.ReadFile(meta)
	require.NoError(t, err)
	t.Logf("block %s (%s) in the bucket", id, phase)
}

// shipper returns the sidecar's counts of the pod: the shipper's syncs
// of the TSDB directory and its uploads, since the sidecar started
// (thanos_shipper_dir_syncs_total and thanos_shipper_uploads_total); -1
// for a count it does not report (yet).
func (cl *cluster) shipper(t testing.TB, pod string) (syncs, uploads float64) {
	syncs, uploads = -1, -1
	b, err := cl.kube.CoreV1().RESTClient().Get().
		AbsPath("/api/v1/namespaces/default/pods/" + pod + ":" + strconv.Itoa(thanos.HTTPPort) + "/proxy/metrics").DoRaw(t.Context())
	if err != nil {
		return syncs, uploads
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch name {
		case "thanos_shipper_dir_syncs_total":
			syncs = v
		case "thanos_shipper_uploads_total":
			uploads = v
		}
	}
	return syncs, uploads
}

// storeWatch asks the Store API of each sidecar of pods, every second,
// for the series of up (tools/thanos/storequery, Thanos' own client), and
// keeps each instant at which none of them answered with a series of its
// own replica.
type storeWatch struct {
	start      time.Time
	stop, done chan struct{}
	mu         sync.Mutex
	polls      int
	answered   map[string]int
	silent     []string
}

// watchStores starts a storeWatch of pods; end stops it.
func (cl *cluster) watchStores(t testing.TB, pods []string) *storeWatch {
	t.Helper()
	query, err := toolbin.Path("thanos-storequery")
	require.NoError(t, err, "`make bin/thanos-storequery` builds it")
	w := &storeWatch{start: time.Now(), stop: make(chan struct{}), done: make(chan struct{}), answered: map[string]int{}}
	ctx := t.Context()
	go func() {
		defer close(w.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			var errs []string
			for _, pod := range pods {
				if err := cl.storeAnswers(ctx, query, pod); err != nil {
					errs = append(errs, err.Error())
					continue
				}
				w.mu.Lock()
				w.answered[pod]++
				w.mu.Unlock()
			}
			w.mu.Lock()
			w.polls++
			if len(errs) == len(pods) {
				w.silent = append(w.silent, time.Now().Format("15:04:05.000")+": "+strings.Join(errs, "; "))
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// storeAnswers returns nil when the Store API of the pod's sidecar
// answers with a series of up of its own replica.
func (cl *cluster) storeAnswers(ctx context.Context, query, pod string) error {
	p, err := cl.kube.CoreV1().Pods("default").Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("%s: %w", pod, err)
	}
	if p.Status.PodIP == "" || p.DeletionTimestamp != nil {
		return fmt.Errorf("%s: no address, or deleted", pod)
	}
	out, err := cl.node.Command(ctx, query, "-addr", p.Status.PodIP+":"+strconv.Itoa(thanos.GRPCPort), "-metric", "up").Output()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", pod, err, bytes.TrimSpace(errOutput(err)))
	}
	if !slices.Contains(strings.Fields(string(out)), pod) {
		return fmt.Errorf("%s: no series of replica %s in %q", pod, pod, out)
	}
	return nil
}

// errOutput is the standard error of a command that failed, if kept.
func errOutput(err error) []byte {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.Stderr
	}
	return nil
}

// end stops the watch and returns its polls, the polls each pod
// answered, and the instants no pod answered.
func (w *storeWatch) end() (polls int, answered map[string]int, silent []string) {
	close(w.stop)
	<-w.done
	return w.polls, w.answered, w.silent
}

// checkThanos waits until the pods of thanosPrometheus run the
// controller's sidecar (ours) or the operator's, its StatefulSet rolled
// out, then checks that the Store API answered through the roll (w, at
// every instant from one pod at least, and from each pod), the two
// replicas' TSDBs merged have no gap in `up` of thanosTarget longer than
// thanosScrape through the roll, the pods keep their claims, each sidecar (a new process) has synced the TSDB and
// uploaded nothing, the bucket holds every block of st once with the
// meta.json of its upload, and the first replica's shipper file lists
// them.
func (cl *cluster) checkThanos(t *testing.T, st *thanosState, w *storeWatch, ours bool) {
	cl.waitPodsRunningOurs(t, thanosName, st.pods, ours)
	eventually(t, 5*time.Minute, "StatefulSet prometheus-"+thanosName+" rolled out", func() error {
		return cl.rolledOut(t, "prometheus-"+thanosName, 2)
	})
	cl.waitPodsRunningOurs(t, thanosName, st.pods, ours)
	polls, answered, silent := w.end()
	t.Logf("Store API: %d polls through the roll, answered by %v", polls, answered)
	require.Empty(t, silent, "instants at which no sidecar's Store API answered")
	for _, pod := range st.pods {
		require.Positive(t, answered[pod], "polls %s's Store API answered", pod)
	}
	require.Equal(t, st.claims, cl.operatorClaimUIDs(t, thanosName, 2), "the same PVCs")
	// A sample of each replica after the roll, in both TSDBs.
	time.Sleep(thanosScrape)
	var samples []time.Time
	for _, pod := range st.pods {
		ts, err := cl.seriesSamples(t, pod, fmt.Sprintf("up{job=%q,pod=%q}", "alertmanager-operated", thanosTarget), "", w.start)
		require.NoError(t, err)
		require.NotEmpty(t, ts[""], "samples of up of %s in %s since the roll began", thanosTarget, pod)
		samples = append(samples, ts[""]...)
	}
	gap, at := widestGap(samples)
	t.Logf("longest gap in up of %s across the replicas' TSDBs through the roll: %v at %s", thanosTarget, gap, at.Format(time.RFC3339Nano))
	// A scrape's timestamp is its interval's when it starts on time (to
	// 2 ms), its own when late: a second more for a loaded machine.
	require.LessOrEqual(t, gap, thanosScrape+time.Second, "the longest gap in up of %s across the replicas, at %s", thanosTarget, at.Format(time.RFC3339Nano))

	for _, pod := range st.pods {
		eventually(t, 2*time.Minute, "a sync of "+pod+"'s shipper", func() error {
			if syncs, _ := cl.shipper(t, pod); syncs < 1 {
				return fmt.Errorf("%s: %v syncs", pod, syncs)
			}
			return nil
		})
		_, uploads := cl.shipper(t, pod)
		require.Zero(t, uploads, "blocks %s's sidecar uploaded (again) since it started", pod)
	}
	entries, err := os.ReadDir(cl.thanosBucketDir())
	require.NoError(t, err)
	var inBucket []string
	for _, e := range entries {
		inBucket = append(inBucket, e.Name())
	}
	var ids []string
	for id, meta := range st.blocks {
		ids = append(ids, id)
		b, err := os.ReadFile(filepath.Join(cl.thanosBucketDir(), id, "meta.json"))
		require.NoError(t, err)
		require.Equal(t, string(meta), string(b), "block %s's meta.json in the bucket, as uploaded", id)
	}
	require.ElementsMatch(t, ids, inBucket, "the bucket's blocks")
	b, err := os.ReadFile(filepath.Join(cl.thanosTSDB(0), thanos.ShipperMetaFile))
	require.NoError(t, err, "the shipper's file of %s", st.pods[0])
	for _, id := range ids {
		require.Contains(t, string(b), id, "the shipper's file of %s", st.pods[0])
	}
}

// deleteThanosPrometheus deletes the objects of thanosPrometheus and
// waits until its pods are gone.
func (cl *cluster) deleteThanosPrometheus(t testing.TB, st *thanosState) {
	t.Helper()
	cl.deleteOperatorPrometheus(t, thanosName, st.pods, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: thanosSecret}})
}
