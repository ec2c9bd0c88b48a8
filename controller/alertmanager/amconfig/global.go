package amconfig

import (
	"errors"
	"fmt"
	"path"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// TemplatesDir is where prometheus-operator mounts the templates of
// spec.alertmanagerConfiguration, and where the configuration names them.
const TemplatesDir = "/etc/alertmanager/templates"

// document is an Alertmanager configuration built from
// spec.alertmanagerConfiguration.
type document struct {
	Global            *globalConfig   `yaml:"global,omitempty"`
	Route             *route          `yaml:"route,omitempty"`
	InhibitRules      []*inhibitRule  `yaml:"inhibit_rules,omitempty"`
	Receivers         []*receiver     `yaml:"receivers,omitempty"`
	MuteTimeIntervals []*timeInterval `yaml:"mute_time_intervals,omitempty"`
	Templates         []string        `yaml:"templates,omitempty"`
}

// globalConfig is the global section of Alertmanager's configuration.
type globalConfig struct {
	ResolveTimeout       string      `yaml:"resolve_timeout,omitempty"`
	HTTPConfig           *httpConfig `yaml:"http_config,omitempty"`
	SMTPFrom             string      `yaml:"smtp_from,omitempty"`
	SMTPHello            string      `yaml:"smtp_hello,omitempty"`
	SMTPSmarthost        string      `yaml:"smtp_smarthost,omitempty"`
	SMTPAuthUsername     string      `yaml:"smtp_auth_username,omitempty"`
	SMTPAuthPassword     string      `yaml:"smtp_auth_password,omitempty"`
	SMTPAuthSecret       string      `yaml:"smtp_auth_secret,omitempty"`
	SMTPAuthIdentity     string      `yaml:"smtp_auth_identity,omitempty"`
	SMTPRequireTLS       *bool       `yaml:"smtp_require_tls,omitempty"`
	SMTPTLSConfig        *tlsConfig  `yaml:"smtp_tls_config,omitempty"`
	SMTPForceImplicitTLS *bool       `yaml:"smtp_force_implicit_tls,omitempty"`
	SlackAPIURL          string      `yaml:"slack_api_url,omitempty"`
	PagerdutyURL         string      `yaml:"pagerduty_url,omitempty"`
	OpsGenieAPIURL       string      `yaml:"opsgenie_api_url,omitempty"`
	OpsGenieAPIKey       string      `yaml:"opsgenie_api_key,omitempty"`
	WeChatAPIURL         string      `yaml:"wechat_api_url,omitempty"`
	WeChatAPISecret      string      `yaml:"wechat_api_secret,omitempty"`
	WeChatAPICorpID      string      `yaml:"wechat_api_corp_id,omitempty"`
	VictorOpsAPIURL      string      `yaml:"victorops_api_url,omitempty"`
	VictorOpsAPIKey      string      `yaml:"victorops_api_key,omitempty"`
	TelegramAPIURL       string      `yaml:"telegram_api_url,omitempty"`
	TelegramBotToken     string      `yaml:"telegram_bot_token,omitempty"`
	TelegramBotTokenFile string      `yaml:"telegram_bot_token_file,omitempty"`
	WebexAPIURL          string      `yaml:"webex_api_url,omitempty"`
	JiraAPIURL           string      `yaml:"jira_api_url,omitempty"`
	RocketChatAPIURL     string      `yaml:"rocketchat_api_url,omitempty"`
	RocketChatToken      string      `yaml:"rocketchat_token,omitempty"`
	RocketChatTokenID    string      `yaml:"rocketchat_token_id,omitempty"`
}

// convertGlobal converts spec.alertmanagerConfiguration.global for an
// Alertmanager of version; its references are read in the Alertmanager's
// namespace. Mattermost (Alertmanager 0.32) is not rendered yet: refused
// on every version, as prometheus-operator refuses it for 0.31.
// Telegram's botToken and botTokenFile (prometheus-operator v0.95) need
// 0.31: refused before.
// The other settings are refused or dropped for the version as
// prometheus-operator v0.93.1 does (checkGlobalVersion, dropGlobal).
func (r refs) convertGlobal(in *monitoringv1.AlertmanagerGlobalConfig, version string) (*globalConfig, error) {
	if in == nil {
		return nil, nil
	}
	if in.MattermostConfig != nil {
		return nil, notRendered("mattermost", "0.32")
	}
	if err := checkGlobalVersion(in, version); err != nil {
		return nil, err
	}
	out := &globalConfig{ResolveTimeout: string(in.ResolveTimeout), PagerdutyURL: string(ptr.Deref(in.PagerdutyURL, ""))}
	if err := r.convertSMTP(out, in.SMTPConfig); err != nil {
		return nil, err
	}
	var err error
	if h := in.HTTPConfigWithProxy; h != nil {
		c := monitoringv1alpha1.HTTPConfig{
			Authorization: h.Authorization, BasicAuth: h.BasicAuth, OAuth2: h.OAuth2,
			BearerTokenSecret: h.BearerTokenSecret, TLSConfig: h.TLSConfig, ProxyConfig: h.ProxyConfig,
			FollowRedirects: h.FollowRedirects, EnableHTTP2: h.EnableHTTP2,
		}
		if out.HTTPConfig, err = r.httpConfig(&c); err != nil {
			return nil, fmt.Errorf("httpConfig: %w", err)
		}
	}
	if in.SlackAPIURL != nil {
		if out.SlackAPIURL, err = r.secret(*in.SlackAPIURL); err != nil {
			return nil, fmt.Errorf("slackApiUrl: %w", err)
		}
	}
	if in.OpsGenieAPIURL != nil {
		if out.OpsGenieAPIURL, err = r.secret(*in.OpsGenieAPIURL); err != nil {
			return nil, fmt.Errorf("opsGenieApiUrl: %w", err)
		}
	}
	if out.OpsGenieAPIKey, err = r.optionalSecret(in.OpsGenieAPIKey); err != nil {
		return nil, fmt.Errorf("opsGenieApiKey: %w", err)
	}
	if t := in.TelegramConfig; t != nil {
		if err := r.convertGlobalTelegram(out, t, version); err != nil {
			return nil, err
		}
	}
	if j := in.JiraConfig; j != nil {
		out.JiraAPIURL = string(ptr.Deref(j.APIURL, ""))
	}
	if w := in.WebexConfig; w != nil {
		out.WebexAPIURL = string(ptr.Deref(w.APIURL, ""))
	}
	if rc := in.RocketChatConfig; rc != nil {
		out.RocketChatAPIURL = string(ptr.Deref(rc.APIURL, ""))
		if out.RocketChatToken, err = r.optionalSecret(rc.Token); err != nil {
			return nil, fmt.Errorf("rocketChat token: %w", err)
		}
		if out.RocketChatTokenID, err = r.optionalSecret(rc.TokenID); err != nil {
			return nil, fmt.Errorf("rocketChat tokenID: %w", err)
		}
	}
	if w := in.WeChatConfig; w != nil {
		out.WeChatAPIURL = string(ptr.Deref(w.APIURL, ""))
		out.WeChatAPICorpID = ptr.Deref(w.APICorpID, "")
		if out.WeChatAPISecret, err = r.optionalSecret(w.APISecret); err != nil {
			return nil, fmt.Errorf("wechat apiSecret: %w", err)
		}
	}
	if v := in.VictorOpsConfig; v != nil {
		out.VictorOpsAPIURL = string(ptr.Deref(v.APIURL, ""))
		if out.VictorOpsAPIKey, err = r.optionalSecret(v.APIKey); err != nil {
			return nil, fmt.Errorf("victorops apiKey: %w", err)
		}
	}
	dropGlobal(out, version)
	return out, nil
}

// convertSMTP sets the global SMTP settings of out from in.
func (r refs) convertSMTP(out *globalConfig, s *monitoringv1.GlobalSMTPConfig) error {
	if s == nil {
		return nil
	}
	out.SMTPFrom = ptr.Deref(s.From, "")
	out.SMTPHello = ptr.Deref(s.Hello, "")
	out.SMTPAuthUsername = ptr.Deref(s.AuthUsername, "")
	out.SMTPAuthIdentity = ptr.Deref(s.AuthIdentity, "")
	out.SMTPRequireTLS = s.RequireTLS
	out.SMTPForceImplicitTLS = s.ForceImplicitTLS
	if s.SmartHost != nil {
		out.SMTPSmarthost = s.SmartHost.Host + ":" + s.SmartHost.Port
	}
	var err error
	if s.TLSConfig != nil {
		if out.SMTPTLSConfig, err = r.tlsConfig(s.TLSConfig); err != nil {
			return fmt.Errorf("smtp: %w", err)
		}
	}
	if out.SMTPAuthPassword, err = r.optionalSecret(s.AuthPassword); err != nil {
		return fmt.Errorf("smtp authPassword: %w", err)
	}
	if out.SMTPAuthSecret, err = r.optionalSecret(s.AuthSecret); err != nil {
		return fmt.Errorf("smtp authSecret: %w", err)
	}
	return nil
}

// fromConfiguration builds the base configuration from
// spec.alertmanagerConfiguration: its global settings, the route,
// receivers, inhibition rules and time intervals of the
// AlertmanagerConfig it names, without a namespace matcher, and its
// templates under TemplatesDir.
func fromConfiguration(r refs, am *monitoringv1.Alertmanager, amc *monitoringv1alpha1.AlertmanagerConfig) ([]byte, error) {
	spec := am.Spec.AlertmanagerConfiguration
	if amc == nil {
		return nil, fmt.Errorf("spec.alertmanagerConfiguration: AlertmanagerConfig %s/%s not found", am.Namespace, spec.Name)
	}
	key := types.NamespacedName{Namespace: amc.Namespace, Name: amc.Name}
	if err := checkFiles(am, amc, true); err != nil {
		return nil, fmt.Errorf("AlertmanagerConfig %s: %w", key, err)
	}
	if err := checkVersion(amc, am.Spec.Version); err != nil {
		return nil, fmt.Errorf("AlertmanagerConfig %s: %w", key, err)
	}
	doc := document{}
	var err error
	if doc.Global, err = r.convertGlobal(spec.Global, am.Spec.Version); err != nil {
		return nil, fmt.Errorf("spec.alertmanagerConfiguration.global: %w", err)
	}
	if amc.Spec.Route == nil {
		return nil, fmt.Errorf("AlertmanagerConfig %s: the global configuration needs a route", key)
	}
	if doc.Route, err = convertRoute(amc.Spec.Route, key); err != nil {
		return nil, fmt.Errorf("AlertmanagerConfig %s: route: %w", key, err)
	}
	if err := checkRootRoute(doc.Route); err != nil {
		return nil, fmt.Errorf("AlertmanagerConfig %s: route: %w", key, err)
	}
	part, err := convertConfig(r, amc, strategy{})
	if err != nil {
		return nil, fmt.Errorf("AlertmanagerConfig %s: %w", key, err)
	}
	dropUnknown(part, am.Spec.Version)
	dropRoute(doc.Route, before(am.Spec.Version))
	doc.Receivers, doc.InhibitRules, doc.MuteTimeIntervals = part.receivers, part.inhibitRules, part.timeIntervals
	for _, t := range spec.Templates {
		if t.ConfigMap != nil {
			doc.Templates = append(doc.Templates, path.Join(TemplatesDir, t.ConfigMap.Key))
		}
		if t.Secret != nil {
			doc.Templates = append(doc.Templates, path.Join(TemplatesDir, t.Secret.Key))
		}
	}
	return yaml.Marshal(doc)
}

// convertGlobalTelegram converts the global Telegram settings: the API
// URL, and the bot token the receivers without one inherit (from a
// Secret, or a file of the container: the Alertmanager owner's, which
// spec.alertmanagerConfigFileSystemMode does not govern), mutually
// exclusive, both needing Alertmanager 0.31 (telegram_bot_token and
// telegram_bot_token_file of its global section).
func (r refs) convertGlobalTelegram(out *globalConfig, t *monitoringv1.GlobalTelegramConfig, version string) error {
	out.TelegramAPIURL = string(ptr.Deref(t.APIURL, ""))
	if t.BotToken == nil && t.BotTokenFile == nil {
		return nil
	}
	if t.BotToken != nil && t.BotTokenFile != nil {
		return errors.New("telegram: botToken and botTokenFile are mutually exclusive")
	}
	if m, ok := minor(version); ok && m < 31 {
		return fmt.Errorf("telegram: botToken and botTokenFile need Alertmanager 0.31 or later, the Alertmanager runs %s", version)
	}
	out.TelegramBotTokenFile = ptr.Deref(t.BotTokenFile, "")
	if t.BotToken != nil {
		token, err := r.secret(*t.BotToken)
		if err != nil {
			return fmt.Errorf("telegram botToken: %w", err)
		}
		if token == "" {
			return fmt.Errorf("telegram botToken: key %q of secret %s/%s is empty", t.BotToken.Key, r.namespace, t.BotToken.Name)
		}
		out.TelegramBotToken = token
	}
	return nil
}

// checkRootRoute refuses what a root route cannot have.
func checkRootRoute(r *route) error {
	switch {
	case r.Continue:
		return errors.New("the root route cannot continue")
	case r.Receiver == "":
		return errors.New("the root route needs a receiver")
	case len(r.Matchers) > 0:
		return errors.New("the root route cannot have matchers")
	case len(r.MuteTimeIntervals) > 0:
		return errors.New("the root route cannot have mute time intervals")
	case len(r.ActiveTimeIntervals) > 0:
		return errors.New("the root route cannot have active time intervals")
	}
	return nil
}
