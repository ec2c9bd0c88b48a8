package amconfig

import (
	"path/filepath"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
)

// TestFileSystemMode: prometheus-operator v0.95's
// spec.alertmanagerConfigFileSystemMode, for each mode and the default,
// on AlertmanagerConfigs that reference the container's files. It is
// v0.95's behaviour, which cannot be checked against the generator
// TestOperatorConfig runs (v0.93.1, which lets every one): these are the
// semantics of the field's API documentation.
func TestFileSystemMode(t *testing.T) {
	const (
		tg = "AlertmanagerConfig team-a/tg left out: receiver ops: telegramConfigs[0].botTokenFile: a file of the Alertmanager container, which spec.alertmanagerConfigFileSystemMode "
		po = "AlertmanagerConfig monitoring/po left out: receiver ops: pushoverConfigs[0].userKeyFile: a file of the Alertmanager container, which spec.alertmanagerConfigFileSystemMode "
	)
	cases := []struct {
		name     string
		mode     monitoringv1.AlertmanagerConfigFileSystemMode
		strategy monitoringv1.AlertmanagerConfigMatcherStrategyType
		leftOut  []string
	}{{
		name:    "default",
		leftOut: []string{po + "unset (FromAlertmanagerConfigMatcherStrategy, prometheus-operator v0.95's default) with matcher strategy OnNamespace forbids here", tg + "unset (FromAlertmanagerConfigMatcherStrategy, prometheus-operator v0.95's default) with matcher strategy OnNamespace forbids here"},
	}, {
		name:    "from-strategy",
		mode:    monitoringv1.FromAlertmanagerConfigMatcherStrategyAlertmanagerConfigFileSystemMode,
		leftOut: []string{po + "FromAlertmanagerConfigMatcherStrategy with matcher strategy OnNamespace forbids here", tg + "FromAlertmanagerConfigMatcherStrategy with matcher strategy OnNamespace forbids here"},
	}, {
		name:     "default-except-alertmanager-namespace",
		strategy: monitoringv1.OnNamespaceExceptForAlertmanagerNamespaceConfigMatcherStrategyType,
		leftOut:  []string{tg + "unset (FromAlertmanagerConfigMatcherStrategy, prometheus-operator v0.95's default) with matcher strategy OnNamespaceExceptForAlertmanagerNamespace forbids here"},
	}, {
		name:     "default-none",
		strategy: monitoringv1.NoneConfigMatcherStrategyType,
	}, {
		name:    "deny-all",
		mode:    monitoringv1.DenyAllAlertmanagerConfigFileSystemMode,
		leftOut: []string{po + "DenyAll forbids here", tg + "DenyAll forbids here"},
	}, {
		name:     "deny-all-none",
		mode:     monitoringv1.DenyAllAlertmanagerConfigFileSystemMode,
		strategy: monitoringv1.NoneConfigMatcherStrategyType,
		leftOut:  []string{po + "DenyAll forbids here", tg + "DenyAll forbids here"},
	}, {
		name: "allow-all",
		mode: monitoringv1.AllowAllAlertmanagerConfigFileSystemMode,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := caseInput(t, filepath.Join("testdata", "filesystem", "tenants.yaml"))
			if c.mode != "" {
				in.Alertmanager.Spec.AlertmanagerConfigFileSystemMode = ptr.To(c.mode)
			}
			in.Alertmanager.Spec.AlertmanagerConfigMatcherStrategy.Type = c.strategy
			res, err := Generate(t.Context(), in)
			require.NoError(t, err)
			var leftOut []string
			for _, l := range res.LeftOut {
				leftOut = append(leftOut, l.String())
			}
			require.Equal(t, c.leftOut, leftOut)
			// What is kept is rendered: the receivers of the kept ones.
			cfg := string(res.Config)
			require.Contains(t, cfg, "team-b/hook/ops")
			require.Equal(t, len(c.leftOut) < 2, strings.Contains(cfg, "monitoring/po/ops"), cfg)
			require.Equal(t, len(c.leftOut) == 0, strings.Contains(cfg, "team-a/tg/ops"), cfg)
		})
	}
}

// TestFileSystemModeMain: the AlertmanagerConfig
// spec.alertmanagerConfiguration names may reference files unless the
// mode is DenyAll, which refuses it: the configuration is not built (the
// Alertmanager keeps its last good one, InvalidConfiguration).
func TestFileSystemModeMain(t *testing.T) {
	for _, mode := range []monitoringv1.AlertmanagerConfigFileSystemMode{"", monitoringv1.FromAlertmanagerConfigMatcherStrategyAlertmanagerConfigFileSystemMode, monitoringv1.AllowAllAlertmanagerConfigFileSystemMode} {
		t.Run(string(mode), func(t *testing.T) {
			in := caseInput(t, filepath.Join("testdata", "filesystem", "main.yaml"))
			in.Alertmanager.Spec.AlertmanagerConfigFileSystemMode = ptr.To(mode)
			res, err := Generate(t.Context(), in)
			require.NoError(t, err)
			require.Contains(t, string(res.Config), "bot_token_file: /etc/alertmanager/secrets/tg/token")
		})
	}
	in := caseInput(t, filepath.Join("testdata", "filesystem", "main.yaml"))
	in.Alertmanager.Spec.AlertmanagerConfigFileSystemMode = ptr.To(monitoringv1.DenyAllAlertmanagerConfigFileSystemMode)
	_, err := Generate(t.Context(), in)
	require.EqualError(t, err, "alertmanager monitoring/main: AlertmanagerConfig monitoring/global: receiver ops: telegramConfigs[0].botTokenFile: a file of the Alertmanager container, which spec.alertmanagerConfigFileSystemMode DenyAll forbids here")
}
