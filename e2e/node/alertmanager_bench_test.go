package node

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/internal/testenv/docsection"
	"github.com/podreload/podreload/internal/testenv/node"
)

// amEdit is one AlertmanagerConfig edit's way through the node, each
// stage timed from the API write.
type amEdit struct{ controller, served time.Duration }

// BenchmarkAlertmanagerConfigEdit times AlertmanagerConfig edits until
// Alertmanager serves them, on a real node: an Alertmanager of two
// replicas taken over by the controller (deploy/), its config-reloader
// with the API source (the default); each edit changes the matcher of the
// AlertmanagerConfig's route. Stages: the API write, the controller's
// write of the generated Secret, both replicas serving the new
// configuration (their /api/v2/status config.original).
func BenchmarkAlertmanagerConfigEdit(b *testing.B) {
	var edits []amEdit
	for b.Loop() {
		edits = runAlertmanagerEdits(b)
	}
	r := amReport(edits)
	b.Log(r)
	if path := os.Getenv(benchDocsEnv); path != "" {
		require.NoError(b, docsection.Replace(path, "node alertmanagerconfig edit", "e2e/node/bench_test.go", r))
	}
}

func runAlertmanagerEdits(b *testing.B) []amEdit {
	cl := startCluster(b, node.Options{})
	cl.deployController(b)
	const name = "bench"
	hook := cl.webhookReceiver(b, "webhook")
	cl.alertmanagerConfig(b, name, name, "PodreloadBenchEdit", hook.URL)
	cl.operatorAlertmanager(b, name, 2)
	cl.annotateAlertmanager(b, name, takeoverID)
	pods := cl.waitAlertmanager(b, name, 2)
	for _, pod := range pods {
		cl.waitConfigHas(b, pod, "- receiver: default/"+name+"/webhook\n", time.Minute)
	}
	var edits []amEdit
	for i := range benchEdits {
		value := fmt.Sprintf("PodreloadBenchEdit%d", i)
		var amc monitoringv1alpha1.AlertmanagerConfig
		require.NoError(b, cl.c.Get(b.Context(), client.ObjectKey{Namespace: "default", Name: name}, &amc))
		patch := client.MergeFrom(amc.DeepCopy())
		amc.Spec.Route.Matchers[0].Value = value
		start := time.Now()
		require.NoError(b, cl.c.Patch(b.Context(), &amc, patch))
		var e amEdit
		eventuallyEvery(b, time.Minute, 10*time.Millisecond, "controller wrote "+value, func() error {
			s, err := cl.kube.CoreV1().Secrets("default").Get(b.Context(), "alertmanager-"+name+"-generated", metav1.GetOptions{})
			if err != nil {
				return err
			}
			zr, err := gzip.NewReader(bytes.NewReader(s.Data["alertmanager.yaml.gz"]))
			if err != nil {
				return err
			}
			c, err := io.ReadAll(zr)
			if err != nil {
				return err
			}
			if !bytes.Contains(c, []byte(value)) {
				return errors.New("not in the generated Secret")
			}
			return nil
		})
		e.controller = time.Since(start)
		for _, pod := range pods {
			eventuallyEvery(b, time.Minute, 10*time.Millisecond, pod+" serves "+value, func() error {
				var st alertmanagerStatus
				if err := cl.alertmanager(b, pod, http.MethodGet, "/api/v2/status", nil, &st); err != nil {
					return err
				}
				if !strings.Contains(st.Config.Original, value) {
					return fmt.Errorf("no %s in its configuration", value)
				}
				return nil
			})
		}
		e.served = time.Since(start)
		edits = append(edits, e)
	}
	return edits
}

func amReport(edits []amEdit) string {
	if len(edits) == 0 {
		return ""
	}
	q := func(f func(amEdit) time.Duration, p float64) time.Duration { return quantile(edits, f, p) }
	var w strings.Builder
	fmt.Fprintf(&w, "\n%d AlertmanagerConfig edits (a route's matcher) on a real node (internal/testenv/node), an Alertmanager of 2 replicas taken over by the controller, config-reloader with the API source, each timed from the API write (target: p99 < 2 s):\n\n", len(edits))
	fmt.Fprintf(&w, "| stage | p50 | p99 |\n|---|---|---|\n")
	fmt.Fprintf(&w, "| API write → controller wrote the generated Secret | %s | %s |\n",
		q(func(e amEdit) time.Duration { return e.controller }, 0.5), q(func(e amEdit) time.Duration { return e.controller }, 0.99))
	fmt.Fprintf(&w, "| → both replicas serve it (`/api/v2/status` config.original) | %s | %s |\n",
		q(func(e amEdit) time.Duration { return e.served }, 0.5), q(func(e amEdit) time.Duration { return e.served }, 0.99))
	return w.String()
}
