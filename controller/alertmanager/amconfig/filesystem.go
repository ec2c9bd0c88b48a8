package amconfig

import (
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
)

// fileReferences returns the fields of c that name a file of the
// Alertmanager container rather than a key of a Secret (the *File fields
// of the AlertmanagerConfig API at v0.95.2: Pushover's userKeyFile and
// tokenFile, Telegram's botTokenFile), as paths in the spec.
func fileReferences(c *monitoringv1alpha1.AlertmanagerConfig) []string {
	var out []string
	for _, r := range c.Spec.Receivers {
		for i, p := range r.PushoverConfigs {
			if p.UserKeyFile != nil {
				out = append(out, fmt.Sprintf("receiver %s: pushoverConfigs[%d].userKeyFile", r.Name, i))
			}
			if p.TokenFile != nil {
				out = append(out, fmt.Sprintf("receiver %s: pushoverConfigs[%d].tokenFile", r.Name, i))
			}
		}
		for i, t := range r.TelegramConfigs {
			if t.BotTokenFile != nil {
				out = append(out, fmt.Sprintf("receiver %s: telegramConfigs[%d].botTokenFile", r.Name, i))
			}
		}
	}
	return out
}

// fileSystemMode is spec.alertmanagerConfigFileSystemMode, unset being
// prometheus-operator v0.95's default, FromAlertmanagerConfigMatcherStrategy.
func fileSystemMode(am *monitoringv1.Alertmanager) monitoringv1.AlertmanagerConfigFileSystemMode {
	if m := am.Spec.AlertmanagerConfigFileSystemMode; m != nil && *m != "" {
		return *m
	}
	return monitoringv1.FromAlertmanagerConfigMatcherStrategyAlertmanagerConfigFileSystemMode
}

// allowsFiles reports whether the mode of am lets c reference the
// container's files, as prometheus-operator v0.95 decides it: AllowAll
// lets every AlertmanagerConfig, DenyAll none (the one
// spec.alertmanagerConfiguration names included), and
// FromAlertmanagerConfigMatcherStrategy follows the matcher strategy:
// None lets every one, OnNamespaceExceptForAlertmanagerNamespace those of
// the Alertmanager's namespace, OnNamespace (the default) only the one
// spec.alertmanagerConfiguration names. main says c is that one.
func allowsFiles(am *monitoringv1.Alertmanager, c *monitoringv1alpha1.AlertmanagerConfig, main bool) bool {
	switch fileSystemMode(am) {
	case monitoringv1.AllowAllAlertmanagerConfigFileSystemMode:
		return true
	case monitoringv1.DenyAllAlertmanagerConfigFileSystemMode:
		return false
	}
	switch am.Spec.AlertmanagerConfigMatcherStrategy.Type {
	case monitoringv1.NoneConfigMatcherStrategyType:
		return true
	case monitoringv1.OnNamespaceExceptForAlertmanagerNamespaceConfigMatcherStrategyType:
		return c.Namespace == am.Namespace
	default:
		return main
	}
}

// checkFiles refuses c when it references a file of the container and
// the mode of am forbids it: the AlertmanagerConfig is then left out, as
// prometheus-operator v0.95 rejects it (issue #6486: a tenant's
// botTokenFile could send the service account token to a server of
// theirs).
func checkFiles(am *monitoringv1.Alertmanager, c *monitoringv1alpha1.AlertmanagerConfig, main bool) error {
	refs := fileReferences(c)
	if len(refs) == 0 || allowsFiles(am, c, main) {
		return nil
	}
	mode := fileSystemMode(am)
	why := string(mode)
	if am.Spec.AlertmanagerConfigFileSystemMode == nil || *am.Spec.AlertmanagerConfigFileSystemMode == "" {
		why = "unset (" + why + ", prometheus-operator v0.95's default)"
	}
	if mode == monitoringv1.FromAlertmanagerConfigMatcherStrategyAlertmanagerConfigFileSystemMode {
		strategy := am.Spec.AlertmanagerConfigMatcherStrategy.Type
		if strategy == "" {
			strategy = monitoringv1.OnNamespaceConfigMatcherStrategyType
		}
		why += fmt.Sprintf(" with matcher strategy %s", strategy)
	}
	return fmt.Errorf("%s: a file of the Alertmanager container, which spec.alertmanagerConfigFileSystemMode %s forbids here", refs[0], why)
}

// FileSystemNote says which AlertmanagerConfigs of am a takeover leaves
// out for spec.alertmanagerConfigFileSystemMode when they reference a file
// of the Alertmanager container, as prometheus-operator v0.95 leaves them
// out and prometheus-operator before v0.95 rendered them; empty when the
// mode forbids none, or am generates no configuration (neither
// spec.alertmanagerConfigSelector nor spec.alertmanagerConfiguration).
func FileSystemNote(am *monitoringv1.Alertmanager) string {
	if am.Spec.AlertmanagerConfigSelector == nil && am.Spec.AlertmanagerConfiguration == nil {
		return ""
	}
	mode := fileSystemMode(am)
	why := "spec.alertmanagerConfigFileSystemMode " + string(mode)
	if am.Spec.AlertmanagerConfigFileSystemMode == nil || *am.Spec.AlertmanagerConfigFileSystemMode == "" {
		why = "spec.alertmanagerConfigFileSystemMode unset (" + string(mode) + ", prometheus-operator v0.95's default)"
	}
	var which string
	switch {
	case mode == monitoringv1.AllowAllAlertmanagerConfigFileSystemMode:
		return ""
	case mode == monitoringv1.DenyAllAlertmanagerConfigFileSystemMode:
		which = "every one, spec.alertmanagerConfiguration's included (InvalidConfiguration)"
	case am.Spec.AlertmanagerConfigMatcherStrategy.Type == monitoringv1.NoneConfigMatcherStrategyType:
		return ""
	case am.Spec.AlertmanagerConfigMatcherStrategy.Type == monitoringv1.OnNamespaceExceptForAlertmanagerNamespaceConfigMatcherStrategyType:
		which = "those outside namespace " + am.Namespace + " (matcher strategy OnNamespaceExceptForAlertmanagerNamespace)"
	default:
		which = "every one but spec.alertmanagerConfiguration's (matcher strategy OnNamespace)"
	}
	return fmt.Sprintf("%s: of the AlertmanagerConfigs that reference a file of the Alertmanager container "+
		"(Telegram's botTokenFile, Pushover's userKeyFile and tokenFile), %s are left out, as prometheus-operator v0.95 "+
		"leaves them out and earlier versions rendered them; set it to AllowAll to keep rendering them", why, which)
}
