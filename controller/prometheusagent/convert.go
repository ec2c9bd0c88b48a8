package prometheusagent

import (
	"slices"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/promoperator"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/takeover"
)

// FromAgent converts a PrometheusAgent into the PrometheusServer it is
// rendered as, in prometheus-operator's layout of an agent, with
// prometheus-operator's defaults where they differ from ours.
// unsupported lists the set fields the conversion cannot carry (by JSON
// path under spec, sorted), and "version" for a version
// prometheus-operator cannot parse: an agent with any is not taken over.
func FromAgent(a *monitoringv1alpha1.PrometheusAgent) (_ promserver.Target, unsupported []string) {
	in := a.Spec.DeepCopy()
	unsupported = takeover.RefusedFields(*in, fields())
	image, version, ok := takeover.Image(takeover.ImageSpec{
		Image: in.Image, DefaultBaseImage: promoperator.BaseImage,
		Version: in.Version, DefaultVersion: promserver.OperatorDefaultVersion,
	})
	if r := promoperator.RefusedVersion(version, ok); r != "" {
		unsupported = append(unsupported, r)
		slices.Sort(unsupported)
	}
	server := &v1alpha1.PrometheusServer{
		ObjectMeta: metav1.ObjectMeta{
			Name: a.Name, Namespace: a.Namespace, UID: a.UID, Generation: a.Generation,
			Labels: a.Labels, Annotations: map[string]string{},
		},
		Spec: promoperator.CommonSpec(in.CommonPrometheusFields, image),
	}
	server.Spec.DefaultBase = promoperator.DefaultBase(in.Image, "", in.Version, "", "")
	for k, v := range a.Annotations {
		server.Annotations[k] = v
	}
	return promserver.Target{PrometheusServer: server, Layout: promserver.OperatorsAgentLayout}, unsupported
}

// daemonSet reports whether mode is DaemonSet.
func daemonSet(mode *monitoringv1alpha1.PrometheusAgentMode) bool {
	return ptr.Deref(mode, monitoringv1alpha1.StatefulSetPrometheusAgentMode) == monitoringv1alpha1.DaemonSetPrometheusAgentMode
}
