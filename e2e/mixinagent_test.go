package e2e

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// agentSelector ends the expression of each alert on the agents
// (deploy/mixin/alerts.yaml).
const agentSelector = "\nand on (job, instance) prometheus_agent_active_series"

// TestMixinAgent runs the agents' alerts and panels against real
// Prometheus: an agent remote-writes to four remote storages, one that
// accepts (a Prometheus server, which also scrapes the agent and itself and
// evaluates the queries; it drops a series by relabeling), one that
// refuses (400), one that is down and one too slow for one shard; the server remote-writes to the refusing and
// the dead ones too. Each agent alert's expression selects the agent's
// queue in trouble, not the healthy one, and not the server's, which only
// the agent selector keeps out; each panel on the agents shows data; the
// agent serves every Prometheus metric the mixin uses. (The alerts' `for`
// is promtool's: TestMixinAlerts.)
func TestMixinAgent(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /refuse", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Error(w, "out of bounds", http.StatusBadRequest)
	})
	mux.HandleFunc("POST /slow", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		// A remote storage answering in half a second.
		select {
		case <-time.After(500 * time.Millisecond):
			w.WriteHeader(http.StatusNoContent)
		case <-r.Context().Done():
		}
	})
	// The agent's target: 300 series.
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		for i := range 300 {
			fmt.Fprintf(w, "target_value{n=\"%d\"} %d\n", i, i)
		}
	})
	remotes := httptest.NewServer(mux)
	t.Cleanup(remotes.Close)

	prom, err := toolbin.Path("prometheus")
	require.NoError(t, err)
	agentAddr, serverAddr, down := freeAddr(t), freeAddr(t), freeAddr(t)
	target := strings.TrimPrefix(remotes.URL, "http://")
	agentCfg := fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
- job_name: target
  static_configs:
  - targets: [%q]
remote_write:
- name: healthy
  url: http://%s/api/v1/write
  write_relabel_configs:
  - source_labels: [n]
    regex: "0"
    action: drop
- name: refusing
  url: %s/refuse
- name: down
  url: http://%s/api/v1/write
- name: slow
  url: %s/slow
  queue_config:
    max_shards: 1
    max_samples_per_send: 10
`, target, serverAddr, remotes.URL, down, remotes.URL)
	serverCfg := fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
- job_name: prom-agent-edge
  static_configs:
  - targets: [%q]
    labels: {namespace: monitoring, pod: prom-agent-edge-0}
- job_name: prometheus-k8s
  static_configs:
  - targets: [%q]
    labels: {namespace: monitoring, pod: prometheus-k8s-0}
remote_write:
- name: refusing
  url: %s/refuse
- name: down
  url: http://%s/api/v1/write
`, agentAddr, serverAddr, remotes.URL, down)
	dir := t.TempDir()
	for name, cfg := range map[string]string{"agent.yaml": agentCfg, "server.yaml": serverCfg} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(cfg), 0o644))
	}
	// A queue to a dead remote storage would hold the shutdown for a
	// minute, the default flush deadline.
	start(t, "agent", nil, prom, "--agent", "--config.file="+filepath.Join(dir, "agent.yaml"),
		"--storage.agent.path="+filepath.Join(dir, "agent"), "--web.listen-address="+agentAddr, "--storage.remote.flush-deadline=1s")
	agentURL := "http://" + agentAddr

	// Every Prometheus metric the mixin uses is the agent's.
	checkMixinMetrics(t, prometheusMetric, agentURL+"/metrics")

	// The server starts once the slow queue wants more shards than its one
	// (the agent computes it every 10 seconds) and holds samples: from its
	// first scrape on, as the pending alert's min_over_time reads.
	eventually(t, "the slow queue behind", func() error {
		desired, err := metric(t.Context(), agentURL+"/metrics", `prometheus_remote_storage_shards_desired{remote_name="slow",url="`+remotes.URL+`/slow"}`)
		if err != nil {
			return err
		}
		pending, err := metric(t.Context(), agentURL+"/metrics", `prometheus_remote_storage_samples_pending{remote_name="slow",url="`+remotes.URL+`/slow"}`)
		if err != nil {
			return err
		}
		if desired <= 1 || pending == 0 {
			return fmt.Errorf("%g shards desired, %g samples pending", desired, pending)
		}
		return nil
	})
	start(t, "server", nil, prom, "--config.file="+filepath.Join(dir, "server.yaml"), "--storage.tsdb.path="+filepath.Join(dir, "server"),
		"--web.listen-address="+serverAddr, "--web.enable-remote-write-receiver", "--storage.remote.flush-deadline=1s")
	serverURL := "http://" + serverAddr
	eventually(t, "server ready", func() error { return ok(t.Context(), serverURL+"/-/ready") })
	// Its queues start once its WAL is replayed, some seconds later.
	eventually(t, "the server's samples refused", func() error {
		failed, err := metric(t.Context(), serverURL+"/metrics", `prometheus_remote_storage_samples_failed_total{remote_name="refusing",url="`+remotes.URL+`/refuse"}`)
		if err == nil && failed == 0 {
			err = errors.New("none yet")
		}
		return err
	})

	// query returns the job and remote_name of each series of the query's result.
	query := func(q string) ([]string, error) {
		var v struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		}
		if err := getJSON(t.Context(), serverURL+"/api/v1/query?query="+url.QueryEscape(q), &v); err != nil {
			return nil, err
		}
		var out []string
		for _, s := range v.Result {
			out = append(out, s.Metric["job"]+" "+s.Metric["remote_name"])
		}
		slices.Sort(out)
		return out, nil
	}

	b, err := os.ReadFile(filepath.Join(mixinDir, "alerts.yaml"))
	require.NoError(t, err)
	var r monitoringv1.PrometheusRule
	require.NoError(t, yaml.UnmarshalStrict(b, &r))
	exprs := map[string]string{}
	for _, g := range r.Spec.Groups {
		for _, rule := range g.Rules {
			exprs[rule.Alert] = rule.Expr.String()
		}
	}
	for _, tc := range []struct {
		alert string
		// want is the agent's queue in trouble, quiet those the alert
		// does not concern; server, the server's queue the expression
		// selects without the agent selector.
		want, server string
		quiet        []string
	}{
		{alert: "PodreloadAgentRemoteWriteFailing", want: "refusing", server: "refusing", quiet: []string{"healthy", "down", "slow"}},
		{alert: "PodreloadAgentRemoteWriteBehind", want: "down", server: "down", quiet: []string{"healthy", "refusing"}},
		{alert: "PodreloadAgentSamplesPending", want: "slow", quiet: []string{"healthy", "refusing", "down"}},
	} {
		t.Run(tc.alert, func(t *testing.T) {
			expr, found := exprs[tc.alert]
			require.True(t, found, "no alert %s", tc.alert)
			require.Contains(t, expr, agentSelector)
			eventually(t, tc.alert, func() error {
				got, err := query(expr)
				if err != nil {
					return err
				}
				if !slices.Contains(got, "prom-agent-edge "+tc.want) {
					return fmt.Errorf("%s: got %q, want the agent's %s", tc.alert, got, tc.want)
				}
				for _, s := range got {
					job, remote, _ := strings.Cut(s, " ")
					if job != "prom-agent-edge" || slices.Contains(tc.quiet, remote) {
						return fmt.Errorf("%s: got %q, not for %s", tc.alert, got, s)
					}
				}
				if tc.server == "" {
					return nil
				}
				got, err = query(strings.Replace(expr, agentSelector, "", 1))
				if err != nil {
					return err
				}
				if !slices.Contains(got, "prometheus-k8s "+tc.server) {
					return fmt.Errorf("%s without the agent selector: got %q, want the server's %s too", tc.alert, got, tc.server)
				}
				return nil
			})
		})
	}

	t.Run("each panel on the agents shows data", func(t *testing.T) {
		queries := mixinQueries(t, ".+")
		used := usedMetrics(t, queries)
		var n int
		for where, q := range queries {
			if !strings.HasPrefix(where, "panel ") || !slices.ContainsFunc(slices.Collect(maps.Keys(used)), func(name string) bool {
				return prometheusMetric(name) && slices.Contains(used[name], where)
			}) {
				continue
			}
			n++
			eventually(t, where, func() error {
				got, err := query(q)
				if err == nil && len(got) == 0 {
					err = fmt.Errorf("no data: %s", q)
				}
				return err
			})
		}
		require.Positive(t, n, "no panel on the agents")
	})
}
