package amconfig

import (
	"cmp"
	"path/filepath"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/alertmanager/config"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// TestGlobalTelegram: spec.alertmanagerConfiguration.global.telegram's
// botToken and botTokenFile (prometheus-operator v0.95) are Alertmanager
// 0.31's telegram_bot_token and telegram_bot_token_file, which the
// receivers without a token inherit; before 0.31, or both, the
// configuration is not built. prometheus-operator v0.95's rendering
// cannot be checked (its generator is not served): these are its API
// documentation's and Alertmanager's.
func TestGlobalTelegram(t *testing.T) {
	token := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "telegram"}, Key: "token"}
	cases := []struct {
		name      string
		version   string
		token     *corev1.SecretKeySelector
		tokenFile *string
		global    string // The global section's bot token key, as written.
		// receiverToken gives the receiver a token of its own.
		receiverToken bool
		err           string
	}{
		{name: "bot-token", version: "v0.31.1", token: token, global: "telegram_bot_token: 123:abc"},
		{name: "bot-token-file", version: "v0.31.0", tokenFile: ptr.To("/etc/alertmanager/secrets/telegram/token"), global: "telegram_bot_token_file: /etc/alertmanager/secrets/telegram/token"},
		{name: "before-0.31", version: "v0.30.0", token: token, receiverToken: true,
			err: "alertmanager monitoring/main: spec.alertmanagerConfiguration.global: telegram: botToken and botTokenFile need Alertmanager 0.31 or later, the Alertmanager runs v0.30.0"},
		// Before 0.31 a receiver needs a token of its own, as
		// prometheus-operator's sanitize says.
		{name: "receiver-without-token-before-0.31", version: "v0.30.0",
			err: "alertmanager monitoring/main: AlertmanagerConfig monitoring/global: receiver tg: a telegramConfig without botToken or botTokenFile needs Alertmanager 0.31 or later, the Alertmanager runs v0.30.0"},
		{name: "both", version: "v0.31.1", token: token, tokenFile: ptr.To("/x"),
			err: "alertmanager monitoring/main: spec.alertmanagerConfiguration.global: telegram: botToken and botTokenFile are mutually exclusive"},
		{name: "missing-secret", version: "v0.31.1", token: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Key: "token"},
			err: `alertmanager monitoring/main: spec.alertmanagerConfiguration.global: telegram botToken: key "token" of secret monitoring/nope: not found`},
		{name: "neither", version: "v0.31.1",
			err: "alertmanager monitoring/main: base configuration: missing bot_token or bot_token_file on telegram_config"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := caseInput(t, filepath.Join("testdata", "newer", "global-telegram.yaml"))
			in.Alertmanager.Spec.Version = c.version
			tg := in.Alertmanager.Spec.AlertmanagerConfiguration.Global.TelegramConfig
			tg.BotToken, tg.BotTokenFile = c.token, c.tokenFile
			if c.receiverToken {
				in.Configuration.Spec.Receivers[0].TelegramConfigs[0].BotToken = token
			}
			res, err := Generate(t.Context(), in)
			if c.err != "" {
				require.EqualError(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Contains(t, string(res.Config), c.global)
			cfg, err := config.Load(string(res.Config))
			require.NoError(t, err)
			tc := cfg.Receivers[0].TelegramConfigs[0]
			require.Equal(t, c.token != nil, tc.BotToken != "", "the receiver inherits the token")
			require.Equal(t, ptr.Deref(c.tokenFile, ""), tc.BotTokenFile, "the receiver inherits the token file")
		})
	}
}

// TestRouteLabels: route labels (prometheus-operator v0.95) are rendered
// as Alertmanager 0.34 reads them, on a route and on a child route, from
// 0.34 and when spec.version is unset (the controller's default is 0.34);
// before 0.34 the AlertmanagerConfig is left out (TestLeftOut) and the one
// spec.alertmanagerConfiguration names is an error. prometheus-operator
// v0.94's generator, the differential's, does not know them: the
// configuration is checked with Alertmanager 0.34's parser and loaded by
// the real Alertmanager (bin/alertmanager) instead.
func TestRouteLabels(t *testing.T) {
	const spec = `
route:
  receiver: r
  labels:
  - {key: team, value: a}
  - {key: summary, value: '{{ .CommonLabels.alertname }}'}
  routes:
  - receiver: r
    labels:
    - {key: team, value: b}
receivers:
- name: r`
	bin, err := toolbin.Path("alertmanager")
	require.NoError(t, err)
	am := startAlertmanager(t, bin, Version)
	for _, version := range []string{"", "v0.34.0", "v0.35.0"} {
		name := "version " + cmp.Or(version, "unset")
		t.Run(name, func(t *testing.T) {
			a := alertmanager("")
			a.Spec.Version = version
			res, err := Generate(t.Context(), Input{Alertmanager: a, Configs: []*monitoringv1alpha1.AlertmanagerConfig{amc(t, "team-a", "labelled", spec)}})
			require.NoError(t, err)
			require.Empty(t, res.LeftOut)
			cfg, err := config.Load(string(res.Config))
			require.NoError(t, err)
			r := cfg.Route.Routes[0]
			require.Equal(t, model.LabelSet{"team": "a", "summary": "{{ .CommonLabels.alertname }}"}, r.Labels)
			require.Equal(t, model.LabelSet{"team": "b"}, r.Routes[0].Labels)
			running, err := config.Load(am.load(t, name, res.Config))
			require.NoError(t, err)
			require.Equal(t, r.Labels, running.Route.Routes[0].Labels, "the labels the Alertmanager runs")
			require.Equal(t, r.Routes[0].Labels, running.Route.Routes[0].Routes[0].Labels, "the child route's labels the Alertmanager runs")
		})
	}
	t.Run("configuration-before-0.34", func(t *testing.T) {
		a := alertmanager("")
		a.Spec.Version = "v0.33.1"
		a.Spec.AlertmanagerConfiguration = &monitoringv1.AlertmanagerConfiguration{Name: "global"}
		_, err := Generate(t.Context(), Input{Alertmanager: a, Configuration: amc(t, "monitoring", "global", spec)})
		require.EqualError(t, err, "alertmanager monitoring/main: AlertmanagerConfig monitoring/global: route: labels needs Alertmanager 0.34 or later, the Alertmanager runs v0.33.1")
	})
}
