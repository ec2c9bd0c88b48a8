package amconfig

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/alertmanager/config"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/podreload/podreload/internal/testenv/configdiff"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// operatorConfigKnown lists, by case, the differences TestOperatorConfig
// expects. A case listed here fails when its differences are not exactly
// these: when one disappears too, so that this table stays true. The
// cases not listed must give the same configuration as
// prometheus-operator.
func operatorConfigKnown() map[string]configdiff.Known {
	const badRegexp = "prometheus-operator v0.93.1 writes a matcher whose regular expression does not compile, which Alertmanager refuses: the whole configuration fails to load; Generate leaves that AlertmanagerConfig out with the parser's message"
	const tlsFiles = "Generate inlines the TLS files' contents (ca, cert, key) where prometheus-operator names the files of its tls-assets Secret under /etc/alertmanager/certs: the same bytes in another form"
	return map[string]configdiff.Known{
		"email-tls":           {Sections: []string{"receiver team-a/r/ops"}, Reason: tlsFiles},
		"global-smtp":         {Sections: []string{"global", "receiver monitoring/global/mail"}, Reason: tlsFiles + " (the receiver inherits the global SMTP TLS configuration)"},
		"http-tls":            {Sections: []string{"receiver team-a/tls/ops"}, Reason: tlsFiles},
		"pushover-sound":      {Sections: []string{"receiver team-a/r/ops"}, Reason: "prometheus-operator v0.93.1 drops a Pushover receiver's sound; Generate writes it"},
		"http-oauth2-tls":     {Sections: []string{"receiver team-a/r/ops"}, Reason: "prometheus-operator v0.93.1 drops the TLS configuration of an OAuth2 token endpoint; Generate writes it (inline)"},
		"invalid-regex":       {Sections: []string{"left out", "refused"}, Reason: badRegexp},
		"invalid-route-regex": {Sections: []string{"left out", "refused"}, Reason: badRegexp},
		"rocketchat": {
			Sections: []string{"refused"},
			Reason:   "prometheus-operator v0.93.1 writes is_webview and msg_in_chat_window into Rocket.Chat actions, which Alertmanager 0.31 refuses; Generate writes the actions' text, url and msg only",
		},
	}
}

// TestOperatorConfig is the differential test of issue 28 item 2: for
// each case under testdata/operator (a multi-document YAML file: one
// Alertmanager, its config Secret, the AlertmanagerConfigs it selects and
// what they reference), the configuration prometheus-operator generates
// (bin/opconfig --alertmanager, which runs the pinned version's own
// ConfigBuilder) and Generate's are parsed with Alertmanager's config
// package (the version of the image) and compared section by section,
// receiver by receiver. The AlertmanagerConfigs prometheus-operator
// rejects must be the ones Generate leaves out (else the difference is
// "left out").
func TestOperatorConfig(t *testing.T) {
	opconfig, err := toolbin.Path("opconfig")
	require.NoError(t, err)
	cases, err := filepath.Glob(filepath.Join("testdata", "operator", "*.yaml"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(cases), 40, "issue 28 promises at least 40 cases")
	known := operatorConfigKnown()
	for name := range known {
		require.FileExists(t, filepath.Join("testdata", "operator", name+".yaml"), "operatorConfigKnown lists a case that does not exist")
	}

	for _, path := range cases {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), opconfig, "--alertmanager", forOperator(t, path))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			want, err := cmd.Output()
			require.NoError(t, err, "%s --alertmanager %s:\n%s", opconfig, path, stderr.String())

			in := caseInput(t, path)
			res, err := Generate(t.Context(), in)
			require.NoError(t, err)
			var leftOut []string
			for _, l := range res.LeftOut {
				leftOut = append(leftOut, l.Config.String())
			}
			var diffs []configdiff.Diff
			if skipped := operatorSkipped(stderr.String()); !slices.Equal(skipped, leftOut) {
				diffs = append(diffs, configdiff.Diff{Section: "left out", Diff: fmt.Sprintf(
					"prometheus-operator rejects %v, Generate leaves out %v:\n%s%v", skipped, leftOut, stderr.String(), res.LeftOut)})
			}
			diffs = append(diffs, diffConfigs(t, want, res.Config)...)
			configdiff.Check(t, name, known, diffs)
		})
	}
}

// fileSystemModeRE finds the line of spec.alertmanagerConfigFileSystemMode.
var fileSystemModeRE = regexp.MustCompile(`(?m)^\s*alertmanagerConfigFileSystemMode:\s*(\S*)\s*\n`)

// forOperator returns the case at path as bin/opconfig can read it: its
// types (v0.93.1) do not know spec.alertmanagerConfigFileSystemMode, which
// is removed. Only AllowAll may be removed (the behaviour of
// prometheus-operator before v0.95, which let every AlertmanagerConfig
// reference files): the other modes' behaviour cannot be checked against
// v0.93.1, so a case setting one fails here (those cases are under
// testdata/filesystem, TestFileSystemMode).
func forOperator(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	m := fileSystemModeRE.FindSubmatch(data)
	if m == nil {
		return path
	}
	require.Equal(t, string(monitoringv1.AllowAllAlertmanagerConfigFileSystemMode), string(m[1]),
		"%s: only AllowAll can be compared with prometheus-operator v0.93.1", path)
	stripped := filepath.Join(t.TempDir(), filepath.Base(path))
	require.NoError(t, os.WriteFile(stripped, fileSystemModeRE.ReplaceAll(data, nil), 0o600))
	return stripped
}

// skippedRE finds the AlertmanagerConfigs bin/opconfig logs as rejected.
var skippedRE = regexp.MustCompile(`skipping alertmanagerconfig.* alertmanagerconfig=(\S+)`)

// operatorSkipped returns the AlertmanagerConfigs prometheus-operator
// rejects, from bin/opconfig's log, sorted.
func operatorSkipped(log string) []string {
	var out []string
	for _, m := range skippedRE.FindAllStringSubmatch(log, -1) {
		out = append(out, m[1])
	}
	sort.Strings(out)
	return out
}

// caseInput reads the case at path as Generate's input: the Alertmanager,
// its config Secret's alertmanager.yaml, the AlertmanagerConfig
// spec.alertmanagerConfiguration names and the others (the cases hold
// only AlertmanagerConfigs the Alertmanager selects), and a resolver over
// its Secrets and ConfigMaps.
func caseInput(t *testing.T, path string) Input {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	res := fakeResolver{secrets: map[string]map[string][]byte{}, configMaps: map[string]map[string]string{}}
	in := Input{Resolver: res}
	var configs []*monitoringv1alpha1.AlertmanagerConfig
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		var meta struct{ Kind string }
		require.NoError(t, sigsyaml.Unmarshal(doc, &meta))
		switch meta.Kind {
		case "":
		case monitoringv1.AlertmanagersKind:
			in.Alertmanager = &monitoringv1.Alertmanager{}
			require.NoError(t, sigsyaml.UnmarshalStrict(doc, in.Alertmanager))
		case monitoringv1alpha1.AlertmanagerConfigKind:
			c := &monitoringv1alpha1.AlertmanagerConfig{}
			require.NoError(t, sigsyaml.UnmarshalStrict(doc, c))
			configs = append(configs, c)
		case "Secret":
			s := &corev1.Secret{}
			require.NoError(t, sigsyaml.UnmarshalStrict(doc, s))
			data := map[string][]byte{}
			for k, v := range s.Data {
				data[k] = v
			}
			for k, v := range s.StringData {
				data[k] = []byte(v)
			}
			res.secrets[s.Namespace+"/"+s.Name] = data
		case "ConfigMap":
			cm := &corev1.ConfigMap{}
			require.NoError(t, sigsyaml.UnmarshalStrict(doc, cm))
			res.configMaps[cm.Namespace+"/"+cm.Name] = cm.Data
		case "Namespace":
		default:
			t.Fatalf("%s: unknown kind %q", path, meta.Kind)
		}
	}
	am := in.Alertmanager
	require.NotNil(t, am, "no Alertmanager")
	secret := am.Spec.ConfigSecret
	if secret == "" {
		secret = "alertmanager-" + am.Name
	}
	in.Base = res.secrets[am.Namespace+"/"+secret]["alertmanager.yaml"]
	for _, c := range configs {
		if g := am.Spec.AlertmanagerConfiguration; g != nil && c.Namespace == am.Namespace && c.Name == g.Name {
			in.Configuration = c
			continue
		}
		in.Configs = append(in.Configs, c)
	}
	return in
}

// fakeResolver reads Secrets and ConfigMaps from maps, by namespace/name.
type fakeResolver struct {
	secrets    map[string]map[string][]byte
	configMaps map[string]map[string]string
}

func (f fakeResolver) Secret(_ context.Context, namespace string, sel corev1.SecretKeySelector) ([]byte, error) {
	s, ok := f.secrets[namespace+"/"+sel.Name]
	if !ok {
		return nil, errors.New("not found")
	}
	v, ok := s[sel.Key]
	if !ok {
		return nil, errors.New("no such key")
	}
	return v, nil
}

func (f fakeResolver) ConfigMap(_ context.Context, namespace string, sel corev1.ConfigMapKeySelector) ([]byte, error) {
	cm, ok := f.configMaps[namespace+"/"+sel.Name]
	if !ok {
		return nil, errors.New("not found")
	}
	v, ok := cm[sel.Key]
	if !ok {
		return nil, errors.New("no such key")
	}
	return []byte(v), nil
}

// diffConfigs parses both configurations with Alertmanager's config
// package and returns their differences by section: global, route,
// inhibit_rules, mute_time_intervals, time_intervals, templates, then
// each receiver by name.
//
// When Alertmanager refuses prometheus-operator's configuration, the one
// difference is "refused", with the parser's message.
func diffConfigs(t *testing.T, want, got []byte) []configdiff.Diff {
	t.Helper()
	if _, err := config.Load(string(want)); err != nil {
		configSections(t, "podreload's", got)
		return []configdiff.Diff{{Section: "refused", Diff: "Alertmanager refuses prometheus-operator's configuration: " + err.Error()}}
	}
	order := func(name string) string {
		if i := slices.Index([]string{"global", "route", "inhibit_rules", "mute_time_intervals", "time_intervals", "templates"}, name); i >= 0 {
			return fmt.Sprint(i)
		}
		return "9" + name
	}
	return configdiff.Sections(configSections(t, "prometheus-operator's", want), configSections(t, "podreload's", got), order)
}

// configSections loads a configuration with Alertmanager's config
// package and returns its sections as YAML, secrets shown (TestMain sets
// config.MarshalSecretValue).
func configSections(t *testing.T, whose string, b []byte) map[string]string {
	t.Helper()
	cfg, err := config.Load(string(b))
	require.NoError(t, err, "Alertmanager refuses %s configuration:\n%s", whose, b)
	out := map[string]string{}
	add := func(name string, v any) {
		y, err := yaml.Marshal(v)
		require.NoError(t, err)
		out[name] = string(y)
	}
	add("global", cfg.Global)
	add("route", cfg.Route)
	add("inhibit_rules", cfg.InhibitRules)
	add("mute_time_intervals", cfg.MuteTimeIntervals)
	add("time_intervals", cfg.TimeIntervals)
	add("templates", cfg.Templates)
	for _, r := range cfg.Receivers {
		add("receiver "+r.Name, r)
	}
	return out
}

// TestOperatorBaseErrors checks, for each case under testdata/base-errors,
// that prometheus-operator generates no configuration (bin/opconfig exits
// 1) and that Generate returns the error given here: the Alertmanager
// keeps its last good configuration.
func TestOperatorBaseErrors(t *testing.T) {
	opconfig, err := toolbin.Path("opconfig")
	require.NoError(t, err)
	want := map[string]string{
		"base-discord-v0.24":               "alertmanager monitoring/main: base configuration: receiver default: discord_configs needs Alertmanager 0.25 or later, the Alertmanager runs v0.24.0",
		"base-opsgenie-teams-v0.23":        "alertmanager monitoring/main: base configuration: receiver default: opsgenie_configs: responders: type teams needs Alertmanager 0.24 or later, the Alertmanager runs v0.23.0",
		"base-pushover-file-v0.25":         "alertmanager monitoring/main: base configuration: receiver default: pushover_configs: user_key or user_key_file must be set for Alertmanager v0.25.0",
		"base-telegram-global-token-v0.30": "alertmanager monitoring/main: base configuration: receiver default: telegram_configs: bot_token or bot_token_file must be set for Alertmanager v0.30.0",
		"broken-secret":                    `alertmanager monitoring/main: base configuration: undefined receiver "nowhere" used in route`,
		"global-mattermost":                "alertmanager monitoring/main: spec.alertmanagerConfiguration.global: mattermost (Alertmanager 0.32 or later) is not rendered yet",
		"global-missing":                   "alertmanager monitoring/main: spec.alertmanagerConfiguration: AlertmanagerConfig monitoring/global not found",
		"global-missing-secret":            `alertmanager monitoring/main: spec.alertmanagerConfiguration.global: slackApiUrl: key "url" of secret monitoring/missing: not found`,
		"global-root-continue":             "alertmanager monitoring/main: AlertmanagerConfig monitoring/global: route: the root route cannot continue",
		"global-root-matchers":             "alertmanager monitoring/main: AlertmanagerConfig monitoring/global: route: the root route cannot have matchers",
		"global-discord-v0.24":             "alertmanager monitoring/main: AlertmanagerConfig monitoring/global: receiver slack: discordConfigs needs Alertmanager 0.25 or later, the Alertmanager runs v0.24.0",
		"global-jira-v0.27":                "alertmanager monitoring/main: spec.alertmanagerConfiguration.global: jira needs Alertmanager 0.28 or later, the Alertmanager runs v0.27.0",
		"global-rocketchat-v0.27":          "alertmanager monitoring/main: spec.alertmanagerConfiguration.global: rocketChat needs Alertmanager 0.28 or later, the Alertmanager runs v0.27.0",
		"global-smtp-implicit-tls-v0.30":   "alertmanager monitoring/main: spec.alertmanagerConfiguration.global: smtp: forceImplicitTLS needs Alertmanager 0.31 or later, the Alertmanager runs v0.30.0",
		"global-telegram-v0.23":            "alertmanager monitoring/main: spec.alertmanagerConfiguration.global: telegram needs Alertmanager 0.24 or later, the Alertmanager runs v0.23.0",
		"global-webex-v0.24":               "alertmanager monitoring/main: spec.alertmanagerConfiguration.global: webex needs Alertmanager 0.25 or later, the Alertmanager runs v0.24.0",
	}
	cases, err := filepath.Glob(filepath.Join("testdata", "base-errors", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, cases, len(want))
	for _, path := range cases {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			require.Contains(t, want, name)
			t.Logf("prometheus-operator: %s", operatorFails(t, opconfig, path, "prometheus-operator generates a configuration"))

			_, err := Generate(t.Context(), caseInput(t, path))
			require.EqualError(t, err, want[name])
		})
	}
}

// operatorFails runs prometheus-operator's generator, opconfig, on the
// case at path, requires it to fail with exit code 1, and returns what it
// wrote on stderr; msg says why a configuration generated is a failure.
func operatorFails(t *testing.T, opconfig, path, msg string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), opconfig, "--alertmanager", path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	_, err := cmd.Output()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, msg)
	require.Equal(t, 1, exit.ExitCode(), stderr.String())
	return stderr.String()
}
