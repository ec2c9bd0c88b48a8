package projector_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/projector"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitFor bounds every wait for the projector.
const waitFor = 30 * time.Second

// TestKubelet runs the projector's kubelet mode against a real kube-apiserver
// and etcd (built by `make tools`).
func TestKubelet(t *testing.T) {
	cp := controlplane.Start(t)
	kubeconfig := cp.Kubeconfig
	cs, err := kubernetes.NewForConfig(cp.Config)
	require.NoError(t, err)
	secrets := cs.CoreV1().Secrets("default")
	configMaps := cs.CoreV1().ConfigMaps("default")

	t.Run("secret projected, then swapped on update", func(t *testing.T) {
		s, err := secrets.Create(t.Context(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "config"},
			Data:       map[string][]byte{"prometheus.yaml.gz": []byte("v1")},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		dir := filepath.Join(t.TempDir(), "config") // created by the projector
		k := projector.OpenKubelet(t, kubeconfig, "default", []projector.KubeletVolume{{Kind: "secret", Name: "config", Dir: dir}})

		requireProjection(t, k, projector.Projection{Kind: "secret", Name: "config", ResourceVersion: s.ResourceVersion})
		require.Equal(t, map[string]string{"prometheus.yaml.gz": "v1"}, files(t, dir))
		link, err := os.Readlink(filepath.Join(dir, "prometheus.yaml.gz"))
		require.NoError(t, err)
		require.Equal(t, "..data/prometheus.yaml.gz", link)
		first := dataDir(t, dir)
		require.True(t, strings.HasPrefix(first, "..") && first != "..data", "..data -> %s", first)
		require.DirExists(t, filepath.Join(dir, first))

		// An unchanged payload is not written: the next projection is the
		// data change, not the label change before it.
		s.Labels = map[string]string{"touched": "true"}
		_, err = secrets.Update(t.Context(), s, metav1.UpdateOptions{})
		require.NoError(t, err)
		s, err = secrets.Get(t.Context(), "config", metav1.GetOptions{})
		require.NoError(t, err)
		s.Data = map[string][]byte{"prometheus.yaml.gz": []byte("v2"), "extra": []byte("x")}
		s, err = secrets.Update(t.Context(), s, metav1.UpdateOptions{})
		require.NoError(t, err)

		requireProjection(t, k, projector.Projection{Kind: "secret", Name: "config", ResourceVersion: s.ResourceVersion})
		require.Equal(t, map[string]string{"prometheus.yaml.gz": "v2", "extra": "x"}, files(t, dir))
		second := dataDir(t, dir)
		require.NotEqual(t, first, second, "..data must point at a new timestamped directory")
		require.NoDirExists(t, filepath.Join(dir, first), "the old timestamped directory is removed")
	})

	t.Run("optional configmap: absent, created, deleted", func(t *testing.T) {
		dir := t.TempDir()
		k := projector.OpenKubelet(t, kubeconfig, "default", []projector.KubeletVolume{{Kind: "configmap", Name: "rules", Dir: dir, Optional: true}})

		requireProjection(t, k, projector.Projection{Kind: "configmap", Name: "rules"})
		require.Empty(t, files(t, dir))
		dataDir(t, dir)

		cm, err := configMaps.Create(t.Context(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "rules"},
			Data:       map[string]string{"a.yaml": "groups: []\n"},
			BinaryData: map[string][]byte{"b.bin": {0, 1, 2}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		requireProjection(t, k, projector.Projection{Kind: "configmap", Name: "rules", ResourceVersion: cm.ResourceVersion})
		require.Equal(t, map[string]string{"a.yaml": "groups: []\n", "b.bin": "\x00\x01\x02"}, files(t, dir))

		require.NoError(t, configMaps.Delete(t.Context(), "rules", metav1.DeleteOptions{}))
		requireProjection(t, k, projector.Projection{Kind: "configmap", Name: "rules"})
		require.Empty(t, files(t, dir))
	})

	t.Run("required secret: written once created, kept when deleted", func(t *testing.T) {
		dir := t.TempDir()
		k := projector.OpenKubelet(t, kubeconfig, "default", []projector.KubeletVolume{{Kind: "secret", Name: "late", Dir: dir}})

		// The first projection is the object's: nothing was written while
		// it was absent.
		s, err := secrets.Create(t.Context(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "late"},
			Data:       map[string][]byte{"token": []byte("one")},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		requireProjection(t, k, projector.Projection{Kind: "secret", Name: "late", ResourceVersion: s.ResourceVersion})
		require.Equal(t, map[string]string{"token": "one"}, files(t, dir))

		// Deleting it writes nothing: the next projection is the new object's.
		require.NoError(t, secrets.Delete(t.Context(), "late", metav1.DeleteOptions{}))
		s, err = secrets.Create(t.Context(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "late"},
			Data:       map[string][]byte{"token": []byte("two")},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		requireProjection(t, k, projector.Projection{Kind: "secret", Name: "late", ResourceVersion: s.ResourceVersion})
		require.Equal(t, map[string]string{"token": "two"}, files(t, dir))
	})

	t.Run("failed write reported and retried", func(t *testing.T) {
		// A regular file where the ..data symlink belongs fails every write.
		dir := t.TempDir()
		data := filepath.Join(dir, "..data")
		require.NoError(t, os.WriteFile(data, nil, 0o644))
		k := projector.OpenKubelet(t, kubeconfig, "default", []projector.KubeletVolume{{Kind: "secret", Name: "broken", Dir: dir}})
		s, err := secrets.Create(t.Context(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "broken"},
			Data:       map[string][]byte{"k": []byte("v")},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		select {
		case err := <-k.Errors():
			require.EqualError(t, err, "projector: project secret default/broken (resourceVersion "+s.ResourceVersion+") into "+
				dir+": readlink "+data+": invalid argument")
		case p := <-k.Projections():
			t.Fatalf("unexpected projection %+v", p)
		case <-time.After(waitFor):
			t.Fatalf("no error within %v", waitFor)
		}

		require.NoError(t, os.Remove(data))
		requireProjectionAfterErrors(t, k, projector.Projection{Kind: "secret", Name: "broken", ResourceVersion: s.ResourceVersion})
		require.Equal(t, map[string]string{"k": "v"}, files(t, dir))
	})

	t.Run("API server restart", func(t *testing.T) { testRestart(t, cp, secrets) })
}

// testRestart stops the API server under a running projector and starts it
// again: the watch reconnects and a change made afterwards is projected.
func testRestart(t *testing.T, cp *controlplane.ControlPlane, secrets typedcorev1.SecretInterface) {
	s, err := secrets.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "restart"},
		Data:       map[string][]byte{"k": []byte("before")},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	dir := t.TempDir()
	k := projector.OpenKubelet(t, cp.Kubeconfig, "default", []projector.KubeletVolume{{Kind: "secret", Name: "restart", Dir: dir}})
	requireProjection(t, k, projector.Projection{Kind: "secret", Name: "restart", ResourceVersion: s.ResourceVersion})

	cp.RestartAPIServer(t)
	s.Data = map[string][]byte{"k": []byte("after")}
	s, err = secrets.Update(t.Context(), s, metav1.UpdateOptions{})
	require.NoError(t, err)

	// A failing list while the API server is away is reported, not fatal.
	requireProjectionAfterErrors(t, k, projector.Projection{Kind: "secret", Name: "restart", ResourceVersion: s.ResourceVersion})
	require.Equal(t, map[string]string{"k": "after"}, files(t, dir))
}

// TestKubeletContext checks that cancelling StartKubelet's context stops the
// projector cleanly, even while it retries an unreachable API server.
func TestKubeletContext(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: down, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: down, context: {cluster: down, user: u}}]
current-context: down
`), 0o600))
	dir := filepath.Join(t.TempDir(), "rules")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	k, err := projector.StartKubelet(ctx, kubeconfig, "default", []projector.KubeletVolume{{Kind: "configmap", Name: "rules", Dir: dir, Optional: true}})
	require.NoError(t, err)
	// The projector handles SIGTERM by the time it creates the volume directory.
	require.Eventually(t, func() bool { _, err := os.Stat(dir); return err == nil }, waitFor, 10*time.Millisecond)

	cancel()
	select {
	case p, ok := <-k.Projections():
		require.False(t, ok, "unexpected projection %+v", p)
	case <-time.After(waitFor):
		t.Fatal("the projector did not exit")
	}
	require.NoError(t, k.Close())
}

// TestKubeletUsage checks that the projector refuses bad command lines with
// exit status 2 and says why; none of them needs an API server.
func TestKubeletUsage(t *testing.T) {
	bin, err := toolbin.Path("projector")
	require.NoError(t, err)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"no kubeconfig", []string{"-volume", "secret:a:" + dir}, "usage: projector "},
		{"no volume", []string{"-kubeconfig", kubeconfig}, "usage: projector "},
		{"with -dst", []string{"-kubeconfig", kubeconfig, "-volume", "secret:a:" + dir, "-dst", dir}, "usage: projector "},
		{"bad kind", []string{"-kubeconfig", kubeconfig, "-volume", "pod:a:" + dir},
			`volume "pod:a:` + dir + `": want secret:NAME:DIR or configmap:NAME:DIR, optionally followed by :optional`},
		{"no dir", []string{"-kubeconfig", kubeconfig, "-volume", "secret:a"}, `volume "secret:a": want secret:NAME:DIR[:optional]`},
		{"shared dir", []string{"-kubeconfig", kubeconfig, "-volume", "secret:a:" + dir, "-volume", "configmap:b:" + dir + ":optional"},
			"directory " + dir + " is already the volume of secret a"},
		{"missing kubeconfig", []string{"-kubeconfig", kubeconfig, "-volume", "secret:a:" + dir},
			"projector: load kubeconfig " + kubeconfig + ": stat " + kubeconfig + ": no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(t.Context(), bin, tc.args...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "want an exit status, got %v", err)
			require.Equal(t, 2, exit.ExitCode())
			require.Contains(t, stderr.String(), tc.stderr)
			require.Empty(t, stdout.String())
		})
	}

	t.Run("StartKubelet", func(t *testing.T) {
		k, err := projector.StartKubelet(t.Context(), kubeconfig, "default", []projector.KubeletVolume{{Kind: "pod", Name: "a", Dir: dir}})
		require.NoError(t, err)
		select {
		case p, ok := <-k.Projections():
			require.False(t, ok, "unexpected projection %+v", p)
		case <-time.After(waitFor):
			t.Fatal("the projector did not exit")
		}
		require.EqualError(t, k.Close(), "projector: exit status 2")
	})
}

// requireProjection waits for the Kubelet's next projection and checks it
// is want, apart from its times.
func requireProjection(t *testing.T, k *projector.Kubelet, want projector.Projection) {
	t.Helper()
	select {
	case p, ok := <-k.Projections():
		require.True(t, ok, "the projector exited")
		require.False(t, p.Start.IsZero())
		require.False(t, p.End.Before(p.Start), "end %v before start %v", p.End, p.Start)
		p.Start, p.End = time.Time{}, time.Time{}
		require.Equal(t, want, p)
	case err := <-k.Errors():
		t.Fatalf("waiting for %+v: %v", want, err)
	case <-time.After(waitFor):
		t.Fatalf("no projection of %+v within %v", want, waitFor)
	}
}

// requireProjectionAfterErrors is requireProjection logging, rather than
// failing on, the errors reported before the projection.
func requireProjectionAfterErrors(t *testing.T, k *projector.Kubelet, want projector.Projection) {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case p, ok := <-k.Projections():
			require.True(t, ok, "the projector exited")
			p.Start, p.End = time.Time{}, time.Time{}
			require.Equal(t, want, p)
			return
		case err := <-k.Errors():
			t.Log(err)
		case <-deadline:
			t.Fatalf("no projection of %+v within %v", want, waitFor)
		}
	}
}

// files returns the content of the user-visible files of a volume directory.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	got := map[string]string{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		got[e.Name()] = string(b)
	}
	return got
}

// dataDir returns the timestamped directory the volume's ..data points at.
func dataDir(t *testing.T, dir string) string {
	t.Helper()
	target, err := os.Readlink(filepath.Join(dir, "..data"))
	require.NoError(t, err, "..data must be a symlink")
	return target
}
