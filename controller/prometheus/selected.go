package prometheus

import (
	"context"
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
)

// selectedKind is a kind of object a server selects with a pair of its
// selectors. Everything that lists, selects, watches, counts or reports
// them iterates selectedKinds: a new kind is a line there (and its field
// in inputs and selected, and how its jobs or rule files render).
type selectedKind struct {
	// kind is the Kind of the objects.
	kind string
	// object is an empty object of the kind, for its watch.
	object client.Object
	// list lists every object of the kind into its field of in.
	list func(ctx context.Context, c client.Reader, in *inputs) error
	// selectors are the selectors of spec for the kind.
	selectors func(spec *v1alpha1.PrometheusServerSpec) (selector, nsSelector *metav1.LabelSelector)
	// choose selects the candidates of in into their field of s.
	choose func(in inputs, s *selected) error
	// add adds obj, an object of the kind, to the candidates of in.
	add func(in *inputs, obj client.Object)
	// find returns the candidate of in with this namespace and name, or
	// nil.
	find func(in inputs, namespace, name string) client.Object
	// count is the number of objects of the kind s holds.
	count func(s selected) int
	// status is the kind's count in status.
	status func(status *v1alpha1.PrometheusServerStatus) *v1alpha1.Selection
}

// selectedKinds are the kinds a server selects, in the order they are
// listed and selected.
func selectedKinds() []selectedKind {
	return []selectedKind{
		newSelectedKind(monitoringv1.ServiceMonitorsKind,
			func(l *monitoringv1.ServiceMonitorList) []monitoringv1.ServiceMonitor { return l.Items },
			func(in *inputs) *[]*monitoringv1.ServiceMonitor { return &in.ServiceMonitors },
			func(s *selected) *[]*monitoringv1.ServiceMonitor { return &s.serviceMonitors },
			func(spec *v1alpha1.PrometheusServerSpec) (*metav1.LabelSelector, *metav1.LabelSelector) {
				return spec.ServiceMonitorSelector, spec.ServiceMonitorNamespaceSelector
			},
			func(st *v1alpha1.PrometheusServerStatus) *v1alpha1.Selection { return &st.ServiceMonitors }),
		newSelectedKind(monitoringv1.PodMonitorsKind,
			func(l *monitoringv1.PodMonitorList) []monitoringv1.PodMonitor { return l.Items },
			func(in *inputs) *[]*monitoringv1.PodMonitor { return &in.PodMonitors },
			func(s *selected) *[]*monitoringv1.PodMonitor { return &s.podMonitors },
			func(spec *v1alpha1.PrometheusServerSpec) (*metav1.LabelSelector, *metav1.LabelSelector) {
				return spec.PodMonitorSelector, spec.PodMonitorNamespaceSelector
			},
			func(st *v1alpha1.PrometheusServerStatus) *v1alpha1.Selection { return &st.PodMonitors }),
		newSelectedKind(monitoringv1.ProbesKind,
			func(l *monitoringv1.ProbeList) []monitoringv1.Probe { return l.Items },
			func(in *inputs) *[]*monitoringv1.Probe { return &in.Probes },
			func(s *selected) *[]*monitoringv1.Probe { return &s.probes },
			func(spec *v1alpha1.PrometheusServerSpec) (*metav1.LabelSelector, *metav1.LabelSelector) {
				return spec.ProbeSelector, spec.ProbeNamespaceSelector
			},
			func(st *v1alpha1.PrometheusServerStatus) *v1alpha1.Selection { return &st.Probes }),
		newSelectedKind(monitoringv1alpha1.ScrapeConfigsKind,
			func(l *monitoringv1alpha1.ScrapeConfigList) []monitoringv1alpha1.ScrapeConfig { return l.Items },
			func(in *inputs) *[]*monitoringv1alpha1.ScrapeConfig { return &in.ScrapeConfigs },
			func(s *selected) *[]*monitoringv1alpha1.ScrapeConfig { return &s.scrapeConfigs },
			func(spec *v1alpha1.PrometheusServerSpec) (*metav1.LabelSelector, *metav1.LabelSelector) {
				return spec.ScrapeConfigSelector, spec.ScrapeConfigNamespaceSelector
			},
			func(st *v1alpha1.PrometheusServerStatus) *v1alpha1.Selection { return &st.ScrapeConfigs }),
		newSelectedKind(kindPrometheusRule,
			func(l *monitoringv1.PrometheusRuleList) []monitoringv1.PrometheusRule { return l.Items },
			func(in *inputs) *[]*monitoringv1.PrometheusRule { return &in.Rules },
			func(s *selected) *[]*monitoringv1.PrometheusRule { return &s.rules },
			func(spec *v1alpha1.PrometheusServerSpec) (*metav1.LabelSelector, *metav1.LabelSelector) {
				return spec.RuleSelector, spec.RuleNamespaceSelector
			},
			func(st *v1alpha1.PrometheusServerStatus) *v1alpha1.Selection { return &st.Rules }),
	}
}

// newSelectedKind is the selectedKind of kind, whose list type is L and
// whose objects are T: items are the objects of a list, candidates their
// field of inputs, chosen their field of selected.
func newSelectedKind[T any, PT interface {
	*T
	client.Object
}, L any, PL interface {
	*L
	client.ObjectList
}](
	kind string,
	items func(PL) []T,
	candidates func(*inputs) *[]PT,
	chosen func(*selected) *[]PT,
	selectors func(*v1alpha1.PrometheusServerSpec) (*metav1.LabelSelector, *metav1.LabelSelector),
	status func(*v1alpha1.PrometheusServerStatus) *v1alpha1.Selection,
) selectedKind {
	return selectedKind{
		kind:   kind,
		object: PT(new(T)),
		list: func(ctx context.Context, c client.Reader, in *inputs) error {
			l := PL(new(L))
			if err := c.List(ctx, l, client.UnsafeDisableDeepCopy); err != nil {
				return fmt.Errorf("list %ss: %w", kind, err)
			}
			objs := items(l)
			ps := make([]PT, len(objs))
			for i := range objs {
				ps[i] = &objs[i]
			}
			*candidates(in) = ps
			return nil
		},
		selectors: selectors,
		choose: func(in inputs, s *selected) error {
			sel, nsSel := selectors(&in.Server.Spec)
			objs, err := selectObjects(in.Server, kind, sel, nsSel, *candidates(&in), in.Namespaces)
			*chosen(s) = objs
			return err
		},
		add: func(in *inputs, obj client.Object) {
			*candidates(in) = append(*candidates(in), obj.(PT))
		},
		find: func(in inputs, namespace, name string) client.Object {
			for _, o := range *candidates(&in) {
				if o.GetNamespace() == namespace && o.GetName() == name {
					return o
				}
			}
			return nil
		},
		count:  func(s selected) int { return len(*chosen(&s)) },
		status: status,
	}
}

// selectedKindOf returns the selectedKind of kind.
func selectedKindOf(kind string) (selectedKind, bool) {
	for _, k := range selectedKinds() {
		if k.kind == kind {
			return k, true
		}
	}
	return selectedKind{}, false
}
