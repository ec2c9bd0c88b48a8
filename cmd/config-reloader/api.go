package main

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podreload/podreload/apisource"
)

// apiConfig is the API source's part of the flags.
type apiConfig struct {
	secret, secretKey, rulesSelector, rulesDir string
	apisource.Config
}

// newSource returns the API source the flags ask for, or nil.
func newSource(logger *slog.Logger, reg prometheus.Registerer, cfg config) (*apisource.Source, error) {
	api := cfg.api
	switch {
	case len(cfg.rulesInputDirs) > 0 && api.secret != "":
		return nil, errors.New("--rules-input-dir reads rule files from volumes; with --config-secret they are ConfigMaps")
	case len(cfg.rulesInputDirs) > 0 && api.rulesDir == "":
		return nil, errors.New("--rules-input-dir needs --rules-dir")
	case len(cfg.rulesInputDirs) > 0:
		return nil, nil
	case api.secret == "" && (api.rulesSelector != "" || api.rulesDir != ""):
		return nil, errors.New("--rules-configmap-selector and --rules-dir need --config-secret (or --rules-dir, --rules-input-dir)")
	case api.secret == "":
		return nil, nil
	case cfg.partsDir != "":
		return nil, errors.New("--config-parts-dir reads parts from files; with --config-secret they are Secrets")
	case cfg.configFile != "":
		return nil, errors.New("give --config-file or --config-secret, not both")
	case cfg.output == "":
		return nil, errors.New("--config-secret needs --config-envsubst-file")
	case (api.rulesSelector == "") != (api.rulesDir == ""):
		return nil, errors.New("give both --rules-configmap-selector and --rules-dir, or neither")
	}
	podNamespace := ""
	if b, err := os.ReadFile(apisource.DefaultNamespaceFile); err == nil {
		podNamespace = strings.TrimSpace(string(b))
	}
	ns, name, ok := strings.Cut(api.secret, "/")
	if !ok {
		ns, name = podNamespace, api.secret
	}
	if ns == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("--config-secret=%s: want NAMESPACE/NAME, or NAME in a pod", api.secret)
	}
	return apisource.New(logger, reg, apisource.Options{
		Config:          api.Config,
		SecretNamespace: ns, SecretName: name, SecretKey: api.secretKey,
		RulesNamespace: cmp.Or(podNamespace, ns), RulesSelector: api.rulesSelector,
	})
}

// newReporter returns the reporter --report-pod asks for, or nil.
func newReporter(logger *slog.Logger, reg prometheus.Registerer, cfg config) (*apisource.Reporter, error) {
	if cfg.reportPod == "" {
		return nil, nil
	}
	ns, name, ok := strings.Cut(cfg.reportPod, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("--report-pod=%s: want NAMESPACE/NAME", cfg.reportPod)
	}
	return apisource.NewReporter(logger, reg, apisource.ReporterOptions{Config: cfg.api.Config, Namespace: ns, Name: name})
}

// newStateSecret returns the state dir's mirror --state-secret asks for,
// or nil.
func newStateSecret(logger *slog.Logger, reg prometheus.Registerer, cfg config) (*apisource.StateSecret, error) {
	if cfg.stateSecret == "" {
		return nil, nil
	}
	ns, name, ok := strings.Cut(cfg.stateSecret, "/")
	if !ok {
		ns, name = "", cfg.stateSecret
		if b, err := os.ReadFile(apisource.DefaultNamespaceFile); err == nil {
			ns = strings.TrimSpace(string(b))
		}
	}
	if ns == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("--state-secret=%s: want NAMESPACE/NAME, or NAME in a pod", cfg.stateSecret)
	}
	if cfg.output == "" && cfg.stateDir == "" {
		return nil, errors.New("--state-secret mirrors --state-dir: give --config-envsubst-file (the state dir is beside it by default) or --state-dir")
	}
	return apisource.NewStateSecret(logger, reg, apisource.StateSecretOptions{Config: cfg.api.Config, Namespace: ns, Name: name})
}
