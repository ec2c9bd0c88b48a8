package apisource

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/reloader"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// client-go's and klog's background goroutines outlive the test's clients.
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		goleak.IgnoreTopFunction("k8s.io/client-go/util/workqueue.(*Type).updateUnfinishedWorkLoop"),
		goleak.IgnoreAnyFunction("k8s.io/client-go/util/workqueue.(*delayingType[...]).waitingLoop"),
	)
}

// env is a real API server with a namespace, a service account allowed to
// read the Secret "cfg" and the ConfigMaps, and an admin client.
type env struct {
	cp         *controlplane.ControlPlane
	kube       *kubernetes.Clientset
	token, ca  string
	namespaces int
}

func newEnv(t *testing.T) *env {
	// Without the watch cache, and compacting etcd every second, a watch
	// from a resourceVersion a second old fails, as one from days ago
	// does in a cluster: 410 Gone.
	cp := controlplane.StartWithFlags(t, map[string]string{"watch-cache": "false", "etcd-compaction-interval": "1s"})
	kube, err := kubernetes.NewForConfig(cp.Config)
	require.NoError(t, err)
	return &env{cp: cp, kube: kube}
}

// namespace creates a namespace and a reader in it; its token is in e.token.
func (e *env) namespace(t *testing.T) string {
	e.namespaces++
	ns := fmt.Sprintf("ns%d", e.namespaces)
	e.token, e.ca = e.cp.ServiceAccount(t, ns, "reader", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"cfg"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}},
	})
	return ns
}

// source starts a Source reading ns until the test ends.
func (e *env) source(t *testing.T, ns string, prepare func(*Source)) (*Source, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	s, err := New(nil, reg, Options{
		Config:          Config{Server: e.cp.Config.Host, TokenFile: e.token, CAFile: e.ca},
		SecretNamespace: ns, SecretName: "cfg", SecretKey: "config",
		RulesNamespace: ns, RulesSelector: "rules=yes",
	})
	require.NoError(t, err)
	if prepare != nil {
		prepare(s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return s, reg
}

// snapshotIs waits until the source's snapshot renders as want
// ("config|name=content;..." in name order) or its error says want.
func snapshotIs(t *testing.T, s *Source, want string) {
	t.Helper()
	var got string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		got = render(s.Snapshot())
		if got == want {
			return
		}
		select {
		case <-s.Changed():
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("snapshot: got %q, want %q", got, want)
}

func render(snap reloader.Snapshot, err error) string {
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	if snap.ConfigErr != nil {
		b.WriteString(snap.ConfigErr.Error() + "|")
	} else {
		b.WriteString(string(snap.Config) + "|")
	}
	for _, name := range slices.Sorted(maps.Keys(snap.Files)) {
		b.WriteString(name + "=" + snap.Files[name] + ";")
	}
	return b.String()
}

func (e *env) configMap(t *testing.T, ns, name string, labels, data map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Data: data}
	_, err := e.kube.CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{})
	if err != nil {
		_, err = e.kube.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{})
	}
	require.NoError(t, err)
}

func (e *env) secret(t *testing.T, ns string, data map[string][]byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: ns}, Data: data}
	_, err := e.kube.CoreV1().Secrets(ns).Update(t.Context(), s, metav1.UpdateOptions{})
	if err != nil {
		_, err = e.kube.CoreV1().Secrets(ns).Create(t.Context(), s, metav1.CreateOptions{})
	}
	require.NoError(t, err)
}

// selected are the labels the source selects.
func selected() map[string]string { return map[string]string{"rules": "yes"} }

func TestSource(t *testing.T) {
	e := newEnv(t)

	t.Run("content, selector, binary data", func(t *testing.T) {
		ns := e.namespace(t)
		s, reg := e.source(t, ns, nil)
		snapshotIs(t, s, "secret "+ns+"/cfg not found: waiting for it|")
		e.secret(t, ns, map[string][]byte{"config": []byte("a: 1\n")})
		e.configMap(t, ns, "r0", selected(), map[string]string{"x.yaml": "x0"})
		e.configMap(t, ns, "other", map[string]string{"rules": "no"}, map[string]string{"o.yaml": "o"})
		snapshotIs(t, s, "a: 1\n|r0/x.yaml=x0;")
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: ns, Labels: selected()}, BinaryData: map[string][]byte{"b.yaml": {0, 1, 2}}}
		_, err := e.kube.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{})
		require.NoError(t, err)
		snapshotIs(t, s, "a: 1\n|r0/x.yaml=x0;r1/b.yaml=\x00\x01\x02;")
		// Files are as stored; errors name a file by its ConfigMap and key.
		snap, err := s.Snapshot()
		require.NoError(t, err)
		require.Equal(t, "configmap "+ns+"/r1 key b.yaml.gz", snap.Describe("r1/b.yaml.gz"))
		// A ConfigMap that stops matching goes, as a deleted one.
		e.configMap(t, ns, "r0", map[string]string{"rules": "no"}, map[string]string{"x.yaml": "x0"})
		snapshotIs(t, s, "a: 1\n|r1/b.yaml=\x00\x01\x02;")
		require.NoError(t, e.kube.CoreV1().Secrets(ns).Delete(t.Context(), "cfg", metav1.DeleteOptions{}))
		// The rule files stay: they apply without the configuration.
		snapshotIs(t, s, "secret "+ns+"/cfg not found: waiting for it|r1/b.yaml=\x00\x01\x02;")
		require.EqualError(t, s.Err(), "secret "+ns+"/cfg not found: waiting for it; serving the last state")
		require.Equal(t, 1.0, metricValue(t, reg, "reloader_api_watch_connected", "configmaps"))
		require.Equal(t, 1.0, metricValue(t, reg, "reloader_api_config_secrets_unavailable", ""))
	})

	t.Run("410: a watch too old to resume lists again", func(t *testing.T) {
		ns := e.namespace(t)
		e.secret(t, ns, map[string][]byte{"config": []byte("b: 1\n")})
		e.configMap(t, ns, "r0", selected(), map[string]string{"x.yaml": "x0"})
		// Writes to compact away.
		for i := range 3 {
			e.configMap(t, ns, "r0", selected(), map[string]string{"x.yaml": fmt.Sprint(i)})
			time.Sleep(time.Second)
		}
		e.configMap(t, ns, "r0", selected(), map[string]string{"x.yaml": "x0"})
		s, reg := e.source(t, ns, func(s *Source) {
			// As if it had listed long ago: the API server no longer
			// has the events since.
			for _, w := range s.watchers {
				w.rv = "1"
				w.store.replace(nil)
			}
		})
		snapshotIs(t, s, "b: 1\n|r0/x.yaml=x0;")
		require.Equal(t, 1.0, metricValue(t, reg, "reloader_api_relists_total", "configmaps"))
	})

	t.Run("the token is read again for each request", func(t *testing.T) {
		ns := e.namespace(t)
		e.secret(t, ns, map[string][]byte{"config": []byte("c: 1\n")})
		valid, err := os.ReadFile(e.token)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(e.token, []byte("expired"), 0o600))
		s, _ := e.source(t, ns, nil)
		deadline := time.Now().Add(20 * time.Second)
		for s.Err() == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		require.ErrorContains(t, s.Err(), "API server answered 401")
		// The kubelet rotates the token: the next attempt of each watch
		// uses it (the one still in its backoff clears after it).
		require.NoError(t, os.WriteFile(e.token, valid, 0o600))
		snapshotIs(t, s, "c: 1\n|")
		deadline = time.Now().Add(20 * time.Second)
		for s.Err() != nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		require.NoError(t, s.Err())
	})
}

// metricValue returns the sample of name for resource, or of name
// without labels for "".
func metricValue(t *testing.T, reg *prometheus.Registry, name, resource string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if mf.GetName() == name && (resource == "" && len(m.GetLabel()) == 0 || len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == resource) {
				return m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no %s{resource=%q}", name, resource)
	return 0
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{SecretName: "x", SecretKey: "k"}, "the configuration's Secret needs a namespace, a name and a key"},
		{Options{SecretNamespace: "n", SecretName: "x", SecretKey: "k", RulesSelector: "a=b"}, "the rule ConfigMaps need a namespace"},
		{Options{SecretNamespace: "n", SecretName: "x", SecretKey: "k", Config: Config{Server: "ftp://x"}}, `API server "ftp://x" is not an http(s) URL`},
		{Options{SecretNamespace: "n", SecretName: "x", SecretKey: "k", Config: Config{Server: "ftp://u:pw@x/?t=tok"}}, `API server "ftp://u:xxxxx@x/?t=xxxxx" is not an http(s) URL`},
		{Options{SecretNamespace: "n", SecretName: "x", SecretKey: "k", Config: Config{Server: "https://u:pw@[::1?t=tok"}}, "API server URL (not shown, it may hold a secret) does not parse"},
		{Options{SecretNamespace: "n", SecretName: "x", SecretKey: "k", Config: Config{Server: "https://x", CAFile: "/nonexistent"}},
			"read the API server's CA: open /nonexistent: no such file or directory"},
	} {
		_, err := New(nil, nil, tc.opts)
		require.EqualError(t, err, tc.want)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, err := New(nil, nil, Options{SecretNamespace: "n", SecretName: "x", SecretKey: "k"})
	require.True(t, err != nil && strings.Contains(err.Error(), "not in a pod"), "%v", err)
	require.False(t, errors.Is(err, os.ErrNotExist))
}
