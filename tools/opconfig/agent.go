package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/blang/semver/v4"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus-operator/prometheus-operator/pkg/assets"
	mfake "github.com/prometheus-operator/prometheus-operator/pkg/client/versioned/fake"
	"github.com/prometheus-operator/prometheus-operator/pkg/k8s"
	prompkg "github.com/prometheus-operator/prometheus-operator/pkg/prometheus"
	kfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// generateAgent runs prometheus-operator's configuration generation for
// objs.agent, the way its agent controller's createOrUpdateConfigurationSecret
// does (pkg/prometheus/agent/operator.go).
func generateAgent(ctx context.Context, logger *slog.Logger, objs *inputObjects, kubeVersion semver.Version) ([]byte, error) {
	p := objs.agent
	kclient := kfake.NewClientset(objs.core...)
	store := assets.NewStoreBuilder(kclient.CoreV1(), kclient.CoreV1())
	sel, err := selectResources(ctx, logger, p, kclient, mfake.NewClientset(objs.monitoring...), store)
	if err != nil {
		return nil, err
	}
	var opts []prompkg.ConfigGeneratorOption
	if kubeVersion.GTE(semver.MustParse("1.21.0")) {
		opts = append(opts, prompkg.WithEndpointSliceSupport())
	}
	if ptr.Deref(p.Spec.Mode, "") == monitoringv1alpha1.DaemonSetPrometheusAgentMode {
		opts = append(opts, prompkg.WithDaemonSet())
	}
	if kubeVersion.GTE(semver.MustParse("1.35.0")) {
		opts = append(opts, prompkg.WithPodTopologyLabelsSupport())
	}
	cg, err := prompkg.NewConfigGenerator(logger, p, opts...)
	if err != nil {
		return nil, err
	}
	if err := cg.AddRemoteWriteToStore(ctx, store, p.Namespace, p.Spec.RemoteWrite); err != nil {
		return nil, err
	}
	if err := prompkg.AddAPIServerConfigToStore(ctx, store, p.Namespace, p.Spec.APIServerConfig); err != nil {
		return nil, err
	}
	if err := prompkg.AddScrapeClassesToStore(ctx, store, p.Namespace, p.Spec.ScrapeClasses); err != nil {
		return nil, fmt.Errorf("scrape classes: %w", err)
	}
	additional, err := k8s.LoadSecretRef(ctx, logger, kclient.CoreV1().Secrets(p.Namespace), p.Spec.AdditionalScrapeConfigs)
	if err != nil {
		return nil, fmt.Errorf("load additional scrape configs from Secret: %w", err)
	}
	return cg.GenerateAgentConfiguration(sel.serviceMonitors, sel.podMonitors, sel.probes, sel.scrapeConfigs, store, additional)
}
