package amconfig

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestCheckVersion checks the refusals of an AlertmanagerConfig's
// receivers the differential cannot tell apart from the parser's (a
// Telegram receiver without a token, which prometheus-operator v0.93.1
// refuses at every version), and the exact messages of the others, at
// the version before and at the one that knows the key.
func TestCheckVersion(t *testing.T) {
	token := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "tg"}, Key: "token"}
	webhook := func(h monitoringv1alpha1.HTTPConfig) monitoringv1alpha1.Receiver {
		return monitoringv1alpha1.Receiver{Name: "ops", WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{URL: ptr.To("https://hook.example.com/"), HTTPConfig: &h}}}
	}
	proxied := func(p monitoringv1.ProxyConfig) monitoringv1alpha1.Receiver {
		return webhook(monitoringv1alpha1.HTTPConfig{ProxyConfig: p})
	}
	const proxyErr = "receiver ops: httpConfig: noProxy, proxyFromEnvironment or proxyConnectHeader needs Alertmanager 0.25 or later, the Alertmanager runs v0.24.0"
	cases := []struct {
		name     string
		receiver monitoringv1alpha1.Receiver
		version  string
		err      string
	}{
		{name: "telegram-without-token-0.30", version: "v0.30.0",
			receiver: monitoringv1alpha1.Receiver{Name: "tg", TelegramConfigs: []monitoringv1alpha1.TelegramConfig{{ChatID: 1}}},
			err:      "receiver tg: a telegramConfig without botToken or botTokenFile needs Alertmanager 0.31 or later, the Alertmanager runs v0.30.0"},
		{name: "telegram-without-token-0.31", version: "v0.31.0",
			receiver: monitoringv1alpha1.Receiver{Name: "tg", TelegramConfigs: []monitoringv1alpha1.TelegramConfig{{ChatID: 1}}}},
		{name: "telegram-with-token-0.30", version: "v0.30.0",
			receiver: monitoringv1alpha1.Receiver{Name: "tg", TelegramConfigs: []monitoringv1alpha1.TelegramConfig{{ChatID: 1, BotToken: token}}}},
		{name: "slack-message-text-0.30", version: "v0.30.0",
			receiver: monitoringv1alpha1.Receiver{Name: "s", SlackConfigs: []monitoringv1alpha1.SlackConfig{{MessageText: ptr.To("top")}}},
			err:      "receiver s: slackConfigs: messageText needs Alertmanager 0.31 or later, the Alertmanager runs v0.30.0"},
		{name: "slack-message-text-0.31", version: "0.31",
			receiver: monitoringv1alpha1.Receiver{Name: "s", SlackConfigs: []monitoringv1alpha1.SlackConfig{{MessageText: ptr.To("top")}}}},
		{name: "no-proxy-0.24", version: "v0.24.0", receiver: proxied(monitoringv1.ProxyConfig{NoProxy: ptr.To("")}), err: proxyErr},
		{name: "proxy-from-environment-false-0.24", version: "v0.24.0", receiver: proxied(monitoringv1.ProxyConfig{ProxyFromEnvironment: ptr.To(false)}), err: proxyErr},
		{name: "empty-proxy-connect-header-0.24", version: "v0.24.0",
			receiver: proxied(monitoringv1.ProxyConfig{ProxyConnectHeader: map[string][]corev1.SecretKeySelector{}}), err: proxyErr},
		{name: "proxy-url-0.24", version: "v0.24.0", receiver: proxied(monitoringv1.ProxyConfig{ProxyURL: ptr.To("http://proxy:3128")})},
		{name: "no-proxy-0.25", version: "v0.25.0", receiver: proxied(monitoringv1.ProxyConfig{NoProxy: ptr.To("localhost")})},
		{name: "oauth2-proxy-0.24", version: "v0.24.0", receiver: webhook(monitoringv1alpha1.HTTPConfig{OAuth2: &monitoringv1.OAuth2{
			ProxyConfig: monitoringv1.ProxyConfig{NoProxy: ptr.To("localhost")},
		}})},
		{name: "unparsed-version", version: "latest", receiver: proxied(monitoringv1.ProxyConfig{NoProxy: ptr.To("")})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			amc := &monitoringv1alpha1.AlertmanagerConfig{Spec: monitoringv1alpha1.AlertmanagerConfigSpec{Receivers: []monitoringv1alpha1.Receiver{c.receiver}}}
			err := checkVersion(amc, c.version)
			if c.err == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, c.err)
		})
	}
}

// TestDropHTTP checks the HTTP client keys dropped before the version
// that knows them, where the differential cannot see them: the OAuth2
// proxy's proxy_from_environment alone stays before 0.25, as
// prometheus-operator keeps it; a proxy_url stays at every version.
func TestDropHTTP(t *testing.T) {
	full := func() *httpConfig {
		return &httpConfig{
			FollowRedirects: ptr.To(false), EnableHTTP2: ptr.To(false),
			TLSConfig: &tlsConfig{ServerName: "s", MinVersion: "TLS12", MaxVersion: "TLS13"},
			OAuth2:    &oauth2{ClientID: "id", proxy: proxy{ProxyURL: "http://o:3128", ProxyFromEnvironment: true}},
			proxy:     proxy{ProxyURL: "http://p:3128", NoProxy: "localhost", ProxyConnectHeader: map[string][]string{"X": {"y"}}},
		}
	}
	cases := []struct {
		version string
		want    func(h *httpConfig)
	}{
		{version: "v0.21.0", want: func(h *httpConfig) {
			h.FollowRedirects, h.EnableHTTP2 = nil, nil
			h.TLSConfig.MinVersion, h.TLSConfig.MaxVersion = "", ""
			h.OAuth2.proxy = proxy{}
			h.NoProxy, h.ProxyConnectHeader = "", nil
		}},
		{version: "v0.24.0", want: func(h *httpConfig) {
			h.EnableHTTP2 = nil
			h.TLSConfig.MinVersion, h.TLSConfig.MaxVersion = "", ""
			h.OAuth2.proxy = proxy{}
			h.NoProxy, h.ProxyConnectHeader = "", nil
		}},
		{version: "v0.25.0", want: func(h *httpConfig) { h.NoProxy, h.ProxyConnectHeader = "", nil }},
		{version: "v0.26.0", want: func(*httpConfig) {}},
	}
	for _, c := range cases {
		t.Run(c.version, func(t *testing.T) {
			got, want := full(), full()
			dropHTTP(got, before(c.version))
			c.want(want)
			require.Equal(t, want, got)
		})
	}

	t.Run("oauth2-proxy-from-environment-alone", func(t *testing.T) {
		h := &httpConfig{OAuth2: &oauth2{proxy: proxy{ProxyFromEnvironment: true}}}
		dropHTTP(h, before("v0.24.0"))
		require.True(t, h.OAuth2.ProxyFromEnvironment)
	})
}

// TestDropPushoverFiles checks Pushover's user_key_file and token_file,
// dropped before 0.26: prometheus-operator then fails the whole
// configuration on the missing key, which the differential cannot
// compare.
func TestDropPushoverFiles(t *testing.T) {
	for _, c := range []struct {
		version string
		kept    bool
	}{{"v0.25.0", false}, {"v0.26.0", true}} {
		t.Run(c.version, func(t *testing.T) {
			r := &receiver{PushoverConfigs: []*pushoverConfig{{UserKeyFile: "/u", TokenFile: "/t"}}}
			dropReceiver(r, before(c.version))
			got := r.PushoverConfigs[0]
			require.Equal(t, c.kept, got.UserKeyFile == "/u" && got.TokenFile == "/t", "%+v", got)
			require.Equal(t, c.kept, got.UserKeyFile != "" || got.TokenFile != "", "%+v", got)
		})
	}
}
