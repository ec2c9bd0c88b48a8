package amconfig

// The keys prometheus-operator v0.93.1 drops from what an
// AlertmanagerConfig adds before the Alertmanager version that knows
// them (the sanitize methods of amcfg.go), with a warning where it logs
// one: the Alertmanager then runs without them.

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

// dropUnknown drops from what p adds the keys the Alertmanager of
// version does not know, as prometheus-operator v0.93.1 drops them: its
// receivers' (dropReceiver) and its routes' active_time_intervals
// before 0.24.
func dropUnknown(p *part, version string) {
	older := before(version)
	for _, r := range p.receivers {
		dropReceiver(r, older)
	}
	dropRoute(p.route, older)
}

// dropRoute drops from r and its children the active_time_intervals
// before 0.24 (their time intervals stay defined).
func dropRoute(r *route, older func(uint64) bool) {
	if r == nil {
		return
	}
	if older(24) {
		r.ActiveTimeIntervals = nil
	}
	for _, c := range r.Routes {
		dropRoute(c, older)
	}
}

// dropReceiver drops from r the keys the Alertmanager does not know
// (older reports whether it is older than 0.m): OpsGenie's actions, entity and update_alerts
// before 0.24; PagerDuty's source before 0.25 and timeout before 0.30;
// Pushover's user_key_file, token_file and device before 0.26, ttl
// before 0.27, monospace before 0.29; MS Teams' summary before 0.27;
// Telegram's message_thread_id before 0.26; Discord's content, username
// and avatar_url before 0.28; Slack's timeout before 0.30; a webhook's
// timeout before 0.28; SNS's sigv4 external_id before 0.33; and the HTTP
// clients' (dropHTTP).
func dropReceiver(r *receiver, older func(uint64) bool) {
	for _, c := range r.OpsgenieConfigs {
		if older(24) {
			c.Actions, c.Entity, c.UpdateAlerts = "", "", nil
		}
	}
	for _, c := range r.PagerdutyConfigs {
		if older(25) {
			c.Source = ""
		}
		if older(30) {
			c.Timeout = ""
		}
	}
	for _, c := range r.PushoverConfigs {
		if older(26) {
			c.UserKeyFile, c.TokenFile, c.Device = "", "", ""
		}
		if older(27) {
			c.TTL = ""
		}
		if older(29) {
			// prometheus-operator sets it false: the same as unset.
			c.Monospace = nil
		}
	}
	for _, c := range r.MSTeamsConfigs {
		if older(27) {
			c.Summary = ""
		}
	}
	for _, c := range r.TelegramConfigs {
		if older(26) {
			c.MessageThreadID = 0
		}
	}
	for _, c := range r.DiscordConfigs {
		if older(28) {
			c.Content, c.Username, c.AvatarURL = "", "", ""
		}
	}
	for _, c := range r.SlackConfigs {
		if older(30) {
			c.Timeout = ""
		}
	}
	for _, c := range r.SNSConfigs {
		// Alertmanager knows it from 0.31 at least (its sigv4 v0.4.0);
		// prometheus-operator v0.93.1 writes it from 0.33 only.
		if older(33) && c.Sigv4 != nil {
			c.Sigv4.ExternalID = ""
		}
	}
	for _, c := range r.WebhookConfigs {
		if older(28) {
			c.Timeout = ""
		}
	}
	for _, h := range httpConfigs(r) {
		dropHTTP(h, older)
	}
}

// dropHTTP drops from an HTTP client configuration the keys the
// Alertmanager does not know (older as for dropReceiver): follow_redirects
// before 0.22; enable_http2, the TLS configuration's min_version and
// max_version, and the OAuth2 proxy settings (all four, when proxy_url,
// no_proxy or proxy_connect_header is set) before 0.25; no_proxy,
// proxy_from_environment and proxy_connect_header before 0.26 (an
// AlertmanagerConfig's receivers that set them before 0.25 are refused,
// receiverGates; the global section's are dropped).
func dropHTTP(h *httpConfig, older func(uint64) bool) {
	if h == nil {
		return
	}
	if older(22) {
		h.FollowRedirects = nil
	}
	if older(25) {
		h.EnableHTTP2 = nil
		if h.TLSConfig != nil {
			h.TLSConfig.MinVersion, h.TLSConfig.MaxVersion = "", ""
		}
		if o := h.OAuth2; o != nil && (o.ProxyURL != "" || o.NoProxy != "" || len(o.ProxyConnectHeader) > 0) {
			o.proxy = proxy{}
		}
	}
	if older(26) {
		h.NoProxy, h.ProxyFromEnvironment, h.ProxyConnectHeader = "", false, nil
	}
}
