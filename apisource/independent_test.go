package apisource

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/internal/app"
	"github.com/podreload/podreload/internal/testenv/testlog"
	"github.com/podreload/podreload/internal/testenv/wait"
	"github.com/podreload/podreload/reloader"
)

// reloads is a reload endpoint recording, at each reload, the rendered
// configuration and the rule file r0/x.yaml.
type reloads struct {
	mu    sync.Mutex
	seen  []string
	files func() string
}

func (r *reloads) ServeHTTP(http.ResponseWriter, *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, r.files())
}

// waitFor waits until the n-th reload, and returns what it saw.
func (r *reloads) waitFor(t *testing.T, n int) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		if len(r.seen) >= n {
			defer r.mu.Unlock()
			require.Len(t, r.seen, n, "reloads")
			return r.seen[n-1]
		}
		r.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no reload %d", n)
	return ""
}

// TestRulesIndependentOfConfig runs the API source with the reloader on a
// real API server: the configuration's Secret deleted, then a part's
// Secret the Role does not grant, hold back neither rule changes nor
// their reload. The last configuration stays on disk; the source's Err,
// which /-/ready shows as degraded, names the Secret and the cause, and
// the log says it.
func TestRulesIndependentOfConfig(t *testing.T) {
	e := newEnv(t)
	ns := e.namespace(t)
	// The Role names cfg and cfg-1, not cfg-9.
	e.token, e.ca = e.cp.ServiceAccount(t, ns, "independent", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"cfg", "cfg-1"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}},
	})
	e.secret(t, ns, map[string][]byte{"config": []byte("v: 1\n")})
	e.configMap(t, ns, "r0", selected(), map[string]string{"x.yaml": "x1"})
	var logs testlog.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	// logged waits for a line of the log: the reloader logs an apply
	// after the reload's answer, just after the endpoint recorded it.
	logged := func(want string) {
		t.Helper()
		wait.Until(t, 20*time.Second, 20*time.Millisecond, "log line "+want, func() error {
			if !strings.Contains(logs.String(), want) {
				return errors.New("not logged yet")
			}
			return nil
		})
	}
	s, reg := e.source(t, ns, func(s *Source) { s.logger = logger })

	dir := t.TempDir()
	out, rules := filepath.Join(dir, "prometheus.env.yaml"), filepath.Join(dir, "rules")
	ep := &reloads{files: func() string {
		cfg, _ := os.ReadFile(out)
		rule, _ := os.ReadFile(filepath.Join(rules, "r0", "x.yaml"))
		return string(cfg) + "|" + string(rule)
	}}
	srv := httptest.NewServer(ep)
	defer srv.Close()
	reloadURL, err := url.Parse(srv.URL)
	require.NoError(t, err)
	r, err := reloader.New(logger, nil, reloader.Options{
		Source: s, ConfigOutput: out, RulesDir: rules, KeepAccepted: true, RetryInterval: time.Second,
		Trigger: &reloader.HTTPTrigger{URL: reloadURL},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	require.Equal(t, "v: 1\n|x1", ep.waitFor(t, 1))

	// The configuration's Secret deleted: a rule change still reloads.
	require.NoError(t, e.kube.CoreV1().Secrets(ns).Delete(t.Context(), "cfg", metav1.DeleteOptions{}))
	e.configMap(t, ns, "r0", selected(), map[string]string{"x.yaml": "x2"})
	require.Equal(t, "v: 1\n|x2", ep.waitFor(t, 2))
	require.EqualError(t, s.Err(), "secret "+ns+"/cfg not found: waiting for it; serving the last state")
	require.Equal(t, 1.0, metricValue(t, reg, "reloader_api_config_secrets_unavailable", ""))
	// /-/ready as config-reloader builds it: degraded (200), saying why.
	readiness := app.Readiness(r.Ready, s.Err)
	err = readiness()
	require.ErrorAs(t, err, new(*app.DegradedError))
	require.EqualError(t, err, "degraded: secret "+ns+"/cfg not found: waiting for it; serving the last state")
	logged(`msg="API source: no configuration, the last one is kept; rule changes still apply" err="secret ` + ns + `/cfg not found: waiting for it"`)

	// Back, naming a part the Role does not grant: the configuration
	// waits for it, and a rule change still reloads.
	var main []byte
	main = contract.AppendPartDirective(main, "cfg-9", []byte("jobs: 9\n"))
	e.secret(t, ns, map[string][]byte{"config": append(main, "v: 2\n"...)})
	deadline := time.Now().Add(20 * time.Second)
	for (s.Err() == nil || !strings.Contains(s.Err().Error(), "API server refuses secret cfg-9 since")) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	require.ErrorContains(t, s.Err(), "API server refuses secret cfg-9 since")
	require.ErrorContains(t, s.Err(), `list secret `+ns+`/cfg-9: API server answered 403: secrets "cfg-9" is forbidden`)
	require.Equal(t, 1.0, metricValue(t, reg, "reloader_api_config_secrets_unavailable", ""))
	e.configMap(t, ns, "r0", selected(), map[string]string{"x.yaml": "x3"})
	require.Equal(t, "v: 1\n|x3", ep.waitFor(t, 3))
	logged(`waiting for the configuration's parts: secret ` + ns + `/cfg-9: not read yet from the API server: list secret ` + ns + `/cfg-9: API server answered 403`)

	// Without the part, the configuration applies again.
	e.secret(t, ns, map[string][]byte{"config": []byte("v: 3\n")})
	require.Equal(t, "v: 3\n|x3", ep.waitFor(t, 4))
	deadline = time.Now().Add(20 * time.Second)
	for s.Err() != nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, s.Err())
	require.Equal(t, 0.0, metricValue(t, reg, "reloader_api_config_secrets_unavailable", ""))
	require.NoError(t, readiness())
}
