package amconfig_test

import (
	"context"
	"errors"
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podreload/podreload/controller/alertmanager/amconfig"
)

// secrets is a Resolver over fixed Secrets, by namespace/name and key.
type secrets map[string]string

func (s secrets) Secret(_ context.Context, namespace string, sel corev1.SecretKeySelector) ([]byte, error) {
	v, ok := s[namespace+"/"+sel.Name+"/"+sel.Key]
	if !ok {
		return nil, errors.New("not found")
	}
	return []byte(v), nil
}

func (s secrets) ConfigMap(context.Context, string, corev1.ConfigMapKeySelector) ([]byte, error) {
	return nil, errors.New("not found")
}

// An Alertmanager that selects every AlertmanagerConfig of its namespace,
// one of which references a Secret that does not exist.
func ExampleGenerate() {
	am := &monitoringv1.Alertmanager{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "main"}}
	am.Spec.AlertmanagerConfigSelector = &metav1.LabelSelector{}
	hook := func(name, secret string) *monitoringv1alpha1.AlertmanagerConfig {
		c := &monitoringv1alpha1.AlertmanagerConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: name}}
		c.Spec.Route = &monitoringv1alpha1.Route{Receiver: "hook"}
		c.Spec.Receivers = []monitoringv1alpha1.Receiver{{Name: "hook", WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
			URLSecret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: "url"},
		}}}}
		return c
	}
	res, err := amconfig.Generate(context.Background(), amconfig.Input{
		Alertmanager: am,
		Base:         []byte("route:\n  receiver: default\nreceivers:\n- name: default\n"),
		Configs:      []*monitoringv1alpha1.AlertmanagerConfig{hook("team", "hook"), hook("broken", "missing")},
		Resolver:     secrets{"monitoring/hook/url": "http://hook.monitoring.svc/"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(res.Config))
	for _, l := range res.LeftOut {
		fmt.Println(l)
	}
	// Output:
	// route:
	//   receiver: default
	//   routes:
	//   - receiver: monitoring/team/hook
	//     matchers:
	//     - namespace="monitoring"
	//     continue: true
	// receivers:
	// - name: default
	// - name: monitoring/team/hook
	//   webhook_configs:
	//   - url: http://hook.monitoring.svc/
	// AlertmanagerConfig monitoring/broken left out: receiver "hook": webhookConfigs[0]: urlSecret: key "url" of secret monitoring/missing: not found
}
