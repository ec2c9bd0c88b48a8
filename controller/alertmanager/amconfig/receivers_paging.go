package amconfig

import (
	"fmt"
	"net"
	"strings"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"k8s.io/utils/ptr"
)

// The integrations that page or mail someone: PagerDuty, OpsGenie,
// VictorOps, Pushover, e-mail, SNS, Telegram, Rocket.Chat.

type pagerdutyConfig struct {
	SendResolved *bool             `yaml:"send_resolved,omitempty"`
	HTTPConfig   *httpConfig       `yaml:"http_config,omitempty"`
	ServiceKey   string            `yaml:"service_key,omitempty"`
	RoutingKey   string            `yaml:"routing_key,omitempty"`
	URL          string            `yaml:"url,omitempty"`
	Client       string            `yaml:"client,omitempty"`
	ClientURL    string            `yaml:"client_url,omitempty"`
	Description  string            `yaml:"description,omitempty"`
	Details      map[string]string `yaml:"details,omitempty"`
	Images       []pagerdutyImage  `yaml:"images,omitempty"`
	Links        []pagerdutyLink   `yaml:"links,omitempty"`
	Severity     string            `yaml:"severity,omitempty"`
	Class        string            `yaml:"class,omitempty"`
	Component    string            `yaml:"component,omitempty"`
	Group        string            `yaml:"group,omitempty"`
	Source       string            `yaml:"source,omitempty"`
	Timeout      string            `yaml:"timeout,omitempty"`
}

type pagerdutyImage struct {
	Src  string `yaml:"src,omitempty"`
	Alt  string `yaml:"alt,omitempty"`
	Href string `yaml:"href,omitempty"`
}

type pagerdutyLink struct {
	Href string `yaml:"href,omitempty"`
	Text string `yaml:"text,omitempty"`
}

// keyValues is a list of key/value pairs as a map, nil when empty.
func keyValues(in []monitoringv1alpha1.KeyValue) map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]string, len(in))
	for _, kv := range in {
		out[kv.Key] = kv.Value
	}
	return out
}

func (r refs) pagerduty(in monitoringv1alpha1.PagerDutyConfig) (*pagerdutyConfig, error) {
	out := &pagerdutyConfig{
		SendResolved: in.SendResolved,
		URL:          string(ptr.Deref(in.URL, "")),
		Client:       ptr.Deref(in.Client, ""),
		ClientURL:    ptr.Deref(in.ClientURL, ""),
		Description:  ptr.Deref(in.Description, ""),
		Details:      keyValues(in.Details),
		Severity:     ptr.Deref(in.Severity, ""),
		Class:        ptr.Deref(in.Class, ""),
		Component:    ptr.Deref(in.Component, ""),
		Group:        ptr.Deref(in.Group, ""),
		Source:       ptr.Deref(in.Source, ""),
	}
	var err error
	if out.RoutingKey, err = r.optionalSecret(in.RoutingKey); err != nil {
		return nil, fmt.Errorf("routingKey: %w", err)
	}
	if out.ServiceKey, err = r.optionalSecret(in.ServiceKey); err != nil {
		return nil, fmt.Errorf("serviceKey: %w", err)
	}
	for _, l := range in.PagerDutyLinkConfigs {
		out.Links = append(out.Links, pagerdutyLink{Href: ptr.Deref(l.Href, ""), Text: ptr.Deref(l.Text, "")})
	}
	for _, i := range in.PagerDutyImageConfigs {
		out.Images = append(out.Images, pagerdutyImage{Src: ptr.Deref(i.Src, ""), Alt: ptr.Deref(i.Alt, ""), Href: ptr.Deref(i.Href, "")})
	}
	if out.HTTPConfig, err = r.httpConfig(in.HTTPConfig); err != nil {
		return nil, err
	}
	if in.Timeout != nil {
		out.Timeout = string(*in.Timeout)
	}
	return out, nil
}

type opsgenieConfig struct {
	SendResolved *bool               `yaml:"send_resolved,omitempty"`
	HTTPConfig   *httpConfig         `yaml:"http_config,omitempty"`
	APIKey       string              `yaml:"api_key,omitempty"`
	APIURL       string              `yaml:"api_url,omitempty"`
	Message      string              `yaml:"message,omitempty"`
	Description  string              `yaml:"description,omitempty"`
	Source       string              `yaml:"source,omitempty"`
	Details      map[string]string   `yaml:"details,omitempty"`
	Responders   []opsgenieResponder `yaml:"responders,omitempty"`
	Tags         string              `yaml:"tags,omitempty"`
	Note         string              `yaml:"note,omitempty"`
	Priority     string              `yaml:"priority,omitempty"`
	UpdateAlerts *bool               `yaml:"update_alerts,omitempty"`
	Entity       string              `yaml:"entity,omitempty"`
	Actions      string              `yaml:"actions,omitempty"`
}

type opsgenieResponder struct {
	ID       string `yaml:"id,omitempty"`
	Name     string `yaml:"name,omitempty"`
	Username string `yaml:"username,omitempty"`
	Type     string `yaml:"type,omitempty"`
}

func (r refs) opsgenie(in monitoringv1alpha1.OpsGenieConfig) (*opsgenieConfig, error) {
	out := &opsgenieConfig{
		SendResolved: in.SendResolved,
		APIURL:       string(ptr.Deref(in.APIURL, "")),
		Message:      ptr.Deref(in.Message, ""),
		Description:  ptr.Deref(in.Description, ""),
		Source:       ptr.Deref(in.Source, ""),
		Details:      keyValues(in.Details),
		Tags:         ptr.Deref(in.Tags, ""),
		Note:         ptr.Deref(in.Note, ""),
		Priority:     ptr.Deref(in.Priority, ""),
		UpdateAlerts: in.UpdateAlerts,
		Entity:       ptr.Deref(in.Entity, ""),
		Actions:      ptr.Deref(in.Actions, ""),
	}
	var err error
	if out.APIKey, err = r.optionalSecret(in.APIKey); err != nil {
		return nil, fmt.Errorf("apiKey: %w", err)
	}
	for _, rs := range in.Responders {
		out.Responders = append(out.Responders, opsgenieResponder{
			ID: ptr.Deref(rs.ID, ""), Name: ptr.Deref(rs.Name, ""), Username: ptr.Deref(rs.Username, ""), Type: rs.Type,
		})
	}
	if out.HTTPConfig, err = r.httpConfig(in.HTTPConfig); err != nil {
		return nil, err
	}
	return out, nil
}

type victorOpsConfig struct {
	SendResolved      *bool             `yaml:"send_resolved,omitempty"`
	HTTPConfig        *httpConfig       `yaml:"http_config,omitempty"`
	APIKey            string            `yaml:"api_key,omitempty"`
	APIURL            string            `yaml:"api_url,omitempty"`
	RoutingKey        string            `yaml:"routing_key"`
	MessageType       string            `yaml:"message_type,omitempty"`
	StateMessage      string            `yaml:"state_message,omitempty"`
	EntityDisplayName string            `yaml:"entity_display_name,omitempty"`
	MonitoringTool    string            `yaml:"monitoring_tool,omitempty"`
	CustomFields      map[string]string `yaml:"custom_fields,omitempty"`
}

func (r refs) victorops(in monitoringv1alpha1.VictorOpsConfig) (*victorOpsConfig, error) {
	out := &victorOpsConfig{
		SendResolved:      in.SendResolved,
		APIURL:            string(ptr.Deref(in.APIURL, "")),
		RoutingKey:        in.RoutingKey,
		MessageType:       ptr.Deref(in.MessageType, ""),
		StateMessage:      ptr.Deref(in.StateMessage, ""),
		EntityDisplayName: ptr.Deref(in.EntityDisplayName, ""),
		MonitoringTool:    ptr.Deref(in.MonitoringTool, ""),
		CustomFields:      keyValues(in.CustomFields),
	}
	var err error
	if out.APIKey, err = r.optionalSecret(in.APIKey); err != nil {
		return nil, fmt.Errorf("apiKey: %w", err)
	}
	if out.HTTPConfig, err = r.httpConfig(in.HTTPConfig); err != nil {
		return nil, err
	}
	return out, nil
}

type pushoverConfig struct {
	SendResolved *bool       `yaml:"send_resolved,omitempty"`
	HTTPConfig   *httpConfig `yaml:"http_config,omitempty"`
	UserKey      string      `yaml:"user_key,omitempty"`
	UserKeyFile  string      `yaml:"user_key_file,omitempty"`
	Token        string      `yaml:"token,omitempty"`
	TokenFile    string      `yaml:"token_file,omitempty"`
	Title        string      `yaml:"title,omitempty"`
	Message      string      `yaml:"message,omitempty"`
	URL          string      `yaml:"url,omitempty"`
	URLTitle     string      `yaml:"url_title,omitempty"`
	TTL          string      `yaml:"ttl,omitempty"`
	Device       string      `yaml:"device,omitempty"`
	Sound        string      `yaml:"sound,omitempty"`
	Priority     string      `yaml:"priority,omitempty"`
	Retry        string      `yaml:"retry,omitempty"`
	Expire       string      `yaml:"expire,omitempty"`
	HTML         *bool       `yaml:"html,omitempty"`
	Monospace    *bool       `yaml:"monospace,omitempty"`
}

// pushover converts a Pushover configuration. Unlike prometheus-operator,
// it writes sound, userKeyFile and tokenFile, which the operator drops.
func (r refs) pushover(in monitoringv1alpha1.PushoverConfig) (*pushoverConfig, error) {
	out := &pushoverConfig{
		SendResolved: in.SendResolved,
		UserKeyFile:  ptr.Deref(in.UserKeyFile, ""),
		TokenFile:    ptr.Deref(in.TokenFile, ""),
		Title:        ptr.Deref(in.Title, ""),
		Message:      ptr.Deref(in.Message, ""),
		URL:          in.URL,
		URLTitle:     ptr.Deref(in.URLTitle, ""),
		Device:       ptr.Deref(in.Device, ""),
		Sound:        ptr.Deref(in.Sound, ""),
		Priority:     ptr.Deref(in.Priority, ""),
		Retry:        ptr.Deref(in.Retry, ""),
		Expire:       ptr.Deref(in.Expire, ""),
		HTML:         in.HTML,
		Monospace:    in.Monospace,
	}
	if in.TTL != nil {
		out.TTL = string(*in.TTL)
	}
	var err error
	if out.UserKey, err = r.optionalSecret(in.UserKey); err != nil {
		return nil, fmt.Errorf("userKey: %w", err)
	}
	if in.UserKey != nil && out.UserKey == "" {
		return nil, fmt.Errorf("userKey: key %q of secret %s/%s is empty", in.UserKey.Key, r.namespace, in.UserKey.Name)
	}
	if out.Token, err = r.optionalSecret(in.Token); err != nil {
		return nil, fmt.Errorf("token: %w", err)
	}
	if in.Token != nil && out.Token == "" {
		return nil, fmt.Errorf("token: key %q of secret %s/%s is empty", in.Token.Key, r.namespace, in.Token.Name)
	}
	if out.HTTPConfig, err = r.httpConfig(in.HTTPConfig); err != nil {
		return nil, err
	}
	return out, nil
}

type emailConfig struct {
	SendResolved     *bool             `yaml:"send_resolved,omitempty"`
	To               string            `yaml:"to,omitempty"`
	From             string            `yaml:"from,omitempty"`
	Hello            string            `yaml:"hello,omitempty"`
	Smarthost        string            `yaml:"smarthost,omitempty"`
	AuthUsername     string            `yaml:"auth_username,omitempty"`
	AuthPassword     string            `yaml:"auth_password,omitempty"`
	AuthSecret       string            `yaml:"auth_secret,omitempty"`
	AuthIdentity     string            `yaml:"auth_identity,omitempty"`
	Headers          map[string]string `yaml:"headers,omitempty"`
	HTML             *string           `yaml:"html,omitempty"`
	Text             *string           `yaml:"text,omitempty"`
	RequireTLS       *bool             `yaml:"require_tls,omitempty"`
	TLSConfig        *tlsConfig        `yaml:"tls_config,omitempty"`
	ForceImplicitTLS *bool             `yaml:"force_implicit_tls,omitempty"`
	Threading        *emailThreading   `yaml:"threading,omitempty"`
}

type emailThreading struct {
	Enabled      bool   `yaml:"enabled"`
	ThreadByDate string `yaml:"thread_by_date,omitempty"`
}

// email converts an e-mail configuration. Alertmanager checks that the
// smarthost and the sender are set here or in the global configuration.
func (r refs) email(in monitoringv1alpha1.EmailConfig) (*emailConfig, error) {
	out := &emailConfig{
		SendResolved:     in.SendResolved,
		To:               ptr.Deref(in.To, ""),
		From:             ptr.Deref(in.From, ""),
		Hello:            ptr.Deref(in.Hello, ""),
		AuthUsername:     ptr.Deref(in.AuthUsername, ""),
		AuthIdentity:     ptr.Deref(in.AuthIdentity, ""),
		Headers:          keyValues(in.Headers),
		HTML:             in.HTML,
		Text:             in.Text,
		RequireTLS:       in.RequireTLS,
		ForceImplicitTLS: in.ForceImplicitTLS,
	}
	if h := ptr.Deref(in.Smarthost, ""); h != "" {
		if _, _, err := net.SplitHostPort(h); err != nil {
			return nil, fmt.Errorf("smarthost %q: %w", h, err)
		}
		out.Smarthost = h
	}
	var err error
	if out.AuthPassword, err = r.optionalSecret(in.AuthPassword); err != nil {
		return nil, fmt.Errorf("authPassword: %w", err)
	}
	if out.AuthSecret, err = r.optionalSecret(in.AuthSecret); err != nil {
		return nil, fmt.Errorf("authSecret: %w", err)
	}
	if in.TLSConfig != nil {
		if out.TLSConfig, err = r.tlsConfig(in.TLSConfig); err != nil {
			return nil, err
		}
	}
	if t := in.Threading; t != nil {
		out.Threading = &emailThreading{Enabled: true, ThreadByDate: strings.ToLower(string(t.ThreadByDate))}
	}
	return out, nil
}

type snsConfig struct {
	SendResolved *bool             `yaml:"send_resolved,omitempty"`
	HTTPConfig   *httpConfig       `yaml:"http_config,omitempty"`
	APIURL       string            `yaml:"api_url,omitempty"`
	Sigv4        *sigv4            `yaml:"sigv4,omitempty"`
	TopicARN     string            `yaml:"topic_arn,omitempty"`
	PhoneNumber  string            `yaml:"phone_number,omitempty"`
	TargetARN    string            `yaml:"target_arn,omitempty"`
	Subject      string            `yaml:"subject,omitempty"`
	Message      string            `yaml:"message,omitempty"`
	Attributes   map[string]string `yaml:"attributes,omitempty"`
}

type sigv4 struct {
	Region     string `yaml:"region,omitempty"`
	AccessKey  string `yaml:"access_key,omitempty"`
	SecretKey  string `yaml:"secret_key,omitempty"`
	Profile    string `yaml:"profile,omitempty"`
	RoleARN    string `yaml:"role_arn,omitempty"`
	ExternalID string `yaml:"external_id,omitempty"`
}

// sns converts an SNS configuration. useAWSHTTPClient (Alertmanager 0.33)
// is not rendered yet: refused on every version, as prometheus-operator
// refuses it for 0.31. The role's
// external id is dropped before 0.33, as prometheus-operator drops it
// (dropReceiver).
func (r refs) sns(in monitoringv1alpha1.SNSConfig) (*snsConfig, error) {
	if in.UseAWSHTTPClient != nil {
		return nil, notRendered("useAWSHTTPClient", "0.33")
	}
	out := &snsConfig{
		SendResolved: in.SendResolved,
		APIURL:       ptr.Deref(in.ApiURL, ""),
		TopicARN:     ptr.Deref(in.TopicARN, ""),
		PhoneNumber:  ptr.Deref(in.PhoneNumber, ""),
		TargetARN:    ptr.Deref(in.TargetARN, ""),
		Subject:      ptr.Deref(in.Subject, ""),
		Message:      ptr.Deref(in.Message, ""),
		Attributes:   in.Attributes,
	}
	var err error
	if out.HTTPConfig, err = r.httpConfig(in.HTTPConfig); err != nil {
		return nil, err
	}
	if s := in.Sigv4; s != nil {
		out.Sigv4 = &sigv4{Region: s.Region, Profile: s.Profile, RoleARN: s.RoleArn, ExternalID: s.ExternalID}
		if s.AccessKey != nil && s.SecretKey != nil {
			if out.Sigv4.AccessKey, err = r.secret(*s.AccessKey); err != nil {
				return nil, fmt.Errorf("sigv4 accessKey: %w", err)
			}
			if out.Sigv4.SecretKey, err = r.secret(*s.SecretKey); err != nil {
				return nil, fmt.Errorf("sigv4 secretKey: %w", err)
			}
		}
	}
	return out, nil
}

type telegramConfig struct {
	SendResolved         *bool       `yaml:"send_resolved,omitempty"`
	HTTPConfig           *httpConfig `yaml:"http_config,omitempty"`
	APIURL               string      `yaml:"api_url,omitempty"`
	BotToken             string      `yaml:"bot_token,omitempty"`
	BotTokenFile         string      `yaml:"bot_token_file,omitempty"`
	ChatID               int64       `yaml:"chat_id,omitempty"`
	MessageThreadID      int64       `yaml:"message_thread_id,omitempty"`
	Message              string      `yaml:"message,omitempty"`
	DisableNotifications bool        `yaml:"disable_notifications,omitempty"`
	ParseMode            string      `yaml:"parse_mode,omitempty"`
}

func (r refs) telegram(in monitoringv1alpha1.TelegramConfig) (*telegramConfig, error) {
	out := &telegramConfig{
		SendResolved:         in.SendResolved,
		APIURL:               string(ptr.Deref(in.APIURL, "")),
		BotTokenFile:         ptr.Deref(in.BotTokenFile, ""),
		ChatID:               in.ChatID,
		MessageThreadID:      ptr.Deref(in.MessageThreadID, 0),
		Message:              in.Message,
		DisableNotifications: ptr.Deref(in.DisableNotifications, false),
		ParseMode:            in.ParseMode,
	}
	var err error
	if out.BotToken, err = r.optionalSecret(in.BotToken); err != nil {
		return nil, fmt.Errorf("botToken: %w", err)
	}
	if in.BotToken != nil && out.BotToken == "" {
		return nil, fmt.Errorf("botToken: key %q of secret %s/%s is empty", in.BotToken.Key, r.namespace, in.BotToken.Name)
	}
	if out.HTTPConfig, err = r.httpConfig(in.HTTPConfig); err != nil {
		return nil, err
	}
	return out, nil
}

type rocketChatConfig struct {
	SendResolved *bool              `yaml:"send_resolved,omitempty"`
	HTTPConfig   *httpConfig        `yaml:"http_config,omitempty"`
	APIURL       string             `yaml:"api_url,omitempty"`
	TokenID      string             `yaml:"token_id,omitempty"`
	Token        string             `yaml:"token,omitempty"`
	Channel      string             `yaml:"channel,omitempty"`
	Color        string             `yaml:"color,omitempty"`
	Title        string             `yaml:"title,omitempty"`
	TitleLink    string             `yaml:"title_link,omitempty"`
	Text         string             `yaml:"text,omitempty"`
	Fields       []rocketChatField  `yaml:"fields,omitempty"`
	ShortFields  bool               `yaml:"short_fields,omitempty"`
	Emoji        string             `yaml:"emoji,omitempty"`
	IconURL      string             `yaml:"icon_url,omitempty"`
	ImageURL     string             `yaml:"image_url,omitempty"`
	ThumbURL     string             `yaml:"thumb_url,omitempty"`
	LinkNames    bool               `yaml:"link_names,omitempty"`
	Actions      []rocketChatAction `yaml:"actions,omitempty"`
}

type rocketChatField struct {
	Short *bool  `yaml:"short,omitempty"`
	Title string `yaml:"title,omitempty"`
	Value string `yaml:"value,omitempty"`
}

type rocketChatAction struct {
	Text string `yaml:"text,omitempty"`
	URL  string `yaml:"url,omitempty"`
	Msg  string `yaml:"msg,omitempty"`
}

func (r refs) rocketchat(in monitoringv1alpha1.RocketChatConfig) (*rocketChatConfig, error) {
	out := &rocketChatConfig{
		SendResolved: in.SendResolved,
		APIURL:       string(ptr.Deref(in.APIURL, "")),
		Channel:      ptr.Deref(in.Channel, ""),
		Color:        ptr.Deref(in.Color, ""),
		Title:        ptr.Deref(in.Title, ""),
		TitleLink:    ptr.Deref(in.TitleLink, ""),
		Text:         ptr.Deref(in.Text, ""),
		ShortFields:  ptr.Deref(in.ShortFields, false),
		Emoji:        ptr.Deref(in.Emoji, ""),
		IconURL:      ptr.Deref(in.IconURL, ""),
		ImageURL:     ptr.Deref(in.ImageURL, ""),
		ThumbURL:     ptr.Deref(in.ThumbURL, ""),
		LinkNames:    ptr.Deref(in.LinkNames, false),
	}
	var err error
	if out.Token, err = r.secret(in.Token); err != nil {
		return nil, fmt.Errorf("token: %w", err)
	}
	if out.TokenID, err = r.secret(in.TokenID); err != nil {
		return nil, fmt.Errorf("tokenID: %w", err)
	}
	for _, f := range in.Fields {
		out.Fields = append(out.Fields, rocketChatField{Short: f.Short, Title: ptr.Deref(f.Title, ""), Value: ptr.Deref(f.Value, "")})
	}
	for _, a := range in.Actions {
		out.Actions = append(out.Actions, rocketChatAction{Text: ptr.Deref(a.Text, ""), URL: ptr.Deref(a.URL, ""), Msg: ptr.Deref(a.Msg, "")})
	}
	if out.HTTPConfig, err = r.httpConfig(in.HTTPConfig); err != nil {
		return nil, err
	}
	return out, nil
}
