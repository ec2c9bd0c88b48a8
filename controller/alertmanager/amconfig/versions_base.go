package amconfig

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v2"
)

// prometheus-operator v0.93.1 sanitizes the whole document it generates
// (alertmanagerConfig's sanitize, amcfg.go), the configSecret's base
// included, for the Alertmanager's spec.version: a key of the base that
// version does not know is dropped, an integration it does not know
// refuses the configuration. sanitizeBase does the same to the base;
// what the AlertmanagerConfigs add is sanitized on its own
// (versions.go, versions_drop.go), and spec.alertmanagerConfiguration's
// base is built sanitized (convertGlobal).

// since is a key of the base, a path of keys separated by dots, that
// needs Alertmanager 0.minor or later: before it is dropped.
type since struct {
	path  string
	minor uint64
}

// integration is a list of a receiver's (email_configs...) that
// needs Alertmanager 0.minor or later (refused before), with the keys
// dropped before the version that knows them.
type integration struct {
	key   string
	minor uint64
	drops []since
	// oneOf are the pairs of keys one of which must remain after the
	// drops, from version 0 up to 0.upTo (excluded; 0: every version).
	oneOf []required
}

// required is a pair of keys one of which must be set.
type required struct {
	keys [2]string
	upTo uint64
}

// globalDrops are the global keys prometheus-operator v0.93.1 drops
// before the version that knows them (globalConfig's sanitize).
func globalDrops() []since {
	return []since{
		{"smtp_tls_config", 28},
		{"slack_app_token", 30}, {"slack_app_token_file", 30}, {"slack_app_url", 30},
		{"opsgenie_api_key_file", 24},
		{"smtp_auth_password_file", 25},
		{"victorops_api_key_file", 25},
		{"wechat_api_secret_file", 31},
		{"telegram_bot_token", 31}, {"telegram_bot_token_file", 31},
		{"smtp_auth_secret_file", 31}, {"smtp_force_implicit_tls", 31},
		{"mattermost_webhook_url", 32}, {"mattermost_webhook_url_file", 32},
	}
}

// integrations are the receivers' integrations as prometheus-operator
// v0.93.1 sanitizes them (the sanitize method of each *Config).
func integrations() []integration {
	return []integration{
		{key: "email_configs", drops: []since{{"auth_password_file", 25}, {"force_implicit_tls", 31}, {"auth_secret_file", 31}, {"threading", 30}}},
		{key: "opsgenie_configs", drops: []since{{"actions", 24}, {"entity", 24}, {"update_alerts", 24}, {"api_key_file", 24}}},
		{key: "pagerduty_configs", drops: []since{{"source", 25}, {"routing_key_file", 25}, {"service_key_file", 25}, {"timeout", 30}}},
		{key: "pushover_configs", drops: []since{{"user_key_file", 26}, {"token_file", 26}, {"ttl", 27}, {"device", 26}, {"monospace", 29}},
			oneOf: []required{{keys: [2]string{"user_key", "user_key_file"}}, {keys: [2]string{"token", "token_file"}}}},
		{key: "slack_configs", drops: []since{{"timeout", 30}, {"app_token", 30}, {"app_token_file", 30}, {"app_url", 30}, {"message_text", 31}, {"update_message", 32}}},
		{key: "victorops_configs", drops: []since{{"api_key_file", 25}}},
		{key: "webhook_configs", drops: []since{{"url_file", 26}, {"timeout", 28}, {"payload", 32}}},
		{key: "wechat_configs", drops: []since{{"api_secret_file", 31}}},
		{key: "sns_configs", drops: []since{{"sigv4.external_id", 33}, {"use_aws_http_client", 33}}},
		{key: "telegram_configs", minor: 24, drops: []since{{"chat_id_file", 31}, {"bot_token_file", 26}, {"message_thread_id", 26}},
			oneOf: []required{{keys: [2]string{"chat_id", "chat_id_file"}}, {keys: [2]string{"bot_token", "bot_token_file"}, upTo: 31}}},
		{key: "discord_configs", minor: 25, drops: []since{{"content", 28}, {"username", 28}, {"avatar_url", 28}}},
		{key: "webex_configs", minor: 25},
		{key: "msteams_configs", minor: 26, drops: []since{{"summary", 27}}},
		{key: "msteamsv2_configs", minor: 28},
		{key: "jira_configs", minor: 28, drops: []since{{"api_type", 29}}},
		{key: "rocketchat_configs", minor: 28},
		{key: "incidentio_configs", minor: 29},
		{key: "mattermost_configs", minor: 30},
	}
}

// httpDrops are the keys of an HTTP client configuration
// prometheus-operator v0.93.1 drops before the version that knows them
// (httpClientConfig's, tlsConfig's and proxyConfig's sanitize); the
// OAuth2 proxy settings are dropOAuth2Proxy's.
func httpDrops() []since {
	return []since{
		{"enable_http2", 25}, {"http_headers", 28},
		{"tls_config.min_version", 25}, {"tls_config.max_version", 25},
		{"no_proxy", 26}, {"proxy_from_environment", 26}, {"proxy_connect_header", 26},
	}
}

// sanitizeBase returns the base doc sanitized for the Alertmanager of
// version as prometheus-operator v0.93.1 sanitizes it: the keys of
// globalDrops, integrations and httpDrops dropped before their
// versions, the routes' active_time_intervals and the time_intervals
// before 0.24, the time intervals' location before 0.25; an error, the
// configuration is not built, for an integration before its version, an
// OpsGenie responder of type teams before 0.24, and a key of oneOf left
// unset after the drops. A version that does not parse drops nothing.
func sanitizeBase(doc baseDocument, version string) (baseDocument, error) {
	older := before(version)
	out := yaml.MapSlice(doc)
	if g, ok := value(out, "global").(yaml.MapSlice); ok {
		g = dropOlder(g, globalDrops(), older)
		if h, ok := value(g, "http_config").(yaml.MapSlice); ok {
			g = set(g, "http_config", dropHTTPKeys(h, older))
		}
		out = set(out, "global", g)
	}
	for i, r := range list(value(out, "receivers")) {
		rm, ok := r.(yaml.MapSlice)
		if !ok {
			continue
		}
		name, _ := value(rm, "name").(string)
		for _, in := range integrations() {
			configs := list(value(rm, in.key))
			if len(configs) == 0 {
				continue
			}
			if older(in.minor) {
				return nil, fmt.Errorf("receiver %s: %s needs Alertmanager 0.%d or later, the Alertmanager runs %s", name, in.key, in.minor, version)
			}
			for j, c := range configs {
				cm, ok := c.(yaml.MapSlice)
				if !ok {
					continue
				}
				var err error
				if configs[j], err = sanitizeIntegration(cm, in, older, version); err != nil {
					return nil, fmt.Errorf("receiver %s: %s: %w", name, in.key, err)
				}
			}
			rm = set(rm, in.key, configs)
		}
		receivers := list(value(out, "receivers"))
		receivers[i] = rm
		out = set(out, "receivers", receivers)
	}
	if r, ok := value(out, "route").(yaml.MapSlice); ok {
		out = set(out, "route", dropRouteKeys(r, older))
	}
	if older(24) {
		out = without(out, "time_intervals")
	}
	if older(25) {
		for _, key := range []string{"mute_time_intervals", "time_intervals"} {
			intervals := list(value(out, key))
			for i, ti := range intervals {
				if tm, ok := ti.(yaml.MapSlice); ok {
					intervals[i] = dropLocations(tm)
				}
			}
			out = set(out, key, intervals)
		}
	}
	return baseDocument(out), nil
}

// sanitizeIntegration drops from c, a configuration of integration in,
// the keys the Alertmanager does not know and checks what must remain.
func sanitizeIntegration(c yaml.MapSlice, in integration, older func(uint64) bool, version string) (yaml.MapSlice, error) {
	if in.key == "opsgenie_configs" && older(24) {
		for _, resp := range list(value(c, "responders")) {
			if rm, ok := resp.(yaml.MapSlice); ok && value(rm, "type") == "teams" {
				return nil, fmt.Errorf("responders: type teams needs Alertmanager 0.24 or later, the Alertmanager runs %s", version)
			}
		}
	}
	for _, d := range in.drops {
		if older(d.minor) {
			c = without(c, d.path)
		}
	}
	for _, r := range in.oneOf {
		if r.upTo != 0 && !older(r.upTo) {
			continue
		}
		if value(c, r.keys[0]) == nil && value(c, r.keys[1]) == nil {
			return nil, fmt.Errorf("%s or %s must be set for Alertmanager %s", r.keys[0], r.keys[1], version)
		}
	}
	if h, ok := value(c, "http_config").(yaml.MapSlice); ok {
		c = set(c, "http_config", dropHTTPKeys(h, older))
	}
	return c, nil
}

// dropHTTPKeys drops from an HTTP client configuration the keys of
// httpDrops before their versions, and the OAuth2 proxy settings (all
// four, when proxy_url, no_proxy or proxy_connect_header is set) before
// 0.25.
func dropHTTPKeys(h yaml.MapSlice, older func(uint64) bool) yaml.MapSlice {
	h = dropOlder(h, httpDrops(), older)
	if o, ok := value(h, "oauth2").(yaml.MapSlice); ok && older(25) &&
		(value(o, "proxy_url") != nil || value(o, "no_proxy") != nil || value(o, "proxy_connect_header") != nil) {
		for _, k := range []string{"proxy_url", "no_proxy", "proxy_from_environment", "proxy_connect_header"} {
			o = without(o, k)
		}
		h = set(h, "oauth2", o)
	}
	return h
}

// dropRouteKeys drops from r and its children active_time_intervals
// before 0.24.
func dropRouteKeys(r yaml.MapSlice, older func(uint64) bool) yaml.MapSlice {
	if older(24) {
		r = without(r, "active_time_intervals")
	}
	children := list(value(r, "routes"))
	for i, c := range children {
		if cm, ok := c.(yaml.MapSlice); ok {
			children[i] = dropRouteKeys(cm, older)
		}
	}
	return set(r, "routes", children)
}

// dropLocations drops the location of each of a time interval's
// periods.
func dropLocations(ti yaml.MapSlice) yaml.MapSlice {
	periods := list(value(ti, "time_intervals"))
	for i, p := range periods {
		if pm, ok := p.(yaml.MapSlice); ok {
			periods[i] = without(pm, "location")
		}
	}
	return set(ti, "time_intervals", periods)
}

// dropOlder drops from m the keys of ds older than the Alertmanager.
func dropOlder(m yaml.MapSlice, ds []since, older func(uint64) bool) yaml.MapSlice {
	for _, d := range ds {
		if older(d.minor) {
			m = without(m, d.path)
		}
	}
	return m
}

// without returns m without the key at path (keys separated by dots),
// copied where it changes.
func without(m yaml.MapSlice, path string) yaml.MapSlice {
	key, rest, nested := strings.Cut(path, ".")
	for i, item := range m {
		if item.Key != key {
			continue
		}
		out := append(yaml.MapSlice(nil), m...)
		if !nested {
			return append(out[:i], out[i+1:]...)
		}
		if sub, ok := item.Value.(yaml.MapSlice); ok {
			out[i].Value = without(sub, rest)
		}
		return out
	}
	return m
}
