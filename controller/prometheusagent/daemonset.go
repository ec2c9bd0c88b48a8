package prometheusagent

import (
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"k8s.io/utils/ptr"
)

// invalidInDaemonSet are the fields of a, an agent in DaemonSet mode,
// that prometheus-operator's validation refuses in that mode (the CRD's
// x-kubernetes-validations since v0.88.0, same rules and messages at
// v0.93.1), each as "<path>: <message>", in the rules' order: an
// API server with an older CRD lets such an agent through, which is then
// an invalid spec (promoperator.Kind.Invalid). None in StatefulSet mode.
func invalidInDaemonSet(a *monitoringv1alpha1.PrometheusAgent) []string {
	s := a.Spec
	if !daemonSet(s.Mode) {
		return nil
	}
	var out []string
	for _, r := range []struct {
		path string
		set  bool
	}{
		{"replicas", s.Replicas != nil},
		{"storage", s.Storage != nil},
		{"shards", ptr.Deref(s.Shards, 0) > 1},
		{"persistentVolumeClaimRetentionPolicy", s.PersistentVolumeClaimRetentionPolicy != nil},
		{"scrapeConfigSelector", s.ScrapeConfigSelector != nil},
		{"probeSelector", s.ProbeSelector != nil},
		{"scrapeConfigNamespaceSelector", s.ScrapeConfigNamespaceSelector != nil},
		{"probeNamespaceSelector", s.ProbeNamespaceSelector != nil},
		{"serviceMonitorSelector", s.ServiceMonitorSelector != nil},
		{"serviceMonitorNamespaceSelector", s.ServiceMonitorNamespaceSelector != nil},
		{"additionalScrapeConfigs", s.AdditionalScrapeConfigs != nil},
		{"shardingStrategy", s.ShardingStrategy != nil},
	} {
		if !r.set {
			continue
		}
		msg := r.path + " cannot be set when mode is DaemonSet"
		if r.path == "shards" {
			msg = "shards cannot be greater than 1 when mode is DaemonSet"
		}
		out = append(out, r.path+": "+msg)
	}
	return out
}
