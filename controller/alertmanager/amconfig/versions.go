package amconfig

import (
	"fmt"
	"strconv"
	"strings"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
)

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

// gate is a key of an AlertmanagerConfig's receivers that needs
// Alertmanager 0.since or later.
type gate struct {
	field string
	since uint64
	set   func(monitoringv1alpha1.Receiver) bool
}

// receiverGates are the receiver keys prometheus-operator v0.93.1
// refuses an AlertmanagerConfig for before the Alertmanager version that
// knows them (checkReceivers, operator.go).
func receiverGates() []gate {
	return []gate{
		{"telegramConfigs", 24, func(r monitoringv1alpha1.Receiver) bool { return len(r.TelegramConfigs) > 0 }},
		{"telegramConfigs: botTokenFile", 26, func(r monitoringv1alpha1.Receiver) bool {
			for _, c := range r.TelegramConfigs {
				if c.BotTokenFile != nil {
					return true
				}
			}
			return false
		}},
		{"discordConfigs", 25, func(r monitoringv1alpha1.Receiver) bool { return len(r.DiscordConfigs) > 0 }},
		{"webexConfigs", 25, func(r monitoringv1alpha1.Receiver) bool { return len(r.WebexConfigs) > 0 }},
		{"msteamsConfigs", 26, func(r monitoringv1alpha1.Receiver) bool { return len(r.MSTeamsConfigs) > 0 }},
		{"msteamsv2Configs", 28, func(r monitoringv1alpha1.Receiver) bool { return len(r.MSTeamsV2Configs) > 0 }},
		{"rocketchatConfigs", 28, func(r monitoringv1alpha1.Receiver) bool { return len(r.RocketChatConfigs) > 0 }},
		{"opsgenieConfigs: responders: type teams", 24, func(r monitoringv1alpha1.Receiver) bool {
			for _, c := range r.OpsGenieConfigs {
				for _, resp := range c.Responders {
					if resp.Type == "teams" {
						return true
					}
				}
			}
			return false
		}},
		{"emailConfigs: threading", 30, func(r monitoringv1alpha1.Receiver) bool {
			for _, c := range r.EmailConfigs {
				if c.Threading != nil {
					return true
				}
			}
			return false
		}},
		{"emailConfigs: forceImplicitTLS", 31, func(r monitoringv1alpha1.Receiver) bool {
			for _, c := range r.EmailConfigs {
				if c.ForceImplicitTLS != nil {
					return true
				}
			}
			return false
		}},
	}
}

// checkVersion refuses c when one of its receivers sets a key the
// Alertmanager of version does not know, as prometheus-operator refuses
// it (the AlertmanagerConfig is then left out).
func checkVersion(c *monitoringv1alpha1.AlertmanagerConfig, version string) error {
	m, ok := minor(version)
	if !ok {
		return nil
	}
	for _, r := range c.Spec.Receivers {
		for _, g := range receiverGates() {
			if m < g.since && g.set(r) {
				return fmt.Errorf("receiver %s: %s needs Alertmanager 0.%d or later, the Alertmanager runs %s", r.Name, g.field, g.since, version)
			}
		}
	}
	return nil
}

// httpConfigs returns the HTTP client configurations of r's integrations
// (e-mail has none).
func httpConfigs(r *receiver) []*httpConfig {
	var out []*httpConfig
	add := func(h *httpConfig) {
		if h != nil {
			out = append(out, h)
		}
	}
	for _, c := range r.WebhookConfigs {
		add(c.HTTPConfig)
	}
	for _, c := range r.SlackConfigs {
		add(c.HTTPConfig)
	}
	for _, c := range r.DiscordConfigs {
		add(c.HTTPConfig)
	}
	for _, c := range r.WebexConfigs {
		add(c.HTTPConfig)
	}
	for _, c := range r.WeChatConfigs {
		add(c.HTTPConfig)
	}
	for _, c := range r.MSTeamsConfigs {
		add(c.HTTPConfig)
	}
	for _, c := range r.MSTeamsV2Configs {
		add(c.HTTPConfig)
	}
	for _, c := range r.PagerdutyConfigs {
		add(c.HTTPConfig)
	}
	for _, c := range r.OpsgenieConfigs {
		add(c.HTTPConfig)
	}
	for _, c := range r.VictorOpsConfigs {
		add(c.HTTPConfig)
	}
	for _, c := range r.PushoverConfigs {
		add(c.HTTPConfig)
	}
	for _, c := range r.SNSConfigs {
		add(c.HTTPConfig)
	}
	for _, c := range r.TelegramConfigs {
		add(c.HTTPConfig)
	}
	for _, c := range r.RocketChatConfigs {
		add(c.HTTPConfig)
	}
	return out
}

// dropUnknown drops from the receivers the keys the Alertmanager of
// version does not know, as prometheus-operator v0.93.1 drops them
// (the sanitize methods of amcfg.go): a webhook's timeout before 0.28,
// an HTTP client's follow_redirects before 0.22, its enable_http2 and
// its TLS min_version and max_version before 0.25.
func dropUnknown(receivers []*receiver, version string) {
	m, ok := minor(version)
	if !ok {
		return
	}
	for _, r := range receivers {
		if m < 28 {
			for _, c := range r.WebhookConfigs {
				c.Timeout = ""
			}
		}
		for _, h := range httpConfigs(r) {
			if m < 22 {
				h.FollowRedirects = nil
			}
			if m < 25 {
				h.EnableHTTP2 = nil
				if h.TLSConfig != nil {
					h.TLSConfig.MinVersion, h.TLSConfig.MaxVersion = "", ""
				}
			}
		}
	}
}
