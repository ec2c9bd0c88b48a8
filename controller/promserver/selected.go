package promserver

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
	Kind string
	// object is an empty object of the kind, for its watch.
	Object client.Object
	// list lists every object of the kind into its field of in.
	list func(ctx context.Context, c client.Reader, in *Inputs) error
	// selectors are the selectors of spec for the kind.
	selectors func(spec *v1alpha1.PrometheusServerSpec) (selector, nsSelector *metav1.LabelSelector)
	// choose selects the candidates of in into their field of s.
	choose func(in Inputs, s *Selected) error
	// add adds obj, an object of the kind, to the candidates of in.
	Add func(in *Inputs, obj client.Object)
	// find returns the candidate of in with this namespace and name, or
	// nil.
	find func(in Inputs, namespace, name string) client.Object
	// count is the number of objects of the kind s holds.
	count func(s Selected) int
	// status is the kind's count in status.
	Status func(status *v1alpha1.PrometheusServerStatus) *v1alpha1.Selection
}

// SelectedKinds are the kinds a server selects, in the order they are
// listed and selected.
func SelectedKinds() []selectedKind {
	return []selectedKind{
		newSelectedKind(monitoringv1.ServiceMonitorsKind,
			func(l *monitoringv1.ServiceMonitorList) []monitoringv1.ServiceMonitor { return l.Items },
			func(in *Inputs) *[]*monitoringv1.ServiceMonitor { return &in.ServiceMonitors },
			func(s *Selected) *[]*monitoringv1.ServiceMonitor { return &s.ServiceMonitors },
			func(spec *v1alpha1.PrometheusServerSpec) (*metav1.LabelSelector, *metav1.LabelSelector) {
				return spec.ServiceMonitorSelector, spec.ServiceMonitorNamespaceSelector
			},
			func(st *v1alpha1.PrometheusServerStatus) *v1alpha1.Selection { return &st.ServiceMonitors }),
		newSelectedKind(monitoringv1.PodMonitorsKind,
			func(l *monitoringv1.PodMonitorList) []monitoringv1.PodMonitor { return l.Items },
			func(in *Inputs) *[]*monitoringv1.PodMonitor { return &in.PodMonitors },
			func(s *Selected) *[]*monitoringv1.PodMonitor { return &s.PodMonitors },
			func(spec *v1alpha1.PrometheusServerSpec) (*metav1.LabelSelector, *metav1.LabelSelector) {
				return spec.PodMonitorSelector, spec.PodMonitorNamespaceSelector
			},
			func(st *v1alpha1.PrometheusServerStatus) *v1alpha1.Selection { return &st.PodMonitors }),
		newSelectedKind(monitoringv1.ProbesKind,
			func(l *monitoringv1.ProbeList) []monitoringv1.Probe { return l.Items },
			func(in *Inputs) *[]*monitoringv1.Probe { return &in.Probes },
			func(s *Selected) *[]*monitoringv1.Probe { return &s.Probes },
			func(spec *v1alpha1.PrometheusServerSpec) (*metav1.LabelSelector, *metav1.LabelSelector) {
				return spec.ProbeSelector, spec.ProbeNamespaceSelector
			},
			func(st *v1alpha1.PrometheusServerStatus) *v1alpha1.Selection { return &st.Probes }),
		newSelectedKind(monitoringv1alpha1.ScrapeConfigsKind,
			func(l *monitoringv1alpha1.ScrapeConfigList) []monitoringv1alpha1.ScrapeConfig { return l.Items },
			func(in *Inputs) *[]*monitoringv1alpha1.ScrapeConfig { return &in.ScrapeConfigs },
			func(s *Selected) *[]*monitoringv1alpha1.ScrapeConfig { return &s.ScrapeConfigs },
			func(spec *v1alpha1.PrometheusServerSpec) (*metav1.LabelSelector, *metav1.LabelSelector) {
				return spec.ScrapeConfigSelector, spec.ScrapeConfigNamespaceSelector
			},
			func(st *v1alpha1.PrometheusServerStatus) *v1alpha1.Selection { return &st.ScrapeConfigs }),
		newSelectedKind(KindPrometheusRule,
			func(l *monitoringv1.PrometheusRuleList) []monitoringv1.PrometheusRule { return l.Items },
			func(in *Inputs) *[]*monitoringv1.PrometheusRule { return &in.Rules },
			func(s *Selected) *[]*monitoringv1.PrometheusRule { return &s.rules },
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
	candidates func(*Inputs) *[]PT,
	chosen func(*Selected) *[]PT,
	selectors func(*v1alpha1.PrometheusServerSpec) (*metav1.LabelSelector, *metav1.LabelSelector),
	status func(*v1alpha1.PrometheusServerStatus) *v1alpha1.Selection,
) selectedKind {
	return selectedKind{
		Kind:   kind,
		Object: PT(new(T)),
		list: func(ctx context.Context, c client.Reader, in *Inputs) error {
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
		choose: func(in Inputs, s *Selected) error {
			sel, nsSel := selectors(&in.Server.Spec)
			objs, err := selectObjects(in.Server, kind, sel, nsSel, *candidates(&in), in.Namespaces)
			*chosen(s) = objs
			return err
		},
		Add: func(in *Inputs, obj client.Object) {
			*candidates(in) = append(*candidates(in), obj.(PT))
		},
		find: func(in Inputs, namespace, name string) client.Object {
			for _, o := range *candidates(&in) {
				if o.GetNamespace() == namespace && o.GetName() == name {
					return o
				}
			}
			return nil
		},
		count:  func(s Selected) int { return len(*chosen(&s)) },
		Status: status,
	}
}

// SelectedKindOf returns the selectedKind of kind.
func SelectedKindOf(kind string) (selectedKind, bool) {
	for _, k := range SelectedKinds() {
		if k.Kind == kind {
			return k, true
		}
	}
	return selectedKind{}, false
}
