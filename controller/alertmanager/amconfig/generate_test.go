package amconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	monitoringv1beta1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1beta1"
	"github.com/prometheus/alertmanager/config"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	sigsyaml "sigs.k8s.io/yaml"
)

// alertmanager returns an Alertmanager monitoring/main that selects every
// AlertmanagerConfig, with the strategy given ("" for the default).
func alertmanager(strategy monitoringv1.AlertmanagerConfigMatcherStrategyType) *monitoringv1.Alertmanager {
	am := &monitoringv1.Alertmanager{}
	am.Namespace, am.Name = "monitoring", "main"
	am.Spec.AlertmanagerConfigSelector = &metav1.LabelSelector{}
	am.Spec.AlertmanagerConfigMatcherStrategy.Type = strategy
	return am
}

// amc decodes an AlertmanagerConfig's spec and names it.
func amc(t *testing.T, namespace, name, spec string) *monitoringv1alpha1.AlertmanagerConfig {
	t.Helper()
	c := &monitoringv1alpha1.AlertmanagerConfig{}
	require.NoError(t, sigsyaml.UnmarshalStrict([]byte(spec), &c.Spec))
	c.Namespace, c.Name = namespace, name
	return c
}

const hookSpec = `
route:
  receiver: hook
  matchers:
  - name: severity
    value: critical
receivers:
- name: hook
  webhookConfigs:
  - url: http://hook.example.com/
inhibitRules:
- sourceMatch:
  - name: severity
    value: critical
  targetMatch:
  - name: severity
    value: warning
`

// TestStrategies checks the first-level route and the inhibition rule of
// an AlertmanagerConfig in the Alertmanager's namespace and in another
// under each strategy, as Alertmanager loads them.
func TestStrategies(t *testing.T) {
	for _, tc := range []struct {
		strategy monitoringv1.AlertmanagerConfigMatcherStrategyType
		// matched says, per namespace, whether the namespace matcher is
		// added.
		matched map[string]bool
	}{
		{strategy: "", matched: map[string]bool{"monitoring": true, "team-a": true}},
		{strategy: monitoringv1.OnNamespaceConfigMatcherStrategyType, matched: map[string]bool{"monitoring": true, "team-a": true}},
		{strategy: monitoringv1.OnNamespaceExceptForAlertmanagerNamespaceConfigMatcherStrategyType, matched: map[string]bool{"monitoring": false, "team-a": true}},
		{strategy: monitoringv1.NoneConfigMatcherStrategyType, matched: map[string]bool{"monitoring": false, "team-a": false}},
	} {
		t.Run(string(tc.strategy), func(t *testing.T) {
			res, err := Generate(t.Context(), Input{
				Alertmanager: alertmanager(tc.strategy),
				Base:         []byte("route:\n  receiver: base\n  routes:\n  - receiver: base\nreceivers:\n- name: base\n"),
				Configs:      []*monitoringv1alpha1.AlertmanagerConfig{amc(t, "team-a", "hooks", hookSpec), amc(t, "monitoring", "hooks", hookSpec)},
			})
			require.NoError(t, err)
			require.Empty(t, res.LeftOut)
			cfg, err := config.Load(string(res.Config))
			require.NoError(t, err)
			routes := cfg.Route.Routes
			require.Len(t, routes, 3, "two first-level routes in front of the base's")
			require.Len(t, cfg.InhibitRules, 2)
			for i, ns := range []string{"monitoring", "team-a"} {
				r := routes[i]
				require.Equal(t, ns+"/hooks/hook", r.Receiver, "sorted by namespace")
				require.True(t, r.Continue, "every first-level route continues")
				want, wantTarget := []string{`severity="critical"`}, []string{`severity="warning"`}
				if tc.matched[ns] {
					want = append(want, `namespace="`+ns+`"`)
					wantTarget = append(wantTarget, `namespace="`+ns+`"`)
				}
				// Alertmanager sorts the matchers it loads.
				slices.Sort(want)
				slices.Sort(wantTarget)
				require.Equal(t, want, matcherStrings(r.Matchers))
				require.Equal(t, want, matcherStrings(cfg.InhibitRules[i].SourceMatchers))
				require.Equal(t, wantTarget, matcherStrings(cfg.InhibitRules[i].TargetMatchers))
			}
			require.Equal(t, "base", routes[2].Receiver)
			require.False(t, routes[2].Continue, "the base's routes are left as they are")
		})
	}
}

func matcherStrings[M interface{ String() string }](ms []M) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.String())
	}
	return out
}

// TestLeftOut checks that an AlertmanagerConfig that cannot be converted
// or that Alertmanager refuses is left out on its own, with the reason,
// and that the others are kept.
func TestLeftOut(t *testing.T) {
	resolver := fakeResolver{
		secrets:    map[string]map[string][]byte{"team-a/hook": {"url": []byte("http://hook.example.com/")}},
		configMaps: map[string]map[string]string{},
	}
	for _, tc := range []struct {
		name, spec, reason string
		// version is the Alertmanager's spec.version, unset if empty.
		version string
	}{{
		name: "missing-secret",
		spec: `
route: {receiver: r}
receivers:
- name: r
  webhookConfigs:
  - urlSecret: {name: missing, key: url}`,
		reason: `receiver "r": webhookConfigs[0]: urlSecret: key "url" of secret team-a/missing: not found`,
	}, {
		name: "missing-key",
		spec: `
route: {receiver: r}
receivers:
- name: r
  slackConfigs:
  - apiURL: {name: hook, key: slack}`,
		reason: `receiver "r": slackConfigs[0]: apiURL: key "slack" of secret team-a/hook: no such key`,
	}, {
		name: "missing-basic-auth",
		spec: `
route: {receiver: r}
receivers:
- name: r
  webhookConfigs:
  - url: http://x.example.com/
    httpConfig:
      basicAuth:
        username: {name: hook, key: user}
        password: {name: hook, key: password}`,
		reason: `receiver "r": webhookConfigs[0]: basic auth username: key "user" of secret team-a/hook: no such key`,
	}, {
		name: "invalid-url",
		spec: `
route: {receiver: r}
receivers:
- name: r
  webhookConfigs:
  - url: "not a url"`,
		reason: `alertmanager refuses the configuration: invalid URL: unsupported scheme "" for URL`,
	}, {
		// prometheus-operator v0.95's route labels, before Alertmanager
		// 0.34 (TestRouteLabels has them rendered from 0.34).
		name:    "route-labels",
		version: "v0.33.1",
		spec: `
route:
  receiver: r
  labels:
  - {key: team, value: a}
receivers:
- name: r`,
		reason: `route: labels needs Alertmanager 0.34 or later, the Alertmanager runs v0.33.1`,
	}, {
		// In a child route (raw JSON, decoded by ChildRoutes): left out
		// by its path too.
		name:    "child-route-labels",
		version: "v0.33.1",
		spec: `
route:
  receiver: r
  routes:
  - receiver: r
    labels:
    - {key: team, value: a}
receivers:
- name: r`,
		reason: `route: routes[0]: labels needs Alertmanager 0.34 or later, the Alertmanager runs v0.33.1`,
	}, {
		// A child route's key that the types do not know (a newer
		// prometheus-operator's): left out with the decoder's path.
		name: "child-route-unknown-field",
		spec: `
route:
  receiver: r
  routes:
  - receiver: r
    futureRouting: true
receivers:
- name: r`,
		reason: `route: route[0]: json: unknown field "futureRouting"`,
	}, {
		name: "undefined-receiver",
		spec: `
route: {receiver: nowhere}
receivers:
- name: r`,
		reason: `alertmanager refuses the configuration: undefined receiver "team-a/broken/nowhere" used in route`,
	}, {
		name: "undefined-time-interval",
		spec: `
route:
  receiver: r
  muteTimeIntervals: [never]
receivers:
- name: r`,
		reason: `alertmanager refuses the configuration: undefined time interval "team-a/broken/never" used in route`,
	}, {
		name: "bad-group-wait",
		spec: `
route:
  receiver: r
  groupWait: soon
receivers:
- name: r`,
		reason: `route: groupWait: not a valid duration string: "soon"`,
	}, {
		name: "bad-child-route",
		spec: `
route:
  receiver: r
  routes:
  - receiver: r
    groupBy: 3
receivers:
- name: r`,
		reason: `route: route[0]: json: cannot unmarshal number into Go struct field Route.groupBy of type []string`,
	}, {
		name: "too-new",
		spec: `
route: {receiver: r}
receivers:
- name: r
  webhookConfigs:
  - url: http://x.example.com/
    payload: '{}'`,
		reason: `receiver "r": webhookConfigs[0]: payload (Alertmanager 0.32 or later) is not rendered yet`,
	}, {
		name: "invalid-ca",
		spec: `
route: {receiver: r}
receivers:
- name: r
  webhookConfigs:
  - url: https://x.example.com/
    httpConfig:
      tlsConfig:
        ca:
          secret: {name: hook, key: url}`,
		reason: `receiver "r": webhookConfigs[0]: tls config: unable to use specified CA cert inline`,
	}, {
		name: "email-without-smarthost",
		spec: `
route: {receiver: r}
receivers:
- name: r
  emailConfigs:
  - to: ops@example.com
    from: am@example.com`,
		reason: `alertmanager refuses the configuration: no global SMTP smarthost set`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			am := alertmanager("")
			am.Spec.Version = tc.version
			res, err := Generate(t.Context(), Input{
				Alertmanager: am,
				Configs:      []*monitoringv1alpha1.AlertmanagerConfig{amc(t, "team-a", "broken", tc.spec), amc(t, "team-a", "fine", hookSpec)},
				Resolver:     resolver,
			})
			require.NoError(t, err)
			require.Equal(t, []LeftOut{{Config: types.NamespacedName{Namespace: "team-a", Name: "broken"}, Reason: tc.reason}}, res.LeftOut)
			require.Equal(t, "AlertmanagerConfig team-a/broken left out: "+tc.reason, res.LeftOut[0].String())
			cfg, err := config.Load(string(res.Config))
			require.NoError(t, err)
			var receivers []string
			for _, r := range cfg.Receivers {
				receivers = append(receivers, r.Name)
			}
			require.Equal(t, []string{"null", "team-a/fine/hook"}, receivers, "the other AlertmanagerConfig is kept")
		})
	}
}

// TestBrokenBase checks that a base Alertmanager refuses is an error that
// names the Alertmanager and gives the parser's message.
func TestBrokenBase(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
		err  string
	}{{
		name: "undefined receiver",
		in:   Input{Alertmanager: alertmanager(""), Base: []byte("route:\n  receiver: nowhere\nreceivers:\n- name: a\n")},
		err:  `alertmanager monitoring/main: base configuration: undefined receiver "nowhere" used in route`,
	}, {
		name: "unknown field",
		in:   Input{Alertmanager: alertmanager(""), Base: []byte("route:\n  receiver: a\n  recevier: b\nreceivers:\n- name: a\n")},
		err:  "alertmanager monitoring/main: base configuration: yaml: unmarshal errors:\n  line 3: field recevier not found in type config.plain",
	}, {
		name: "not selecting either",
		in: func() Input {
			am := alertmanager("")
			am.Spec.AlertmanagerConfigSelector = nil
			return Input{Alertmanager: am, Base: []byte("route: {}\n")}
		}(),
		err: "alertmanager monitoring/main: base configuration: root route must specify a default receiver",
	}, {
		name: "configuration not found",
		in: func() Input {
			am := alertmanager("")
			am.Spec.AlertmanagerConfiguration = &monitoringv1.AlertmanagerConfiguration{Name: "global"}
			return Input{Alertmanager: am}
		}(),
		err: "alertmanager monitoring/main: spec.alertmanagerConfiguration: AlertmanagerConfig monitoring/global not found",
	}, {
		name: "configuration with a matcher on its root route",
		in: func() Input {
			am := alertmanager("")
			am.Spec.AlertmanagerConfiguration = &monitoringv1.AlertmanagerConfiguration{Name: "global"}
			return Input{Alertmanager: am, Configuration: amc(t, "monitoring", "global", hookSpec)}
		}(),
		err: "alertmanager monitoring/main: AlertmanagerConfig monitoring/global: route: the root route cannot have matchers",
	}, {
		name: "configuration with a missing Secret",
		in: func() Input {
			am := alertmanager("")
			am.Spec.AlertmanagerConfiguration = &monitoringv1.AlertmanagerConfiguration{Name: "global"}
			return Input{Alertmanager: am, Resolver: fakeResolver{}, Configuration: amc(t, "monitoring", "global", `
route: {receiver: r}
receivers:
- name: r
  webhookConfigs:
  - urlSecret: {name: hook, key: url}`)}
		}(),
		err: `alertmanager monitoring/main: AlertmanagerConfig monitoring/global: receiver "r": webhookConfigs[0]: urlSecret: key "url" of secret monitoring/hook: not found`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Generate(t.Context(), tc.in)
			require.EqualError(t, err, tc.err)
		})
	}
}

// TestDeterministic checks that the same inputs give the same bytes,
// whatever the order of the AlertmanagerConfigs.
func TestDeterministic(t *testing.T) {
	in := "testdata/operator/many-configs.yaml"
	first := caseInput(t, in)
	res, err := Generate(t.Context(), first)
	require.NoError(t, err)
	for range 10 {
		again := caseInput(t, in)
		slices.Reverse(again.Configs)
		again.Configs = append(again.Configs, again.Configs[0])
		got, err := Generate(t.Context(), again)
		require.NoError(t, err)
		require.Equal(t, string(res.Config), string(got.Config))
	}
	// Maps too: the details of a PagerDuty receiver.
	pd := caseInput(t, "testdata/operator/pagerduty.yaml")
	want, err := Generate(t.Context(), pd)
	require.NoError(t, err)
	for range 10 {
		got, err := Generate(t.Context(), pd)
		require.NoError(t, err)
		require.Equal(t, string(want.Config), string(got.Config))
	}
}

// TestVersion checks that Version is the version of Alertmanager's config
// package go.mod requires, which the tests and the controller are built
// with.
func TestVersion(t *testing.T) {
	gomod, err := os.ReadFile(filepath.Join("..", "..", "..", "go.mod"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*github\.com/prometheus/alertmanager v(\S+)$`).FindSubmatch(gomod)
	require.NotNil(t, m, "go.mod requires no github.com/prometheus/alertmanager")
	require.Equal(t, string(m[1]), Version, "update Version with go.mod")
}

// TestClash checks the AlertmanagerConfigs that load alone on the base but
// not together: those that do not load on the ones accepted before them
// are left out, in order. Names prefixed with a namespace and a name
// cannot clash for objects the API server accepts (a name has no "/"):
// the second object here is named as the API server would refuse.
func TestClash(t *testing.T) {
	first := amc(t, "a", "b", `
route: {receiver: c/d}
receivers:
- name: c/d`)
	second := amc(t, "a", "b/c", `
route: {receiver: d}
receivers:
- name: d`)
	res, err := Generate(t.Context(), Input{
		Alertmanager: alertmanager(""),
		Configs:      []*monitoringv1alpha1.AlertmanagerConfig{second, first, amc(t, "team-a", "fine", hookSpec)},
	})
	require.NoError(t, err)
	require.Equal(t, []LeftOut{{
		Config: types.NamespacedName{Namespace: "a", Name: "b/c"},
		Reason: `alertmanager refuses the configuration: notification config name "a/b/c/d" is not unique`,
	}}, res.LeftOut)
	cfg, err := config.Load(string(res.Config))
	require.NoError(t, err)
	var receivers []string
	for _, r := range cfg.Receivers {
		receivers = append(receivers, r.Name)
	}
	require.Equal(t, []string{"null", "a/b/c/d", "team-a/fine/hook"}, receivers)
}

// TestV1beta1 checks that an AlertmanagerConfig read as v1beta1 (where
// the CRD serves it) and converted to v1alpha1 with prometheus-operator's
// conversion gives the same configuration as the v1alpha1 object.
func TestV1beta1(t *testing.T) {
	alpha := amc(t, "team-a", "hooks", hookSpec)
	beta := &monitoringv1beta1.AlertmanagerConfig{}
	require.NoError(t, beta.ConvertFrom(alpha))
	require.NotEmpty(t, beta.Spec.Receivers[0].WebhookConfigs, "the v1beta1 object has the webhook")
	converted := &monitoringv1alpha1.AlertmanagerConfig{}
	require.NoError(t, beta.ConvertTo(converted))

	want, err := Generate(t.Context(), Input{Alertmanager: alertmanager(""), Configs: []*monitoringv1alpha1.AlertmanagerConfig{alpha}})
	require.NoError(t, err)
	got, err := Generate(t.Context(), Input{Alertmanager: alertmanager(""), Configs: []*monitoringv1alpha1.AlertmanagerConfig{converted}})
	require.NoError(t, err)
	require.Equal(t, string(want.Config), string(got.Config))
	require.Contains(t, string(got.Config), "team-a/hooks/hook")
}

// BenchmarkGenerate measures Generate for an Alertmanager that selects n
// AlertmanagerConfigs, each loaded alone on the base and then together.
func BenchmarkGenerate(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var configs []*monitoringv1alpha1.AlertmanagerConfig
			for i := range n {
				c := &monitoringv1alpha1.AlertmanagerConfig{}
				require.NoError(b, sigsyaml.UnmarshalStrict([]byte(hookSpec), &c.Spec))
				c.Namespace, c.Name = fmt.Sprintf("team-%04d", i), "hooks"
				configs = append(configs, c)
			}
			in := Input{Alertmanager: alertmanager(""), Configs: configs}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Generate(b.Context(), in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestContinueAsWritten checks the opt-in out of prometheus-operator's
// forced continue: with the annotation, a first-level route continues
// only when its AlertmanagerConfig says so.
func TestContinueAsWritten(t *testing.T) {
	stop := amc(t, "team-a", "stop", hookSpec)
	goOn := amc(t, "team-b", "go-on", hookSpec)
	goOn.Spec.Route.Continue = true
	for _, tc := range []struct {
		annotation string
		want       []bool
	}{
		{annotation: "", want: []bool{true, true}},
		{annotation: "forced", want: []bool{true, true}},
		{annotation: ContinueAsWritten, want: []bool{false, true}},
	} {
		t.Run(tc.annotation, func(t *testing.T) {
			am := alertmanager("")
			if tc.annotation != "" {
				am.Annotations = map[string]string{AnnotationContinue: tc.annotation}
			}
			res, err := Generate(t.Context(), Input{Alertmanager: am, Configs: []*monitoringv1alpha1.AlertmanagerConfig{stop, goOn}})
			require.NoError(t, err)
			cfg, err := config.Load(string(res.Config))
			require.NoError(t, err)
			var got []bool
			for _, r := range cfg.Route.Routes {
				got = append(got, r.Continue)
			}
			require.Equal(t, tc.want, got)
			require.Equal(t, []string{`namespace="team-a"`, `severity="critical"`}, matcherStrings(cfg.Route.Routes[0].Matchers), "the namespace matcher stays")
		})
	}
}
