package takeover

import (
	"errors"
	"log/slog"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/podreload/podreload/internal/testenv/testlog"
)

// brokenMapper fails every mapping, as when discovery does not answer.
type brokenMapper struct{ meta.RESTMapper }

func (brokenMapper) RESTMapping(schema.GroupKind, ...string) (*meta.RESTMapping, error) {
	return nil, errors.New("unable to retrieve the complete list of server APIs")
}

func TestServed(t *testing.T) {
	served := meta.NewDefaultRESTMapper(nil)
	served.Add(monitoringv1.SchemeGroupVersion.WithKind(monitoringv1.PrometheusesKind), meta.RESTScopeNamespace)
	for name, tc := range map[string]struct {
		mapper meta.RESTMapper
		served bool
		err    string
		log    string
	}{
		"served": {mapper: served, served: true},
		"CRD not installed": {
			mapper: meta.NewDefaultRESTMapper(nil),
			log:    `"msg":"prometheus-operator's CRD is not installed: no object of its kind is taken over (install it and restart the controller)","kind":"Prometheus","err":"no matches for kind \"Prometheus\" in version \"monitoring.coreos.com/v1\""`,
		},
		"discovery fails": {mapper: brokenMapper{}, err: "take over Prometheus objects: unable to retrieve the complete list of server APIs"},
	} {
		t.Run(name, func(t *testing.T) {
			var logs testlog.Buffer
			ok, err := Served(tc.mapper, slog.New(slog.NewJSONHandler(&logs, nil)), monitoringv1.SchemeGroupVersion, monitoringv1.PrometheusesKind)
			require.Equal(t, tc.served, ok)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
			} else {
				require.NoError(t, err)
			}
			if tc.log != "" {
				require.Contains(t, logs.String(), tc.log)
			} else {
				require.Empty(t, logs.String())
			}
		})
	}
}

func TestChanged(t *testing.T) {
	old := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Generation: 1, Labels: map[string]string{"a": "1"}, Annotations: map[string]string{AnnotationControllerID: "podreload"}}}
	for name, tc := range map[string]struct {
		edit func(p *monitoringv1.Prometheus)
		want bool
	}{
		"spec":             {edit: func(p *monitoringv1.Prometheus) { p.Generation++ }, want: true},
		"labels":           {edit: func(p *monitoringv1.Prometheus) { p.Labels = nil }, want: true},
		"controller id":    {edit: func(p *monitoringv1.Prometheus) { p.Annotations[AnnotationControllerID] = "" }, want: true},
		"status alone":     {edit: func(p *monitoringv1.Prometheus) { p.Status.Replicas = 2 }},
		"resource version": {edit: func(p *monitoringv1.Prometheus) { p.ResourceVersion = "2" }},
	} {
		t.Run(name, func(t *testing.T) {
			p := old.DeepCopy()
			tc.edit(p)
			require.Equal(t, tc.want, Changed().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: p}))
		})
	}
	require.True(t, Changed().Create(event.CreateEvent{Object: old}))
	require.True(t, Changed().Delete(event.DeleteEvent{Object: old}))
}
