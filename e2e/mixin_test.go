package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// mixinDir holds the alerts and the dashboard users install.
const mixinDir = "../deploy/mixin"

// grafanaVariable is a Grafana variable in a query: $name or ${name} (or
// ${name:format}). Interval variables stand for a duration, the others for
// label values, inside quotes.
var grafanaVariable = regexp.MustCompile(`\$\{[^}]+\}|\$\w+`)

// dashboard is the part of a Grafana dashboard this test reads.
type dashboard struct {
	UID        string           `json:"uid"`
	Title      string           `json:"title"`
	Panels     []dashboardPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// dashboardPanel is a panel, or a row holding panels.
type dashboardPanel struct {
	ID         int    `json:"id"`
	Title      string `json:"title"`
	Type       string `json:"type"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"`
}

// mixinQueries returns every PromQL query of the mixin, by where it is:
// the dashboard's targets and variables, the alerts' expressions, with
// Grafana's variables replaced: label values by labelValue, durations by
// 5m. It checks the dashboard's structure on the way.
func mixinQueries(t *testing.T, labelValue string) map[string]string {
	t.Helper()
	queries := map[string]string{}
	b, err := os.ReadFile(filepath.Join(mixinDir, "dashboard.json"))
	require.NoError(t, err)
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(b))
	require.NoError(t, dec.Decode(&d), "dashboard.json")
	require.NotEmpty(t, d.UID, "uid")
	require.NotEmpty(t, d.Title, "title")

	var variables []string
	for _, v := range d.Templating.List {
		variables = append(variables, v.Name)
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)
		s, _ := q["query"].(string)
		// label_values(SELECTOR, LABEL): the selector is PromQL.
		args, ok := strings.CutPrefix(s, "label_values(")
		require.True(t, ok, "variable %s: want label_values(selector, label), got %q", v.Name, s)
		i := strings.LastIndex(args, ",")
		require.Positive(t, i, "variable %s: %q names no selector", v.Name, s)
		queries["variable "+v.Name] = args[:i]
	}
	require.Contains(t, variables, "datasource")

	ids := map[int]bool{}
	var walk func(panels []dashboardPanel)
	walk = func(panels []dashboardPanel) {
		for _, p := range panels {
			require.False(t, ids[p.ID], "panel id %d twice", p.ID)
			ids[p.ID] = true
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
			require.NotNil(t, p.Datasource, "panel %q: no datasource", p.Title)
			require.Equal(t, "${datasource}", p.Datasource.UID, "panel %q: the datasource variable", p.Title)
			for _, tg := range p.Targets {
				where := fmt.Sprintf("panel %q, query %s", p.Title, tg.RefID)
				queries[where] = grafanaVariable.ReplaceAllStringFunc(tg.Expr, func(v string) string {
					name := strings.Trim(v, "${}")
					name, _, _ = strings.Cut(name, ":")
					if strings.HasPrefix(name, "__") {
						return "5m" // $__rate_interval, $__interval, $__range
					}
					require.Contains(t, variables, name, "%s: undefined variable %s", where, v)
					return labelValue
				})
			}
		}
	}
	walk(d.Panels)
	require.NotEmpty(t, ids, "no panel")

	b, err = os.ReadFile(filepath.Join(mixinDir, "alerts.yaml"))
	require.NoError(t, err)
	var r monitoringv1.PrometheusRule
	require.NoError(t, yaml.UnmarshalStrict(b, &r))
	for _, g := range r.Spec.Groups {
		for _, rule := range g.Rules {
			queries["alert "+rule.Alert+rule.Record] = rule.Expr.String()
		}
	}
	return queries
}

// usedMetrics parses each query with Prometheus' PromQL parser and
// returns the metric names they select, each with where it is used.
func usedMetrics(t *testing.T, queries map[string]string) map[string][]string {
	t.Helper()
	used := map[string][]string{}
	for where, q := range queries {
		expr, err := parser.ParseExpr(q)
		require.NoError(t, err, "%s: %s", where, q)
		parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
			vs, ok := node.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
			require.NotEmpty(t, name, "%s: a selector without a metric name: %s", where, vs)
			used[name] = append(used[name], where)
			return nil
		})
	}
	return used
}

// TestMixinQueriesParse checks the dashboard's structure and that each of
// its queries, and each alert's expression, is valid PromQL.
func TestMixinQueriesParse(t *testing.T) {
	used := usedMetrics(t, mixinQueries(t, "value"))
	for _, name := range []string{
		"reloader_last_reload_successful", "reloader_reloads_total", "reloader_reload_duration_seconds_bucket",
		"reloader_api_watch_connected", "podreload_controller_config_applied",
		"podreload_controller_config_apply_seconds_bucket", "podreload_controller_reconciles_total",
		"podreload_controller_writes_total", "podreload_controller_rejected_resources",
		"prometheus_agent_active_series", "prometheus_remote_storage_samples_failed_total",
		"prometheus_remote_storage_samples_total", "prometheus_remote_storage_highest_timestamp_in_seconds",
		"prometheus_remote_storage_queue_highest_sent_timestamp_seconds", "prometheus_remote_storage_samples_pending",
		"prometheus_remote_storage_shards_desired", "prometheus_remote_storage_shards_max",
		"prometheus_tsdb_wal_storage_size_bytes",
	} {
		require.Contains(t, used, name, "the mixin shows or alerts on %s", name)
	}
}

// prometheusMetric tells Prometheus' own metrics, which the agents'
// panels and alerts read, from podreload's.
func prometheusMetric(name string) bool { return strings.HasPrefix(name, "prometheus_") }

// podreloadMetric tells the metrics of podreload's controller and
// sidecars.
func podreloadMetric(name string) bool { return !prometheusMetric(name) }

// checkMixinMetrics waits until the pages urls serve every metric the
// mixin uses that of tells: the names of the samples of each family,
// _bucket, _sum and _count for a histogram.
func checkMixinMetrics(t *testing.T, of func(name string) bool, urls ...string) {
	t.Helper()
	used := usedMetrics(t, mixinQueries(t, "value"))
	maps.DeleteFunc(used, func(name string, _ []string) bool { return !of(name) })
	require.NotEmpty(t, used)
	eventually(t, "the metrics the mixin uses", func() error {
		exported := map[string]bool{}
		for _, url := range urls {
			code, body, err := get(t.Context(), url)
			if err != nil {
				return err
			}
			if code != http.StatusOK {
				return fmt.Errorf("GET %s: status %d", url, code)
			}
			p := expfmt.NewTextParser(model.UTF8Validation)
			families, err := p.TextToMetricFamilies(bytes.NewReader(body))
			if err != nil {
				return fmt.Errorf("parse %s: %w", url, err)
			}
			for name, f := range families {
				exported[name] = true
				switch f.GetType() {
				case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
					exported[name+"_bucket"], exported[name+"_sum"], exported[name+"_count"] = true, true, true
				case dto.MetricType_SUMMARY:
					exported[name+"_sum"], exported[name+"_count"] = true, true
				}
			}
		}
		var missing []string
		for name, where := range used {
			if !exported[name] {
				slices.Sort(where)
				missing = append(missing, fmt.Sprintf("%s (%s)", name, strings.Join(where, "; ")))
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			return fmt.Errorf("not exported: %s", strings.Join(missing, ", "))
		}
		return nil
	})
}
