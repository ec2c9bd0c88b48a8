package prometheus

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/promserver"
)

// The fixtures of the pod field tests: a PrometheusServer of podreload's
// layout beside the Prometheus objects converted, rendered with the
// controller's default images.

func testServer() *v1alpha1.PrometheusServer {
	return &v1alpha1.PrometheusServer{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "main"}}
}

func testOptions() promserver.WorkloadOptions {
	return promserver.WorkloadOptions{DefaultPrometheusImage: "quay.io/prometheus/prometheus:v3.10.0", DefaultReloaderImage: "ghcr.io/podreload/config-reloader:v0.1.0"}
}

func testPodOptions() promserver.PodOptions {
	return promserver.PodOptions{WorkloadOptions: testOptions(), RuleShards: 1}
}
