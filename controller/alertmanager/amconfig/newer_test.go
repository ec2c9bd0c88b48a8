package amconfig

import (
	"path/filepath"
	"testing"

	"github.com/prometheus/alertmanager/config"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
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
