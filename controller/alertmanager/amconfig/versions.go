package amconfig

import (
	"fmt"
	"strconv"
	"strings"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
)

// The Alertmanager's spec.version gates what the configuration holds as
// prometheus-operator v0.93.1 gates it: a key that version does not know
// either makes prometheus-operator refuse the object that sets it
// (checkAlertmanagerConfigResource and checkAlertmanagerGlobalConfigResource,
// operator.go and amcfg.go), or is dropped from the configuration (the
// sanitize methods of amcfg.go). Refusals are here and in
// versions_global.go, drops in versions_drop.go and versions_global.go.
// Before 0.22 the controller renders no generated configuration (its
// matchers need 0.22), so the gates of 0.22 and before are not repeated.

// minor is the minor version of an Alertmanager version of 0 ("v0.25.0",
// "0.25"), and whether it is one: a version that does not parse gates
// nothing (the controller refuses it before it gets here).
func minor(version string) (uint64, bool) {
	major, rest, ok := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	if !ok || major != "0" {
		return 0, false
	}
	m, _, _ := strings.Cut(rest, ".")
	n, err := strconv.ParseUint(m, 10, 64)
	return n, err == nil
}

// before returns whether the Alertmanager of version is older than 0.m,
// for each m: a version that does not parse is older than none.
func before(version string) func(m uint64) bool {
	v, ok := minor(version)
	return func(m uint64) bool { return ok && v < m }
}

// gate is a key of an AlertmanagerConfig's receivers that needs
// Alertmanager 0.since or later.
type gate struct {
	field string
	since uint64
	set   func(monitoringv1alpha1.Receiver) bool
}

// some reports whether one of cs satisfies f.
func some[T any](cs []T, f func(T) bool) bool {
	for _, c := range cs {
		if f(c) {
			return true
		}
	}
	return false
}

// receiverGates are the receiver keys prometheus-operator v0.93.1
// refuses an AlertmanagerConfig for before the Alertmanager version that
// knows them (checkReceivers and checkHTTPConfig, operator.go), and the
// Telegram receiver without a token, which its sanitize refuses before
// 0.31 (where the global bot token came).
func receiverGates() []gate {
	return []gate{
		{"telegramConfigs", 24, func(r monitoringv1alpha1.Receiver) bool { return len(r.TelegramConfigs) > 0 }},
		{"telegramConfigs: botTokenFile", 26, func(r monitoringv1alpha1.Receiver) bool {
			return some(r.TelegramConfigs, func(c monitoringv1alpha1.TelegramConfig) bool { return c.BotTokenFile != nil })
		}},
		{"a telegramConfig without botToken or botTokenFile", 31, func(r monitoringv1alpha1.Receiver) bool {
			return some(r.TelegramConfigs, func(c monitoringv1alpha1.TelegramConfig) bool { return c.BotToken == nil && c.BotTokenFile == nil })
		}},
		{"discordConfigs", 25, func(r monitoringv1alpha1.Receiver) bool { return len(r.DiscordConfigs) > 0 }},
		{"webexConfigs", 25, func(r monitoringv1alpha1.Receiver) bool { return len(r.WebexConfigs) > 0 }},
		{"msteamsConfigs", 26, func(r monitoringv1alpha1.Receiver) bool { return len(r.MSTeamsConfigs) > 0 }},
		{"msteamsv2Configs", 28, func(r monitoringv1alpha1.Receiver) bool { return len(r.MSTeamsV2Configs) > 0 }},
		{"rocketchatConfigs", 28, func(r monitoringv1alpha1.Receiver) bool { return len(r.RocketChatConfigs) > 0 }},
		{"opsgenieConfigs: responders: type teams", 24, func(r monitoringv1alpha1.Receiver) bool {
			return some(r.OpsGenieConfigs, func(c monitoringv1alpha1.OpsGenieConfig) bool {
				return some(c.Responders, func(resp monitoringv1alpha1.OpsGenieConfigResponder) bool { return resp.Type == "teams" })
			})
		}},
		{"slackConfigs: messageText", 31, func(r monitoringv1alpha1.Receiver) bool {
			return some(r.SlackConfigs, func(c monitoringv1alpha1.SlackConfig) bool { return c.MessageText != nil })
		}},
		{"emailConfigs: threading", 30, func(r monitoringv1alpha1.Receiver) bool {
			return some(r.EmailConfigs, func(c monitoringv1alpha1.EmailConfig) bool { return c.Threading != nil })
		}},
		{"emailConfigs: forceImplicitTLS", 31, func(r monitoringv1alpha1.Receiver) bool {
			return some(r.EmailConfigs, func(c monitoringv1alpha1.EmailConfig) bool { return c.ForceImplicitTLS != nil })
		}},
		// Set, whatever the value (false, an empty map), as
		// prometheus-operator tests it.
		{"httpConfig: noProxy, proxyFromEnvironment or proxyConnectHeader", 25, func(r monitoringv1alpha1.Receiver) bool {
			return some(receiverHTTPConfigs(r), func(h *monitoringv1alpha1.HTTPConfig) bool {
				return h.NoProxy != nil || h.ProxyFromEnvironment != nil || h.ProxyConnectHeader != nil
			})
		}},
	}
}

// routeLabelsSince is the minor version of Alertmanager that reads route
// labels (prometheus-operator v0.95's labels of a route: "It requires
// Alertmanager >= 0.34.0").
const routeLabelsSince = 34

// checkVersion refuses c when one of its receivers sets a key the
// Alertmanager of version does not know, as prometheus-operator refuses
// it, or one of its routes labels before 0.34, which an older
// Alertmanager refuses to load (the AlertmanagerConfig is then left out).
func checkVersion(c *monitoringv1alpha1.AlertmanagerConfig, version string) error {
	older := before(version)
	if older(routeLabelsSince) && c.Spec.Route != nil {
		if err := checkRouteLabels(c.Spec.Route); err != nil {
			return fmt.Errorf("route: %w, the Alertmanager runs %s", err, version)
		}
	}
	for _, r := range c.Spec.Receivers {
		for _, g := range receiverGates() {
			if older(g.since) && g.set(r) {
				return fmt.Errorf("receiver %s: %s needs Alertmanager 0.%d or later, the Alertmanager runs %s", r.Name, g.field, g.since, version)
			}
		}
	}
	return nil
}

// checkRouteLabels returns an error naming the first route of r's tree,
// r included, that sets labels.
func checkRouteLabels(r *monitoringv1alpha1.Route) error {
	if len(r.Labels) > 0 {
		return fmt.Errorf("labels needs Alertmanager 0.%d or later", routeLabelsSince)
	}
	children, err := r.ChildRoutes()
	if err != nil {
		// convertRoute reports it.
		return nil
	}
	for i := range children {
		if err := checkRouteLabels(&children[i]); err != nil {
			return fmt.Errorf("routes[%d]: %w", i, err)
		}
	}
	return nil
}

// appendHTTP appends to out the HTTP client configurations of cs that are
// set.
func appendHTTP[T any](out []*monitoringv1alpha1.HTTPConfig, cs []T, h func(*T) *monitoringv1alpha1.HTTPConfig) []*monitoringv1alpha1.HTTPConfig {
	for i := range cs {
		if c := h(&cs[i]); c != nil {
			out = append(out, c)
		}
	}
	return out
}

// receiverHTTPConfigs returns the HTTP client configurations of the
// integrations of r (e-mail has none).
func receiverHTTPConfigs(r monitoringv1alpha1.Receiver) []*monitoringv1alpha1.HTTPConfig {
	var out []*monitoringv1alpha1.HTTPConfig
	out = appendHTTP(out, r.PagerDutyConfigs, func(c *monitoringv1alpha1.PagerDutyConfig) *monitoringv1alpha1.HTTPConfig { return c.HTTPConfig })
	out = appendHTTP(out, r.OpsGenieConfigs, func(c *monitoringv1alpha1.OpsGenieConfig) *monitoringv1alpha1.HTTPConfig { return c.HTTPConfig })
	out = appendHTTP(out, r.DiscordConfigs, func(c *monitoringv1alpha1.DiscordConfig) *monitoringv1alpha1.HTTPConfig { return c.HTTPConfig })
	out = appendHTTP(out, r.SlackConfigs, func(c *monitoringv1alpha1.SlackConfig) *monitoringv1alpha1.HTTPConfig { return c.HTTPConfig })
	out = appendHTTP(out, r.WebhookConfigs, func(c *monitoringv1alpha1.WebhookConfig) *monitoringv1alpha1.HTTPConfig { return c.HTTPConfig })
	out = appendHTTP(out, r.WeChatConfigs, func(c *monitoringv1alpha1.WeChatConfig) *monitoringv1alpha1.HTTPConfig { return c.HTTPConfig })
	out = appendHTTP(out, r.WebexConfigs, func(c *monitoringv1alpha1.WebexConfig) *monitoringv1alpha1.HTTPConfig { return c.HTTPConfig })
	out = appendHTTP(out, r.VictorOpsConfigs, func(c *monitoringv1alpha1.VictorOpsConfig) *monitoringv1alpha1.HTTPConfig { return c.HTTPConfig })
	out = appendHTTP(out, r.PushoverConfigs, func(c *monitoringv1alpha1.PushoverConfig) *monitoringv1alpha1.HTTPConfig { return c.HTTPConfig })
	out = appendHTTP(out, r.SNSConfigs, func(c *monitoringv1alpha1.SNSConfig) *monitoringv1alpha1.HTTPConfig { return c.HTTPConfig })
	out = appendHTTP(out, r.TelegramConfigs, func(c *monitoringv1alpha1.TelegramConfig) *monitoringv1alpha1.HTTPConfig { return c.HTTPConfig })
	out = appendHTTP(out, r.MSTeamsConfigs, func(c *monitoringv1alpha1.MSTeamsConfig) *monitoringv1alpha1.HTTPConfig { return c.HTTPConfig })
	out = appendHTTP(out, r.MSTeamsV2Configs, func(c *monitoringv1alpha1.MSTeamsV2Config) *monitoringv1alpha1.HTTPConfig { return c.HTTPConfig })
	return appendHTTP(out, r.RocketChatConfigs, func(c *monitoringv1alpha1.RocketChatConfig) *monitoringv1alpha1.HTTPConfig { return c.HTTPConfig })
}
