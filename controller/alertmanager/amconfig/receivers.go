package amconfig

import (
	"fmt"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// receiver is a receiver of Alertmanager's configuration, with the
// integrations AlertmanagerConfig v1alpha1 has.
type receiver struct {
	Name              string              `yaml:"name"`
	OpsgenieConfigs   []*opsgenieConfig   `yaml:"opsgenie_configs,omitempty"`
	PagerdutyConfigs  []*pagerdutyConfig  `yaml:"pagerduty_configs,omitempty"`
	SlackConfigs      []*slackConfig      `yaml:"slack_configs,omitempty"`
	WebhookConfigs    []*webhookConfig    `yaml:"webhook_configs,omitempty"`
	WeChatConfigs     []*weChatConfig     `yaml:"wechat_configs,omitempty"`
	EmailConfigs      []*emailConfig      `yaml:"email_configs,omitempty"`
	PushoverConfigs   []*pushoverConfig   `yaml:"pushover_configs,omitempty"`
	VictorOpsConfigs  []*victorOpsConfig  `yaml:"victorops_configs,omitempty"`
	SNSConfigs        []*snsConfig        `yaml:"sns_configs,omitempty"`
	TelegramConfigs   []*telegramConfig   `yaml:"telegram_configs,omitempty"`
	DiscordConfigs    []*discordConfig    `yaml:"discord_configs,omitempty"`
	WebexConfigs      []*webexConfig      `yaml:"webex_configs,omitempty"`
	MSTeamsConfigs    []*msTeamsConfig    `yaml:"msteams_configs,omitempty"`
	MSTeamsV2Configs  []*msTeamsV2Config  `yaml:"msteamsv2_configs,omitempty"`
	RocketChatConfigs []*rocketChatConfig `yaml:"rocketchat_configs,omitempty"`
}

// notRendered is the error for a field of Alertmanager since or later
// that the configuration does not render yet.
func notRendered(field, since string) error {
	return fmt.Errorf("%s (Alertmanager %s or later) is not rendered yet", field, since)
}

// convertList converts each element of in with conv; the error names the
// field and the index.
func convertList[In, Out any](field string, in []In, conv func(In) (*Out, error)) ([]*Out, error) {
	var out []*Out
	for i, c := range in {
		o, err := conv(c)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", field, i, err)
		}
		out = append(out, o)
	}
	return out, nil
}

// convertReceiver converts a receiver, its name prefixed.
func (r refs) convertReceiver(in monitoringv1alpha1.Receiver, key types.NamespacedName) (*receiver, error) {
	out := &receiver{Name: prefixed(key, in.Name)}
	var err error
	if out.OpsgenieConfigs, err = convertList("opsgenieConfigs", in.OpsGenieConfigs, r.opsgenie); err != nil {
		return nil, err
	}
	if out.PagerdutyConfigs, err = convertList("pagerdutyConfigs", in.PagerDutyConfigs, r.pagerduty); err != nil {
		return nil, err
	}
	if out.DiscordConfigs, err = convertList("discordConfigs", in.DiscordConfigs, r.discord); err != nil {
		return nil, err
	}
	if out.SlackConfigs, err = convertList("slackConfigs", in.SlackConfigs, r.slack); err != nil {
		return nil, err
	}
	if out.WebhookConfigs, err = convertList("webhookConfigs", in.WebhookConfigs, r.webhook); err != nil {
		return nil, err
	}
	if out.WeChatConfigs, err = convertList("wechatConfigs", in.WeChatConfigs, r.wechat); err != nil {
		return nil, err
	}
	if out.EmailConfigs, err = convertList("emailConfigs", in.EmailConfigs, r.email); err != nil {
		return nil, err
	}
	if out.VictorOpsConfigs, err = convertList("victoropsConfigs", in.VictorOpsConfigs, r.victorops); err != nil {
		return nil, err
	}
	if out.PushoverConfigs, err = convertList("pushoverConfigs", in.PushoverConfigs, r.pushover); err != nil {
		return nil, err
	}
	if out.SNSConfigs, err = convertList("snsConfigs", in.SNSConfigs, r.sns); err != nil {
		return nil, err
	}
	if out.TelegramConfigs, err = convertList("telegramConfigs", in.TelegramConfigs, r.telegram); err != nil {
		return nil, err
	}
	if out.WebexConfigs, err = convertList("webexConfigs", in.WebexConfigs, r.webex); err != nil {
		return nil, err
	}
	if out.MSTeamsConfigs, err = convertList("msteamsConfigs", in.MSTeamsConfigs, r.msteams); err != nil {
		return nil, err
	}
	if out.MSTeamsV2Configs, err = convertList("msteamsv2Configs", in.MSTeamsV2Configs, r.msteamsV2); err != nil {
		return nil, err
	}
	if out.RocketChatConfigs, err = convertList("rocketchatConfigs", in.RocketChatConfigs, r.rocketchat); err != nil {
		return nil, err
	}
	return out, nil
}

type webhookConfig struct {
	SendResolved *bool       `yaml:"send_resolved,omitempty"`
	HTTPConfig   *httpConfig `yaml:"http_config,omitempty"`
	URL          string      `yaml:"url,omitempty"`
	MaxAlerts    int32       `yaml:"max_alerts,omitempty"`
	Timeout      string      `yaml:"timeout,omitempty"`
}

// webhook converts a webhook configuration. payload (Alertmanager 0.32)
// is not rendered yet: refused on every version, as prometheus-operator
// refuses it for 0.31.
func (r refs) webhook(in monitoringv1alpha1.WebhookConfig) (*webhookConfig, error) {
	if in.Payload != nil {
		return nil, notRendered("payload", "0.32")
	}
	out := &webhookConfig{SendResolved: in.SendResolved, MaxAlerts: in.MaxAlerts}
	var err error
	switch {
	case in.URLSecret != nil:
		if out.URL, err = r.secret(*in.URLSecret); err != nil {
			return nil, fmt.Errorf("urlSecret: %w", err)
		}
	case in.URL != nil:
		out.URL = *in.URL
	}
	if out.HTTPConfig, err = r.httpConfig(in.HTTPConfig); err != nil {
		return nil, err
	}
	if in.Timeout != nil {
		out.Timeout = string(*in.Timeout)
	}
	return out, nil
}

type slackConfig struct {
	SendResolved *bool         `yaml:"send_resolved,omitempty"`
	HTTPConfig   *httpConfig   `yaml:"http_config,omitempty"`
	APIURL       string        `yaml:"api_url,omitempty"`
	Channel      string        `yaml:"channel,omitempty"`
	Username     string        `yaml:"username,omitempty"`
	Color        string        `yaml:"color,omitempty"`
	Title        string        `yaml:"title,omitempty"`
	TitleLink    string        `yaml:"title_link,omitempty"`
	Pretext      string        `yaml:"pretext,omitempty"`
	Text         string        `yaml:"text,omitempty"`
	Fields       []slackField  `yaml:"fields,omitempty"`
	ShortFields  bool          `yaml:"short_fields,omitempty"`
	Footer       string        `yaml:"footer,omitempty"`
	Fallback     string        `yaml:"fallback,omitempty"`
	CallbackID   string        `yaml:"callback_id,omitempty"`
	IconEmoji    string        `yaml:"icon_emoji,omitempty"`
	IconURL      string        `yaml:"icon_url,omitempty"`
	ImageURL     string        `yaml:"image_url,omitempty"`
	ThumbURL     string        `yaml:"thumb_url,omitempty"`
	LinkNames    bool          `yaml:"link_names,omitempty"`
	MrkdwnIn     []string      `yaml:"mrkdwn_in,omitempty"`
	Actions      []slackAction `yaml:"actions,omitempty"`
	Timeout      string        `yaml:"timeout,omitempty"`
	MessageText  string        `yaml:"message_text,omitempty"`
}

type slackField struct {
	Title string `yaml:"title,omitempty"`
	Value string `yaml:"value,omitempty"`
	Short *bool  `yaml:"short,omitempty"`
}

type slackAction struct {
	Type    string        `yaml:"type,omitempty"`
	Text    string        `yaml:"text,omitempty"`
	URL     string        `yaml:"url,omitempty"`
	Style   string        `yaml:"style,omitempty"`
	Name    string        `yaml:"name,omitempty"`
	Value   string        `yaml:"value,omitempty"`
	Confirm *slackConfirm `yaml:"confirm,omitempty"`
}

type slackConfirm struct {
	Text        string `yaml:"text,omitempty"`
	Title       string `yaml:"title,omitempty"`
	OkText      string `yaml:"ok_text,omitempty"`
	DismissText string `yaml:"dismiss_text,omitempty"`
}

// slack converts a Slack configuration. updateMessage (Alertmanager 0.32)
// is not rendered yet: refused on every version, as prometheus-operator
// refuses it for 0.31.
func (r refs) slack(in monitoringv1alpha1.SlackConfig) (*slackConfig, error) {
	if in.UpdateMessage != nil {
		return nil, notRendered("updateMessage", "0.32")
	}
	out := &slackConfig{
		SendResolved: in.SendResolved,
		Channel:      ptr.Deref(in.Channel, ""),
		Username:     ptr.Deref(in.Username, ""),
		Color:        ptr.Deref(in.Color, ""),
		Title:        ptr.Deref(in.Title, ""),
		TitleLink:    in.TitleLink,
		Pretext:      ptr.Deref(in.Pretext, ""),
		Text:         ptr.Deref(in.Text, ""),
		ShortFields:  ptr.Deref(in.ShortFields, false),
		Footer:       ptr.Deref(in.Footer, ""),
		Fallback:     ptr.Deref(in.Fallback, ""),
		CallbackID:   ptr.Deref(in.CallbackID, ""),
		IconEmoji:    ptr.Deref(in.IconEmoji, ""),
		IconURL:      in.IconURL,
		ImageURL:     in.ImageURL,
		ThumbURL:     in.ThumbURL,
		LinkNames:    ptr.Deref(in.LinkNames, false),
		MrkdwnIn:     in.MrkdwnIn,
		MessageText:  ptr.Deref(in.MessageText, ""),
	}
	var err error
	if in.APIURL != nil {
		if out.APIURL, err = r.url(*in.APIURL); err != nil {
			return nil, fmt.Errorf("apiURL: %w", err)
		}
	}
	for _, f := range in.Fields {
		out.Fields = append(out.Fields, slackField{Title: f.Title, Value: f.Value, Short: f.Short})
	}
	for _, a := range in.Actions {
		action := slackAction{
			Type: a.Type, Text: a.Text, URL: a.URL,
			Style: ptr.Deref(a.Style, ""), Name: ptr.Deref(a.Name, ""), Value: ptr.Deref(a.Value, ""),
		}
		if c := a.ConfirmField; c != nil {
			action.Confirm = &slackConfirm{
				Text: c.Text, Title: ptr.Deref(c.Title, ""),
				OkText: ptr.Deref(c.OkText, ""), DismissText: ptr.Deref(c.DismissText, ""),
			}
		}
		out.Actions = append(out.Actions, action)
	}
	if out.HTTPConfig, err = r.httpConfig(in.HTTPConfig); err != nil {
		return nil, err
	}
	if in.Timeout != nil {
		out.Timeout = string(*in.Timeout)
	}
	return out, nil
}

type discordConfig struct {
	SendResolved *bool       `yaml:"send_resolved,omitempty"`
	HTTPConfig   *httpConfig `yaml:"http_config,omitempty"`
	WebhookURL   string      `yaml:"webhook_url,omitempty"`
	Title        string      `yaml:"title,omitempty"`
	Message      string      `yaml:"message,omitempty"`
	Content      string      `yaml:"content,omitempty"`
	Username     string      `yaml:"username,omitempty"`
	AvatarURL    string      `yaml:"avatar_url,omitempty"`
}

func (r refs) discord(in monitoringv1alpha1.DiscordConfig) (*discordConfig, error) {
	out := &discordConfig{
		SendResolved: in.SendResolved,
		Title:        ptr.Deref(in.Title, ""),
		Message:      ptr.Deref(in.Message, ""),
		Content:      ptr.Deref(in.Content, ""),
		Username:     ptr.Deref(in.Username, ""),
		AvatarURL:    string(ptr.Deref(in.AvatarURL, "")),
	}
	var err error
	if out.WebhookURL, err = r.url(in.APIURL); err != nil {
		return nil, fmt.Errorf("apiURL: %w", err)
	}
	if out.HTTPConfig, err = r.httpConfig(in.HTTPConfig); err != nil {
		return nil, err
	}
	return out, nil
}

type webexConfig struct {
	SendResolved *bool       `yaml:"send_resolved,omitempty"`
	HTTPConfig   *httpConfig `yaml:"http_config,omitempty"`
	APIURL       string      `yaml:"api_url,omitempty"`
	Message      string      `yaml:"message,omitempty"`
	RoomID       string      `yaml:"room_id"`
}

func (r refs) webex(in monitoringv1alpha1.WebexConfig) (*webexConfig, error) {
	out := &webexConfig{
		SendResolved: in.SendResolved,
		APIURL:       string(ptr.Deref(in.APIURL, "")),
		Message:      ptr.Deref(in.Message, ""),
		RoomID:       in.RoomID,
	}
	var err error
	if out.HTTPConfig, err = r.httpConfig(in.HTTPConfig); err != nil {
		return nil, err
	}
	return out, nil
}

type weChatConfig struct {
	SendResolved *bool       `yaml:"send_resolved,omitempty"`
	HTTPConfig   *httpConfig `yaml:"http_config,omitempty"`
	APISecret    string      `yaml:"api_secret,omitempty"`
	APIURL       string      `yaml:"api_url,omitempty"`
	CorpID       string      `yaml:"corp_id,omitempty"`
	AgentID      string      `yaml:"agent_id,omitempty"`
	ToUser       string      `yaml:"to_user,omitempty"`
	ToParty      string      `yaml:"to_party,omitempty"`
	ToTag        string      `yaml:"to_tag,omitempty"`
	Message      string      `yaml:"message,omitempty"`
	MessageType  string      `yaml:"message_type,omitempty"`
}

func (r refs) wechat(in monitoringv1alpha1.WeChatConfig) (*weChatConfig, error) {
	out := &weChatConfig{
		SendResolved: in.SendResolved,
		APIURL:       string(ptr.Deref(in.APIURL, "")),
		CorpID:       ptr.Deref(in.CorpID, ""),
		AgentID:      ptr.Deref(in.AgentID, ""),
		ToUser:       ptr.Deref(in.ToUser, ""),
		ToParty:      ptr.Deref(in.ToParty, ""),
		ToTag:        ptr.Deref(in.ToTag, ""),
		Message:      ptr.Deref(in.Message, ""),
		MessageType:  ptr.Deref(in.MessageType, ""),
	}
	var err error
	if out.APISecret, err = r.optionalSecret(in.APISecret); err != nil {
		return nil, fmt.Errorf("apiSecret: %w", err)
	}
	if out.HTTPConfig, err = r.httpConfig(in.HTTPConfig); err != nil {
		return nil, err
	}
	return out, nil
}

type msTeamsConfig struct {
	SendResolved *bool       `yaml:"send_resolved,omitempty"`
	HTTPConfig   *httpConfig `yaml:"http_config,omitempty"`
	WebhookURL   string      `yaml:"webhook_url"`
	Title        string      `yaml:"title,omitempty"`
	Summary      string      `yaml:"summary,omitempty"`
	Text         string      `yaml:"text,omitempty"`
}

func (r refs) msteams(in monitoringv1alpha1.MSTeamsConfig) (*msTeamsConfig, error) {
	out := &msTeamsConfig{
		SendResolved: in.SendResolved,
		Title:        ptr.Deref(in.Title, ""),
		Summary:      ptr.Deref(in.Summary, ""),
		Text:         ptr.Deref(in.Text, ""),
	}
	var err error
	if out.WebhookURL, err = r.secret(in.WebhookURL); err != nil {
		return nil, fmt.Errorf("webhookUrl: %w", err)
	}
	if out.HTTPConfig, err = r.httpConfig(in.HTTPConfig); err != nil {
		return nil, err
	}
	return out, nil
}

type msTeamsV2Config struct {
	SendResolved *bool       `yaml:"send_resolved,omitempty"`
	HTTPConfig   *httpConfig `yaml:"http_config,omitempty"`
	WebhookURL   string      `yaml:"webhook_url,omitempty"`
	Title        string      `yaml:"title,omitempty"`
	Text         string      `yaml:"text,omitempty"`
}

func (r refs) msteamsV2(in monitoringv1alpha1.MSTeamsV2Config) (*msTeamsV2Config, error) {
	out := &msTeamsV2Config{
		SendResolved: in.SendResolved,
		Title:        ptr.Deref(in.Title, ""),
		Text:         ptr.Deref(in.Text, ""),
	}
	var err error
	if out.WebhookURL, err = r.optionalSecret(in.WebhookURL); err != nil {
		return nil, fmt.Errorf("webhookURL: %w", err)
	}
	if out.HTTPConfig, err = r.httpConfig(in.HTTPConfig); err != nil {
		return nil, err
	}
	return out, nil
}
