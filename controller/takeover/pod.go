package takeover

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
)

// The pod settings of prometheus-operator's specs as the pod's
// (pkg/k8s/pod.go), which every kind renders alike.

// PodDNSConfig is c as the pod's DNS configuration.
func PodDNSConfig(c *monitoringv1.PodDNSConfig) *corev1.PodDNSConfig {
	if c == nil {
		return nil
	}
	out := &corev1.PodDNSConfig{Nameservers: c.Nameservers, Searches: c.Searches}
	for _, o := range c.Options {
		out.Options = append(out.Options, corev1.PodDNSConfigOption{Name: o.Name, Value: o.Value})
	}
	return out
}

// HostAliases is aliases as the pod's.
func HostAliases(aliases []monitoringv1.HostAlias) []corev1.HostAlias {
	var out []corev1.HostAlias
	for _, a := range aliases {
		out = append(out, corev1.HostAlias{IP: a.IP, Hostnames: a.Hostnames})
	}
	return out
}

// DNSPolicy is the pod's DNS policy: p, else ClusterFirstWithHostNet on
// the host's network (as prometheus-operator sets it), else the API
// server's default.
func DNSPolicy(p *monitoringv1.DNSPolicy, hostNetwork bool) corev1.DNSPolicy {
	if p != nil {
		return corev1.DNSPolicy(*p)
	}
	if hostNetwork {
		return corev1.DNSClusterFirstWithHostNet
	}
	return ""
}
