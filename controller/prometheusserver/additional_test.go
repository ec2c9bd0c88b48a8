package prometheusserver

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/kube"
)

// testAdditionalScrapeConfigs follows the Secret of additionalScrapeConfigs
// on the real API server: its jobs join the configuration, an invalid edit
// is refused with the cause (condition, Event, metric) while the last
// configuration stays, and the fix is picked up.
func (cp *controlPlane) testAdditionalScrapeConfigs(t *testing.T) {
	ns := cp.namespace(t, "additional", nil)
	run := cp.start(t, kube.Options{Namespaces: []string{ns}})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "extra-jobs"},
		Data: map[string][]byte{"jobs.yaml": []byte("- job_name: federate\n  static_configs:\n  - targets: [a:9090]\n")}}
	srv := server(ns, "main", func(s *v1alpha1.PrometheusServerSpec) {
		s.ServiceMonitorSelector = &metav1.LabelSelector{}
		s.AdditionalScrapeConfigs = &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret.Name}, Key: "jobs.yaml"}
	})
	cp.create(t, secret, srv, serviceMonitor(ns, "web", nil))
	config := cp.waitJobs(t, srv, "serviceMonitor/additional/web/0", "federate")

	edit(t, cp.c, secret, func(s *corev1.Secret) {
		s.Data["jobs.yaml"] = []byte("- job_name: federate\n- job_name: federate\n")
	})
	const want = `render config: spec.additionalScrapeConfigs: secret "additional/extra-jobs" key "jobs.yaml": job 1 "federate": another job has that name`
	cp.waitReconciled(t, srv, metav1.ConditionFalse, "InvalidSpec", want)
	cp.waitServerEvent(t, srv, "InvalidSpec", want)
	require.Equal(t, config, cp.config(t, srv), "the last configuration stays")
	require.Positive(t, metricValue(t, run.reg, "podreload_controller_reconcile_errors_total"))

	edit(t, cp.c, secret, func(s *corev1.Secret) {
		s.Data["jobs.yaml"] = []byte("- job_name: blackbox\n  static_configs:\n  - targets: [b:9115]\n")
	})
	cp.waitJobs(t, srv, "serviceMonitor/additional/web/0", "blackbox")
	cp.waitReconciled(t, srv, metav1.ConditionTrue, "Reconciled", "")
}
