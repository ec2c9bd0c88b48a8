package handoff

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"
)

// kind is what a scene needs of the kind of its object: a Prometheus and
// an Alertmanager are handed off alike, through the same lifecycle, each
// with objects of its own.
type kind struct {
	// name is the kind, as owner references name it; prefix starts the
	// names of the objects of one (prometheus-<name>); governing is the
	// Service those of a namespace share.
	name, prefix, governing string
	// config is the suffix, after <prefix><name>, of the name of the
	// Secret of the configuration, key its gzipped key in it; rules,
	// when not empty, that of the first rule ConfigMap.
	config, key, rules string
	// inputs are the objects every object of the kind selects in the
	// namespace NS, at the edit 0 (createInputs).
	inputs string
	// object returns an empty object of the kind, list an empty list.
	object func() client.Object
	list   func() client.ObjectList
	// conditions returns those of the status of obj, of the kind.
	conditions func(obj client.Object) []monitoringv1.Condition
	// spec sets the spec of obj, of the kind: replicas, a claim
	// template, the inputs of its namespace selected, the edit 0.
	spec func(obj client.Object)
	// edit makes the edit n of the object of s and of its inputs (those
	// of every object of the namespace), rendered the configuration
	// holding it (its text, uncompressed).
	edit     func(t testing.TB, s *scene, n int)
	rendered func(t testing.TB, s *scene, config []byte, n int) error
}

// claimTemplate is the claim template of every object of the scenes.
func claimTemplate() *monitoringv1.StorageSpec {
	return &monitoringv1.StorageSpec{VolumeClaimTemplate: monitoringv1.EmbeddedPersistentVolumeClaim{
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}}
}

// prometheusKind is the Prometheus: the external label edit of its spec
// and the rule of the namespace's PrometheusRule carry the edit.
func prometheusKind() *kind {
	return &kind{
		name: monitoringv1.PrometheusesKind, prefix: "prometheus-", governing: "prometheus-operated",
		config: "", key: "prometheus.yaml.gz", rules: "-rulefiles-0",
		inputs: monitors,
		object: func() client.Object { return &monitoringv1.Prometheus{} },
		list:   func() client.ObjectList { return &monitoringv1.PrometheusList{} },
		conditions: func(obj client.Object) []monitoringv1.Condition {
			return obj.(*monitoringv1.Prometheus).Status.Conditions
		},
		spec: func(obj client.Object) {
			p := obj.(*monitoringv1.Prometheus)
			p.Spec.Replicas = ptr.To[int32](replicas)
			p.Spec.Image = ptr.To("quay.io/prometheus/prometheus:v3.15.0")
			p.Spec.Version = "v3.15.0"
			p.Spec.ServiceMonitorSelector = &metav1.LabelSelector{}
			p.Spec.RuleSelector = &metav1.LabelSelector{}
			p.Spec.ExternalLabels = map[string]string{"edit": "0"}
			p.Spec.Storage = claimTemplate()
		},
		edit: func(t testing.TB, s *scene, n int) {
			t.Helper()
			s.patch(t, fmt.Sprintf(`{"spec":{"externalLabels":{"edit":"%d"}}}`, n))
			rule := &monitoringv1.PrometheusRule{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "app"}}
			require.NoError(t, s.e.c.Patch(t.Context(), rule, client.RawPatch(types.MergePatchType,
				fmt.Appendf(nil, `{"spec":{"groups":[{"name":"handoff","rules":[{"record":"handoff:edit","expr":"vector(%d)"}]}]}}`, n))))
		},
		rendered: func(t testing.TB, s *scene, config []byte, n int) error {
			if err := externalLabelEdit(s, config, n); err != nil {
				return err
			}
			var rules corev1.ConfigMap
			if err := s.e.c.Get(t.Context(), s.key(s.stsName()+s.kind.rules), &rules); err != nil {
				return err
			}
			for _, v := range rules.Data {
				if strings.Contains(v, fmt.Sprintf("vector(%d)", n)) {
					return nil
				}
			}
			return fmt.Errorf("ConfigMap %s: no vector(%d) in %v", rules.Name, n, rules.Data)
		},
	}
}

// alertmanagerConfigs is the AlertmanagerConfig every Alertmanager of a
// namespace selects; the URL of its webhook receiver carries the number
// of the last edit (hookURL).
const alertmanagerConfigs = `apiVersion: monitoring.coreos.com/v1alpha1
kind: AlertmanagerConfig
metadata: {name: app, namespace: NS}
spec:
  route: {receiver: hook}
  receivers: [{name: hook, webhookConfigs: [{url: "http://edit-0.invalid/"}]}]
`

// hookURL is the URL of the webhook receiver of the edit n.
func hookURL(n int) string { return fmt.Sprintf("http://edit-%d.invalid/", n) }

// alertmanagerKind is the Alertmanager: the webhook receiver's URL of the
// namespace's AlertmanagerConfig carries the edit.
func alertmanagerKind() *kind {
	return &kind{
		name: monitoringv1.AlertmanagersKind, prefix: "alertmanager-", governing: "alertmanager-operated",
		config: "-generated", key: "alertmanager.yaml.gz",
		inputs: alertmanagerConfigs,
		object: func() client.Object { return &monitoringv1.Alertmanager{} },
		list:   func() client.ObjectList { return &monitoringv1.AlertmanagerList{} },
		conditions: func(obj client.Object) []monitoringv1.Condition {
			return obj.(*monitoringv1.Alertmanager).Status.Conditions
		},
		spec: func(obj client.Object) {
			am := obj.(*monitoringv1.Alertmanager)
			am.Spec.Replicas = ptr.To[int32](replicas)
			am.Spec.Image = ptr.To("quay.io/prometheus/alertmanager:v0.31.1")
			am.Spec.Version = "v0.31.1"
			am.Spec.AlertmanagerConfigSelector = &metav1.LabelSelector{}
			am.Spec.Storage = claimTemplate()
		},
		edit: func(t testing.TB, s *scene, n int) {
			t.Helper()
			amc := &monitoringv1alpha1.AlertmanagerConfig{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "app"}}
			require.NoError(t, s.e.c.Patch(t.Context(), amc, client.RawPatch(types.MergePatchType,
				fmt.Appendf(nil, `{"spec":{"receivers":[{"name":"hook","webhookConfigs":[{"url":%q}]}]}}`, hookURL(n)))))
		},
		rendered: func(_ testing.TB, s *scene, config []byte, n int) error {
			if !bytes.Contains(config, []byte(hookURL(n))) {
				return fmt.Errorf("Secret %s: no %s in:\n%s", s.configName(), hookURL(n), config)
			}
			return nil
		},
	}
}

// agentKind is the PrometheusAgent: the external label edit of its spec
// carries the edit; an agent has no rules.
func agentKind() *kind {
	return &kind{
		name: monitoringv1alpha1.PrometheusAgentsKind, prefix: "prom-agent-", governing: "prometheus-agent-operated",
		config: "", key: "prometheus.yaml.gz",
		inputs: monitors,
		object: func() client.Object { return &monitoringv1alpha1.PrometheusAgent{} },
		list:   func() client.ObjectList { return &monitoringv1alpha1.PrometheusAgentList{} },
		conditions: func(obj client.Object) []monitoringv1.Condition {
			return obj.(*monitoringv1alpha1.PrometheusAgent).Status.Conditions
		},
		spec: func(obj client.Object) {
			a := obj.(*monitoringv1alpha1.PrometheusAgent)
			a.Spec.Replicas = ptr.To[int32](replicas)
			a.Spec.Image = ptr.To("quay.io/prometheus/prometheus:v3.15.0")
			a.Spec.Version = "v3.15.0"
			a.Spec.ServiceMonitorSelector = &metav1.LabelSelector{}
			a.Spec.ExternalLabels = map[string]string{"edit": "0"}
			a.Spec.Storage = claimTemplate()
		},
		edit: func(t testing.TB, s *scene, n int) {
			t.Helper()
			s.patch(t, fmt.Sprintf(`{"spec":{"externalLabels":{"edit":"%d"}}}`, n))
		},
		rendered: func(_ testing.TB, s *scene, config []byte, n int) error {
			return externalLabelEdit(s, config, n)
		},
	}
}

// externalLabelEdit checks that config, of the scene's object, holds the
// external label of the edit n.
func externalLabelEdit(s *scene, config []byte, n int) error {
	var cfg struct {
		Global struct {
			ExternalLabels map[string]string `json:"external_labels"`
		} `json:"global"`
	}
	if err := sigsyaml.Unmarshal(config, &cfg); err != nil {
		return fmt.Errorf("Secret %s: %w", s.configName(), err)
	}
	if got := cfg.Global.ExternalLabels["edit"]; got != fmt.Sprint(n) {
		return fmt.Errorf("Secret %s: external label edit is %q, not %d", s.configName(), got, n)
	}
	return nil
}
