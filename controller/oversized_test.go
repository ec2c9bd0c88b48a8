package controller

import (
	"encoding/base64"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/api/v1alpha1"
)

// bigMonitor is a ServiceMonitor whose bearer token, from a Secret of the
// same name, is size bytes of random text: gzip makes it about a quarter
// smaller, no more.
func bigMonitor(ns, name string, size int) (*monitoringv1.ServiceMonitor, *corev1.Secret) {
	rnd := rand.New(rand.NewChaCha8([32]byte([]byte(name + "-seed-of-32-bytes-padding-padding")[:32])))
	raw := make([]byte, size*3/4)
	for i := range raw {
		raw[i] = byte(rnd.Uint32())
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string][]byte{"token": []byte(base64.StdEncoding.EncodeToString(raw))}}
	sm := serviceMonitor(ns, name, nil)
	sm.Spec.Endpoints[0].Authorization = &monitoringv1.SafeAuthorization{Credentials: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "token",
	}}
	return sm, secret
}

// oversizedMonitors are three ServiceMonitors whose configuration is too
// large for a Secret by less than the largest, big-b, takes.
func oversizedMonitors(ns string) ([]*monitoringv1.ServiceMonitor, []*corev1.Secret) {
	var sms []*monitoringv1.ServiceMonitor
	var secrets []*corev1.Secret
	for _, m := range []struct {
		name string
		size int
	}{{"big-a", 450 << 10}, {"big-b", 550 << 10}, {"big-c", 500 << 10}} {
		sm, s := bigMonitor(ns, m.name, m.size)
		sms, secrets = append(sms, sm), append(secrets, s)
	}
	return sms, secrets
}

// TestRenderOversized renders a configuration too large for a Secret: the
// other objects are rendered, and the monitor without which it fits is
// named.
func TestRenderOversized(t *testing.T) {
	srv := server("monitoring", "main", func(s *v1alpha1.PrometheusServerSpec) {
		s.ServiceMonitorSelector = &metav1.LabelSelector{}
		s.RuleSelector = &metav1.LabelSelector{}
	})
	sms, secrets := oversizedMonitors("monitoring")
	in := inputs{
		Server:          srv,
		Namespaces:      map[string]labels.Set{"monitoring": nil},
		ServiceMonitors: append(sms, serviceMonitor("monitoring", "small", nil)),
		Rules:           []*monitoringv1.PrometheusRule{prometheusRule("monitoring", "rules", nil, "up")},
		Secrets:         map[string]*corev1.Secret{},
	}
	for _, s := range secrets {
		in.Secrets[s.Namespace+"/"+s.Name] = s
	}

	objs, err := render(in, testOptions(), nil)
	require.NoError(t, err)
	require.Nil(t, objs.ConfigSecret)
	require.Empty(t, objs.ConfigHash)
	require.NotNil(t, objs.Oversized)
	require.Equal(t, []string{"ServiceMonitor monitoring/big-b"}, objs.Oversized.Monitors)
	require.Regexp(t, `^gzip config: prometheus.yaml is \d+ bytes, \d+ gzipped, more than the 1048576 bytes a Secret holds; `+
		`the largest monitors, without which it would about fit: ServiceMonitor monitoring/big-b$`, objs.Oversized.Error())
	require.Len(t, objs.RuleShards, 1)
	require.NotNil(t, objs.Service)
	require.NotNil(t, objs.StatefulSets[0])

	// Without the monitor named, it fits.
	in.ServiceMonitors = slices.DeleteFunc(in.ServiceMonitors, func(sm *monitoringv1.ServiceMonitor) bool { return sm.Name == "big-b" })
	objs, err = render(in, testOptions(), nil)
	require.NoError(t, err)
	require.Nil(t, objs.Oversized)
	require.NotNil(t, objs.ConfigSecret)
}

// testOversized makes the configuration of a PrometheusServer too large
// for a Secret: the last configuration stays, new rules are written all
// the same, the monitor at fault is named in the status and an Event, and
// removing it brings everything back.
func (cp *controlPlane) testOversized(t *testing.T) {
	ns := cp.namespace(t, "oversized", nil)
	cp.start(t, Options{Namespaces: []string{ns}})
	srv := server(ns, "main", func(s *v1alpha1.PrometheusServerSpec) {
		s.ServiceMonitorSelector = &metav1.LabelSelector{}
		s.RuleSelector = &metav1.LabelSelector{}
	})
	cp.create(t, srv, serviceMonitor(ns, "small", nil))
	cp.waitJobs(t, srv, "serviceMonitor/oversized/small/0")

	sms, secrets := oversizedMonitors(ns)
	for _, s := range secrets {
		cp.create(t, s)
	}
	for _, sm := range sms {
		cp.create(t, sm)
	}
	const named = "the largest monitors, without which it would about fit: ServiceMonitor oversized/big-b"
	eventually(t, func(c *assert.CollectT) {
		cond := meta.FindStatusCondition(cp.status(t, srv).Conditions, conditionReconciled)
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
			assert.Equal(c, "ConfigTooLarge", cond.Reason)
			assert.Contains(c, cond.Message, named)
		}
	})
	eventually(t, func(c *assert.CollectT) {
		var events eventsv1.EventList
		assert.NoError(c, cp.c.List(t.Context(), &events, client.InNamespace(ns)))
		assert.True(c, slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool {
			return e.Regarding.Kind == v1alpha1.Kind && e.Reason == "ConfigTooLarge" && strings.HasSuffix(e.Note, named)
		}), "Event on the server")
	})
	// The monitors were created one by one: the last configuration that
	// fit has some of them, not all.
	last := cp.config(t, srv)
	require.Less(t, len(jobs(t, last)), 4)

	// Nothing else is frozen: a new rule is written; the last
	// configuration stays.
	rule := prometheusRule(ns, "new-rules", nil, "up")
	cp.create(t, rule)
	cp.waitRules(t, srv, []string{fileOf(rule)})
	require.Equal(t, last, cp.config(t, srv), "the last configuration stays")

	require.NoError(t, cp.c.Delete(t.Context(), sms[1]))
	cp.waitJobs(t, srv, "serviceMonitor/oversized/small/0", "serviceMonitor/oversized/big-a/0", "serviceMonitor/oversized/big-c/0")
	cp.waitReconciled(t, srv, metav1.ConditionTrue, "Reconciled", "")
}
