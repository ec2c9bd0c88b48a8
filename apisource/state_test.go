package apisource

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podreload/podreload/internal/testenv/testlog"
	"github.com/podreload/podreload/reloader"
)

// startStateSecret runs a StateSecret on ns/name until the test ends.
func startStateSecret(t *testing.T, cfg Config, ns, name string, logs *testlog.Buffer) (*StateSecret, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	s, err := NewStateSecret(slog.New(slog.NewJSONHandler(logs, nil)), reg, StateSecretOptions{Config: cfg, Namespace: ns, Name: name})
	require.NoError(t, err)
	run(t, s.Run)
	return s, reg
}

// stateFiles gunzips the keys of a state Secret's data, and reads the
// configuration out of accepted.tar: "accepted: CONFIG" and "rejected:
// MESSAGE", in that order, for the keys there.
func stateFiles(t *testing.T, data map[string][]byte) []string {
	t.Helper()
	var out []string
	for _, key := range slices.Sorted(maps.Keys(data)) {
		b, err := gunzip(data[key])
		require.NoError(t, err, key)
		switch key {
		case "accepted.tar.gz":
			tr := tar.NewReader(bytes.NewReader(b))
			for {
				hdr, err := tr.Next()
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
				if hdr.Name == "config" {
					c, err := io.ReadAll(tr)
					require.NoError(t, err)
					out = append(out, "accepted: "+string(c))
				}
			}
		case "rejected.json.gz":
			var rej struct{ Message string }
			require.NoError(t, json.Unmarshal(b, &rej))
			out = append(out, "rejected: "+rej.Message)
		default:
			t.Fatalf("unexpected key %s", key)
		}
	}
	return out
}

// TestStateSecret: the state the reloader keeps goes into its Secret, one
// write per change; a new pod's init container, its state dir empty,
// reads it back and writes the configuration Prometheus accepted, not the
// one it rejected.
func TestStateSecret(t *testing.T) {
	e := newEnv(t)
	ns := e.namespace(t)
	ctx := t.Context()
	token, ca := e.cp.ServiceAccount(t, ns, "sidecar", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"prom-0-reloader-state"}, Verbs: []string{"get", "update", "patch"}},
	})
	_, err := e.kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prom-0-reloader-state"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = e.kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string][]byte{"config": []byte("v: 1\n")}}, metav1.CreateOptions{})
	require.NoError(t, err)

	prom := startProm(t)
	cfg := Config{Server: e.cp.Config.Host, TokenFile: token, CAFile: ca}
	secretIs := func(what string, want ...string) {
		t.Helper()
		var got []string
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			s, err := e.kube.CoreV1().Secrets(ns).Get(ctx, "prom-0-reloader-state", metav1.GetOptions{})
			require.NoError(t, err)
			if got = stateFiles(t, s.Data); slices.Equal(got, want) {
				return
			}
		}
		t.Fatalf("state Secret, %s: got %q, want %q", what, got, want)
	}

	src, _ := e.source(t, ns, nil)
	var logs testlog.Buffer
	mirror, reg := startStateSecret(t, cfg, ns, "prom-0-reloader-state", &logs)
	pod := t.TempDir()
	opts := reloader.Options{
		Source: src, ConfigOutput: filepath.Join(pod, "config_out", "prometheus.env.yaml"),
		Trigger: &reloader.HTTPTrigger{URL: prom.url, Timeout: 5 * time.Second}, QuietWindow: 10 * time.Millisecond,
		RetryInterval: time.Hour, Retries: -1, KeepAccepted: true, StateMirror: mirror,
	}
	rel, err := reloader.New(nil, prometheus.NewRegistry(), opts)
	require.NoError(t, err)
	ctxRel, stopRel := context.WithCancel(context.Background())
	relDone := make(chan struct{})
	go func() {
		defer close(relDone)
		_ = rel.Run(ctxRel)
	}()
	t.Cleanup(func() { stopRel(); <-relDone })

	secretIs("accepted", "accepted: v: 1\n")
	prom.rejecting.Store(true)
	_, err = e.kube.CoreV1().Secrets(ns).Update(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string][]byte{"config": []byte("v: [\n")}}, metav1.UpdateOptions{})
	require.NoError(t, err)
	secretIs("rejected", "accepted: v: 1\n", "rejected: status 500: failed to reload config: parsing YAML file")
	require.Equal(t, 2.0, testutil.ToFloat64(mirror.writes), "one write per change")
	require.Zero(t, testutil.ToFloat64(mirror.errors.WithLabelValues(reasonWrite)))
	require.Equal(t, 3, testutil.CollectAndCount(reg, "reloader_state_secret_errors_total"))

	// The pod goes, its emptyDir with it.
	stopRel()
	<-relDone
	require.NoError(t, os.RemoveAll(filepath.Join(pod, "config_out")))

	// The new pod's init container.
	src2, _ := e.source(t, ns, nil)
	var logs2 testlog.Buffer
	mirror2, err := NewStateSecret(slog.New(slog.NewJSONHandler(&logs2, nil)), prometheus.NewRegistry(), StateSecretOptions{Config: cfg, Namespace: ns, Name: "prom-0-reloader-state"})
	require.NoError(t, err)
	opts.Source, opts.StateMirror = src2, mirror2
	init, err := reloader.New(nil, prometheus.NewRegistry(), opts)
	require.NoError(t, err)
	require.NoError(t, init.RenderOnce(ctx))
	rendered, err := os.ReadFile(opts.ConfigOutput)
	require.NoError(t, err)
	require.Equal(t, "v: 1\n", string(rendered), "the configuration Prometheus accepted")
	require.Contains(t, logs2.String(), `"msg":"state read from its Secret"`)

	// A Secret the Role does not grant: said with the API server's
	// message, counted, not retried.
	other, err := NewStateSecret(nil, prometheus.NewRegistry(), StateSecretOptions{Config: cfg, Namespace: ns, Name: "other"})
	require.NoError(t, err)
	_, err = other.Load(ctx)
	require.EqualError(t, err, `get Secret `+ns+`/other: API server answered 403: secrets "other" is forbidden: User "system:serviceaccount:`+ns+`:sidecar" cannot get resource "secrets" in API group "" in the namespace "`+ns+`"`)
	require.Equal(t, 1.0, testutil.ToFloat64(other.errors.WithLabelValues(reasonRead)))
}

// fakeAPI answers the requests of a StateSecret: GET with an empty Secret,
// PATCH as answer says (200 when nil). It records the patches.
type fakeAPI struct {
	mu      sync.Mutex
	patches []map[string]*string // the data of each patch, base64 values
	answer  func(n int) int      // the status of the n-th patch, from 1
}

func (f *fakeAPI) start(t *testing.T) Config {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte(`{"data":{}}`))
			return
		}
		var patch struct {
			Data map[string]*string `json:"data"`
		}
		_ = json.NewDecoder(r.Body).Decode(&patch)
		f.mu.Lock()
		f.patches = append(f.patches, patch.Data)
		n := len(f.patches)
		f.mu.Unlock()
		status := http.StatusOK
		if f.answer != nil {
			status = f.answer(n)
		}
		if status != http.StatusOK {
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"kind":"Status","message":"etcdserver: request timed out","code":500}`))
			return
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(api.Close)
	return Config{Server: api.URL}
}

func (f *fakeAPI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.patches)
}

// The keys of the n-th patch (from 1), "key=set" or "key=null", sorted.
func (f *fakeAPI) keys(n int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for k, v := range f.patches[n-1] {
		out = append(out, k+"="+map[bool]string{true: "null", false: "set"}[v == nil])
	}
	slices.Sort(out)
	return out
}

// A state too large for a Secret is kept locally only: logged naming the
// Secret, counted, and the Secret emptied, so that it never holds an older
// state.
func TestStateSecretTooLarge(t *testing.T) {
	var f fakeAPI
	cfg := f.start(t)
	var logs testlog.Buffer
	s, _ := startStateSecret(t, cfg, "ns", "prom-0-reloader-state", &logs)

	s.Store(map[string][]byte{"accepted.tar": []byte("small")})
	require.Eventually(t, func() bool { return f.count() == 1 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, []string{"accepted.tar.gz=set", "rejected.json.gz=null"}, f.keys(1))

	big := make([]byte, 3<<19) // 1.5 MiB, which gzip cannot shrink.
	_, _ = rand.Read(big)
	s.Store(map[string][]byte{"accepted.tar": []byte(base64.StdEncoding.EncodeToString(big)), "rejected.json": []byte(`{}`)})
	require.Eventually(t, func() bool { return testutil.ToFloat64(s.errors.WithLabelValues(reasonTooLarge)) == 1 }, 10*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return f.count() == 2 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, []string{"accepted.tar.gz=null", "rejected.json.gz=null"}, f.keys(2))
	require.Contains(t, logs.String(), `"msg":"state too large for its Secret: kept in the state dir only, the Secret emptied; a new pod starts without it","secret":"ns/prom-0-reloader-state"`)
	require.Zero(t, testutil.ToFloat64(s.errors.WithLabelValues(reasonWrite)))
}

// A failed write is logged, counted and retried with backoff; meanwhile
// and while a write hangs, the reloader reloads: it never waits for the
// Secret.
func TestStateSecretRetried(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	f := fakeAPI{answer: func(n int) int {
		switch n {
		case 1:
			close(entered)
			<-release
			return http.StatusInternalServerError
		case 2:
			return http.StatusInternalServerError
		}
		return http.StatusOK
	}}
	cfg := f.start(t)
	var logs testlog.Buffer
	mirror, _ := startStateSecret(t, cfg, "ns", "prom-0-reloader-state", &logs)

	prom := startProm(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "prometheus.yaml")
	require.NoError(t, os.WriteFile(in, []byte("v: 1\n"), 0o600))
	rel, err := reloader.New(nil, prometheus.NewRegistry(), reloader.Options{
		ConfigFile: in, ConfigOutput: filepath.Join(dir, "out", "prometheus.env.yaml"),
		Trigger: &reloader.HTTPTrigger{URL: prom.url, Timeout: 5 * time.Second}, QuietWindow: 10 * time.Millisecond,
		Retries: -1, KeepAccepted: true, StateMirror: mirror,
	})
	require.NoError(t, err)
	run(t, rel.Run)

	<-entered // The first write hangs...
	for i, v := range []string{"v: 2\n", "v: 3\n"} {
		require.NoError(t, os.WriteFile(in+".tmp", []byte(v), 0o600))
		require.NoError(t, os.Rename(in+".tmp", in))
		require.Eventually(t, func() bool { return prom.reloads.Load() == int32(i+2) }, 10*time.Second, 5*time.Millisecond, "...and the reloads go on")
	}
	close(release)
	require.Eventually(t, func() bool { return f.count() == 3 }, 10*time.Second, 5*time.Millisecond, "retried")
	require.Equal(t, 2.0, testutil.ToFloat64(mirror.errors.WithLabelValues(reasonWrite)))
	require.Contains(t, logs.String(), `"msg":"write the state Secret","secret":"ns/prom-0-reloader-state","err":"patch Secret ns/prom-0-reloader-state: API server answered 500: etcdserver: request timed out","attempt":1`)

	// The write that went through holds the last state.
	f.mu.Lock()
	gz, err := base64.StdEncoding.DecodeString(*f.patches[2]["accepted.tar.gz"])
	f.mu.Unlock()
	require.NoError(t, err)
	require.Equal(t, []string{"accepted: v: 3\n"}, stateFiles(t, map[string][]byte{"accepted.tar.gz": gz}))
	require.Equal(t, 3.0, testutil.ToFloat64(mirror.writes))
}
