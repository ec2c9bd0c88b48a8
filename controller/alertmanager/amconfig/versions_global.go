package amconfig

import (
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

// checkGlobalVersion refuses the global settings of
// spec.alertmanagerConfiguration the Alertmanager of version does not
// know, as prometheus-operator v0.93.1 refuses them
// (checkAlertmanagerGlobalConfigResource): SMTP's forceImplicitTLS
// before 0.31, Telegram before 0.24, Webex before 0.25, Jira and
// Rocket.Chat before 0.28. The configuration is then not built.
func checkGlobalVersion(in *monitoringv1.AlertmanagerGlobalConfig, version string) error {
	older := before(version)
	gates := []struct {
		field string
		since uint64
		set   bool
	}{
		{"smtp: forceImplicitTLS", 31, in.SMTPConfig != nil && in.SMTPConfig.ForceImplicitTLS != nil},
		{"telegram", 24, in.TelegramConfig != nil},
		{"jira", 28, in.JiraConfig != nil},
		{"rocketChat", 28, in.RocketChatConfig != nil},
		{"webex", 25, in.WebexConfig != nil},
	}
	for _, g := range gates {
		if g.set && older(g.since) {
			return fmt.Errorf("%s needs Alertmanager 0.%d or later, the Alertmanager runs %s", g.field, g.since, version)
		}
	}
	return nil
}

// dropGlobal drops from the global section the keys the Alertmanager of
// version does not know, as prometheus-operator v0.93.1 drops them
// (globalConfig's sanitize): smtp_tls_config before 0.28, and its HTTP
// client's (dropHTTP).
func dropGlobal(g *globalConfig, version string) {
	older := before(version)
	if older(28) {
		g.SMTPTLSConfig = nil
	}
	dropHTTP(g.HTTPConfig, older)
}
