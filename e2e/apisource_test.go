package e2e

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// apiPod is a Prometheus pod whose config-reloader reads its Secret and
// rule ConfigMaps through a real API server, as the service account
// reader, with only the Role the controller grants.
type apiPod struct {
	t                   testing.TB
	cp                  *controlplane.ControlPlane
	kube                *kubernetes.Clientset
	ns                  string
	root, out, rulesDir string
	apiArgs             []string
	prom, sidecar       *process
	promURL, sidecarURL string
}

const (
	apiSecret   = "prom-config"
	apiKey      = "prometheus.yaml.gz"
	apiSelector = "podreload.dev/rulefiles=prom"
)

// newAPIPod creates the namespace ns and in it the service account
// "reader", with a Role granting the Secret (by name) and, if
// grantConfigMaps, the ConfigMaps: what the controller grants.
func newAPIPod(t testing.TB, cp *controlplane.ControlPlane, ns string, grantConfigMaps bool) *apiPod {
	t.Helper()
	kube, err := kubernetes.NewForConfig(cp.Config)
	require.NoError(t, err)
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{apiSecret}, Verbs: []string{"get", "list", "watch"}}}
	if grantConfigMaps {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}})
	}
	token, ca := cp.ServiceAccount(t, ns, "reader", rules)
	root := t.TempDir()
	p := &apiPod{t: t, cp: cp, kube: kube, ns: ns, root: root,
		out: filepath.Join(root, "config-out", "prometheus.env.yaml"), rulesDir: filepath.Join(root, "rules")}
	p.apiArgs = []string{
		"--config-secret=" + ns + "/" + apiSecret, "--config-secret-key=" + apiKey,
		"--rules-configmap-selector=" + apiSelector, "--rules-dir=" + p.rulesDir,
		"--config-envsubst-file=" + p.out,
		"--api-server=" + cp.Config.Host, "--api-token-file=" + token, "--api-ca-file=" + ca,
	}
	return p
}

// config is the gzipped configuration, with version as an external label.
func (p *apiPod) config(version string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	// Prometheus allows a wildcard in the last path element only: one
	// entry per rule ConfigMap, as the controller writes them.
	fmt.Fprintf(zw, "global:\n  external_labels:\n    replica: $(POD_NAME)\n    version: %s\nrule_files:\n- %s/prom-rulefiles-0/*.yaml\n- %s/prom-rulefiles-1/*.yaml\n",
		version, p.rulesDir, p.rulesDir)
	require.NoError(p.t, zw.Close())
	return b.Bytes()
}

func (p *apiPod) setSecret(data map[string][]byte) {
	p.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: apiSecret, Namespace: p.ns}, Data: data}
	_, err := p.kube.CoreV1().Secrets(p.ns).Update(p.t.Context(), s, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = p.kube.CoreV1().Secrets(p.ns).Create(p.t.Context(), s, metav1.CreateOptions{})
	}
	require.NoError(p.t, err)
}

// ruleFile is a rule file of one group with recording rules named names.
func ruleFile(group string, names ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "groups:\n- name: %s\n  rules:\n", group)
	for _, name := range names {
		fmt.Fprintf(&b, "  - record: %s\n    expr: vector(1)\n", name)
	}
	return b.String()
}

func (p *apiPod) setConfigMap(name string, data map[string]string) {
	p.t.Helper()
	p.putConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.ns,
		Labels: map[string]string{"podreload.dev/rulefiles": "prom"}}, Data: data})
}

// setGzipped sets the rule ConfigMap name to hold files gzipped, as the
// controller writes them: the binaryData key X.gz for the file X.
func (p *apiPod) setGzipped(name string, files map[string]string) {
	p.t.Helper()
	binary := map[string][]byte{}
	for file, content := range files {
		binary[file+".gz"] = gzipped(p.t, content)
	}
	p.setBinary(name, binary)
}

func (p *apiPod) setBinary(name string, binary map[string][]byte) {
	p.t.Helper()
	p.putConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.ns,
		Labels: map[string]string{"podreload.dev/rulefiles": "prom"}}, BinaryData: binary})
}

func gzipped(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, err := zw.Write([]byte(s))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}

func (p *apiPod) putConfigMap(cm *corev1.ConfigMap) {
	p.t.Helper()
	_, err := p.kube.CoreV1().ConfigMaps(p.ns).Update(p.t.Context(), cm, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = p.kube.CoreV1().ConfigMaps(p.ns).Create(p.t.Context(), cm, metav1.CreateOptions{})
	}
	require.NoError(p.t, err)
}

// startPrometheus starts Prometheus and the sidecar, as the pod's
// containers, once the init container has written the configuration.
func (p *apiPod) startPrometheus() {
	p.t.Helper()
	promBin, err := toolbin.Path("prometheus")
	require.NoError(p.t, err)
	promAddr, sidecarAddr := freeAddr(p.t), freeAddr(p.t)
	p.promURL, p.sidecarURL = "http://"+promAddr, "http://"+sidecarAddr
	p.prom = start(p.t, "prometheus", nil, promBin, "--config.file="+p.out, "--web.listen-address="+promAddr,
		"--storage.tsdb.path="+filepath.Join(p.root, "data"), "--web.enable-lifecycle")
	p.sidecar = start(p.t, "config-reloader", []string{"POD_NAME=" + podName}, ours("config-reloader"),
		append(p.apiArgs, "--reload-url="+p.promURL+"/-/reload", "--listen-address="+sidecarAddr, "--log-level=debug")...)
	eventually(p.t, "prometheus ready", func() error { return ok(p.t.Context(), p.promURL+"/-/ready") })
}

// serves waits until Prometheus runs version with exactly these rule groups
// and records.
func (p *apiPod) serves(version string, rules map[string][]string) {
	p.t.Helper()
	pd := &pod{t: p.t, promURL: p.promURL, prom: p.prom, sidecar: p.sidecar}
	want := state{replica: podName, version: version, rules: rules}
	eventually(p.t, "prometheus runs "+want.String(), func() error {
		got, err := pd.observe()
		if err = pd.alive(err); err != nil {
			return err
		}
		if got.String() != want.String() {
			return fmt.Errorf("runs %s", got)
		}
		return nil
	})
}

func (p *apiPod) metric(name string) float64 {
	p.t.Helper()
	v, err := metric(p.t.Context(), p.sidecarURL+"/metrics", name)
	require.NoError(p.t, err)
	return v
}

// metricBecomes waits for the sidecar's metric to read want: Prometheus
// serves what a reload loaded before the sidecar has read the answer and
// set its metrics.
func (p *apiPod) metricBecomes(name string, want float64) {
	p.t.Helper()
	eventually(p.t, name, func() error {
		v, err := metric(p.t.Context(), p.sidecarURL+"/metrics", name)
		if err == nil && v != want {
			err = fmt.Errorf("%s is %v, want %v", name, v, want)
		}
		return err
	})
}

// logged waits for a line of the process' log matching the regexp.
func logged(t *testing.T, proc *process, pattern string) {
	t.Helper()
	re := regexp.MustCompile(pattern)
	eventually(t, "log line "+pattern, func() error {
		if re.MatchString(proc.output()) {
			return nil
		}
		return fmt.Errorf("not in the log of %s", proc.name)
	})
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestAPISource(t *testing.T) {
	cp := controlplane.Start(t)
	p := newAPIPod(t, cp, "api", true)
	p.setConfigMap("prom-rulefiles-0", map[string]string{"a.yaml": ruleFile("a", "a1")})

	// The init container waits for the Secret, then for its key, saying
	// which, and writes the configuration and the rules.
	initc := start(t, "init-config-reloader", []string{"POD_NAME=" + podName}, ours("config-reloader"), append(p.apiArgs, "--watch-interval=0")...)
	logged(t, initc, `secret api/prom-config not found: waiting for it`)
	p.setSecret(map[string][]byte{"other": []byte("x")})
	logged(t, initc, `secret api/prom-config has no key \\"prometheus.yaml.gz\\" \(it has other\): waiting for it`)
	p.setSecret(map[string][]byte{apiKey: p.config("1")})
	require.NoError(t, initc.wait(t), "init container")
	require.Contains(t, readString(t, p.out), "replica: "+podName+"\n")
	require.Equal(t, ruleFile("a", "a1"), readString(t, filepath.Join(p.rulesDir, "prom-rulefiles-0", "a.yaml")))

	p.startPrometheus()
	p.serves("1", map[string][]string{"a": {"a1"}})

	t.Run("rule edited, added, configmap added", func(t *testing.T) {
		p.setConfigMap("prom-rulefiles-0", map[string]string{"a.yaml": ruleFile("a", "a2"), "b.yaml": ruleFile("b", "b1")})
		p.setConfigMap("prom-rulefiles-1", map[string]string{"c.yaml": ruleFile("c", "c1")})
		p.serves("1", map[string][]string{"a": {"a2"}, "b": {"b1"}, "c": {"c1"}})
	})
	t.Run("configmap deleted", func(t *testing.T) {
		require.NoError(t, p.kube.CoreV1().ConfigMaps(p.ns).Delete(t.Context(), "prom-rulefiles-1", metav1.DeleteOptions{}))
		p.serves("1", map[string][]string{"a": {"a2"}, "b": {"b1"}})
		require.NoDirExists(t, filepath.Join(p.rulesDir, "prom-rulefiles-1"))
	})
	t.Run("configuration changed", func(t *testing.T) {
		p.setSecret(map[string][]byte{apiKey: p.config("2")})
		p.serves("2", map[string][]string{"a": {"a2"}, "b": {"b1"}})
	})
	t.Run("invalid gzip keeps the configuration", func(t *testing.T) {
		failed := p.metric("reloader_config_apply_operations_failed_total")
		p.setSecret(map[string][]byte{apiKey: {0x1f, 0x8b, 'n', 'o', 't'}})
		logged(t, p.sidecar, `gunzip secret api/prom-config key prometheus.yaml.gz: unexpected EOF`)
		require.Greater(t, p.metric("reloader_config_apply_operations_failed_total"), failed)
		require.Contains(t, readString(t, p.out), "version: 2\n")
		p.setSecret(map[string][]byte{apiKey: p.config("3")})
		p.serves("3", map[string][]string{"a": {"a2"}, "b": {"b1"}})
	})
	t.Run("rejected, then fixed", func(t *testing.T) {
		file := filepath.Join(p.rulesDir, "prom-rulefiles-0", "a.yaml")
		p.setConfigMap("prom-rulefiles-0", map[string]string{"a.yaml": "groups:\n- name: a\n  rules:\n  - record: a3\n    expr: vector(\n", "b.yaml": ruleFile("b", "b1")})
		logged(t, p.sidecar, `reload rejected: the last accepted state is kept, trying again later`)
		// What Prometheus runs is on disk again: a restart would load it.
		eventually(t, "restored rule file", func() error {
			if got := readString(t, file); got != ruleFile("a", "a2") {
				return fmt.Errorf("a.yaml holds %q", got)
			}
			return nil
		})
		// Tried again with backoff (from --retry-interval, 5s): once or more.
		require.GreaterOrEqual(t, p.metric("reloader_reloads_rejected_total"), 1.0)
		p.serves("3", map[string][]string{"a": {"a2"}, "b": {"b1"}})
		p.setConfigMap("prom-rulefiles-0", map[string]string{"a.yaml": ruleFile("a", "a4"), "b.yaml": ruleFile("b", "b1")})
		p.serves("3", map[string][]string{"a": {"a4"}, "b": {"b1"}})
		p.metricBecomes("reloader_last_reload_successful", 1)
	})
	t.Run("gzipped rule files", func(t *testing.T) {
		p.setGzipped("prom-rulefiles-1", map[string]string{"c.yaml": ruleFile("c", "c1")})
		p.serves("3", map[string][]string{"a": {"a4"}, "b": {"b1"}, "c": {"c1"}})
		file := filepath.Join(p.rulesDir, "prom-rulefiles-1", "c.yaml")
		require.Equal(t, ruleFile("c", "c1"), readString(t, file))
		require.NoFileExists(t, file+".gz")

		// A key that does not gunzip: its last good file stays, nothing
		// is reloaded.
		reloads, failed := p.metric("reloader_reloads_total"), p.metric("reloader_config_apply_operations_failed_total")
		p.setBinary("prom-rulefiles-1", map[string][]byte{"c.yaml.gz": gzipped(t, ruleFile("c", "c2"))[:20]})
		logged(t, p.sidecar, regexp.QuoteMeta(`configmap api/prom-rulefiles-1 key c.yaml.gz: gunzip: unexpected EOF (keeping the last good file)`))
		require.Greater(t, p.metric("reloader_config_apply_operations_failed_total"), failed)
		require.Equal(t, ruleFile("c", "c1"), readString(t, file))
		require.Equal(t, reloads, p.metric("reloader_reloads_total"))
		p.setGzipped("prom-rulefiles-1", map[string]string{"c.yaml": ruleFile("c", "c2")})
		p.serves("3", map[string][]string{"a": {"a4"}, "b": {"b1"}, "c": {"c2"}})
		require.NoError(t, p.kube.CoreV1().ConfigMaps(p.ns).Delete(t.Context(), "prom-rulefiles-1", metav1.DeleteOptions{}))
		p.serves("3", map[string][]string{"a": {"a4"}, "b": {"b1"}})
	})
	t.Run("burst of 50 edits", func(t *testing.T) {
		before := p.metric("reloader_reloads_total")
		for i := range 50 {
			p.setConfigMap("prom-rulefiles-0", map[string]string{"a.yaml": ruleFile("a", fmt.Sprintf("burst%d", i)), "b.yaml": ruleFile("b", "b1")})
		}
		p.serves("3", map[string][]string{"a": {"burst49"}, "b": {"b1"}})
		// One more change is the next reload: nothing else was pending.
		p.setConfigMap("prom-rulefiles-0", map[string]string{"a.yaml": ruleFile("a", "after"), "b.yaml": ruleFile("b", "b1")})
		p.serves("3", map[string][]string{"a": {"after"}, "b": {"b1"}})
		reloads := p.metric("reloader_reloads_total") - before
		require.LessOrEqual(t, reloads, 3.0, "50 edits in two reloads at most, then one for the last change")
	})
	t.Run("API server restarted", func(t *testing.T) {
		errs := p.metric(`reloader_api_errors_total{resource="configmaps"}`)
		cp.RestartAPIServer(t)
		// Changed as soon as the API server is back, before the sidecar's
		// watch comes back: it must arrive all the same.
		p.setConfigMap("prom-rulefiles-0", map[string]string{"a.yaml": ruleFile("a", "restarted"), "b.yaml": ruleFile("b", "b1")})
		p.serves("3", map[string][]string{"a": {"restarted"}, "b": {"b1"}})
		require.Greater(t, p.metric(`reloader_api_errors_total{resource="configmaps"}`), errs)
		p.metricBecomes(`reloader_api_watch_connected{resource="configmaps"}`, 1)
	})
	t.Run("API server down: the last state is served", func(t *testing.T) {
		cp.KillAPIServer(t)
		eventually(t, "ready, degraded", func() error {
			_, body, err := get(t.Context(), p.sidecarURL+"/-/ready")
			if err == nil && !bytes.HasPrefix(body, []byte("ready, degraded: API server unreachable for configmaps since ")) {
				err = fmt.Errorf("/-/ready: %s", body)
			}
			return err
		})
		require.Equal(t, 0.0, p.metric(`reloader_api_watch_connected{resource="configmaps"}`))
		p.serves("3", map[string][]string{"a": {"restarted"}, "b": {"b1"}})
		cp.StartAPIServer(t)
		p.setConfigMap("prom-rulefiles-0", map[string]string{"a.yaml": ruleFile("a", "back"), "b.yaml": ruleFile("b", "b1")})
		p.serves("3", map[string][]string{"a": {"back"}, "b": {"b1"}})
		eventually(t, "ready", func() error {
			_, body, err := get(t.Context(), p.sidecarURL+"/-/ready")
			if err == nil && string(body) != "ready\n" {
				err = fmt.Errorf("/-/ready: %s", body)
			}
			return err
		})
	})
}

func TestAPISourceForbidden(t *testing.T) {
	cp := controlplane.Start(t)
	p := newAPIPod(t, cp, "forbidden", false)
	p.setSecret(map[string][]byte{apiKey: p.config("1")})
	initc := start(t, "init-config-reloader", nil, ours("config-reloader"), append(p.apiArgs, "--watch-interval=0")...)
	// The error names the verb, the resource, the namespace and who asked.
	logged(t, initc, regexp.QuoteMeta(`list configmaps in namespace forbidden matching \"podreload.dev/rulefiles=prom\": API server answered 403: configmaps is forbidden: User \"system:serviceaccount:forbidden:reader\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"forbidden\"`))
	require.NoFileExists(t, p.out)
	initc.kill(t)
}
