package amconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v2"

	"github.com/podreload/podreload/internal/testenv/toolbin"
	"github.com/podreload/podreload/internal/testenv/wait"
)

// TestAlertmanagerLoads checks that the Alertmanager of the image
// (bin/alertmanager, of Version) runs the configuration Generate builds
// for every case of the differential test: not only its parser, but what
// a reload does after it (the routing tree, each used receiver's
// integrations, their HTTP clients and TLS material).
func TestAlertmanagerLoads(t *testing.T) {
	bin, err := toolbin.Path("alertmanager")
	require.NoError(t, err)
	runsCases(t, bin, Version, func(string) bool { return true })
}

// TestAlertmanagerV025Loads checks that Alertmanager 0.25
// (bin/linux-<arch>/alertmanager-v0.25, the image of the node tests) runs
// the configuration Generate builds for the cases at Alertmanager 0.25 or
// older: the keys 0.25 does not know are dropped or their
// AlertmanagerConfig left out, as prometheus-operator does.
func TestAlertmanagerV025Loads(t *testing.T) {
	bin, err := toolbin.Path(filepath.Join("linux-"+runtime.GOARCH, "alertmanager-v0.25"))
	require.NoError(t, err)
	n := 0
	runsCases(t, bin, "0.25.0", func(v string) bool {
		m, ok := minor(v)
		if ok && m <= 25 {
			n++
		}
		return ok && m <= 25
	})
	require.GreaterOrEqual(t, n, 4, "the cases at Alertmanager 0.25 or older")
}

// runsCases starts bin (Alertmanager of version) and reloads it with the
// configuration Generate builds for each case whose spec.version keep
// accepts.
func runsCases(t *testing.T, bin, version string, keep func(string) bool) {
	t.Helper()
	am := startAlertmanager(t, bin, version)
	cases, err := filepath.Glob(filepath.Join("testdata", "operator", "*.yaml"))
	require.NoError(t, err)
	for _, c := range cases {
		in := caseInput(t, c)
		if !keep(in.Alertmanager.Spec.Version) {
			continue
		}
		res, err := Generate(t.Context(), in)
		require.NoError(t, err)
		am.load(t, c, res.Config)
	}
}

// runningAlertmanager is an Alertmanager process started by
// startAlertmanager, reading its configuration from path.
type runningAlertmanager struct {
	url, path string
}

// startAlertmanager starts bin, which must be Alertmanager of version, on
// a default configuration, and stops it when the test ends.
func startAlertmanager(t *testing.T, bin, version string) *runningAlertmanager {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), bin, "--version").CombinedOutput()
	require.NoError(t, err)
	require.Contains(t, string(out), "version "+version+" ", "%s is not of %s", bin, version)

	dir := t.TempDir()
	am := &runningAlertmanager{path: filepath.Join(dir, "alertmanager.yml")}
	require.NoError(t, os.WriteFile(am.path, []byte(defaultConfig), 0o600))
	log, err := os.Create(filepath.Join(dir, "log"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = log.Close() })
	// Port 0: the port is the one Alertmanager logs, none is reserved
	// ahead for it.
	cmd := exec.CommandContext(t.Context(), bin, "--config.file="+am.path, "--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:0", "--cluster.listen-address=")
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("alertmanager's log:\n%s", b)
		}
	})
	wait.Until(t, time.Minute, 50*time.Millisecond, "alertmanager ready", func() error {
		if am.url == "" {
			b, err := os.ReadFile(log.Name())
			if err != nil {
				return err
			}
			m := listeningRE.FindSubmatch(b)
			if m == nil {
				return errors.New("alertmanager logs no address yet")
			}
			am.url = "http://" + string(m[1])
		}
		_, err := request(http.MethodGet, am.url+"/-/ready")
		return err
	})
	return am
}

// load reloads the Alertmanager with the configuration cfg (of the case
// name), checks that it runs it and returns the configuration it shows,
// marshalled again by Alertmanager, its secrets hidden.
func (am *runningAlertmanager) load(t *testing.T, name string, cfg []byte) string {
	t.Helper()
	tmp := am.path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, cfg, 0o600))
	require.NoError(t, os.Rename(tmp, am.path))
	_, err := request(http.MethodPost, am.url+"/-/reload")
	require.NoError(t, err, "%s: alertmanager refuses the configuration:\n%s", name, cfg)
	body, err := request(http.MethodGet, am.url+"/api/v2/status")
	require.NoError(t, err)
	var status struct {
		Config struct {
			Original string `json:"original"`
		} `json:"config"`
	}
	require.NoError(t, json.Unmarshal(body, &status))
	// It runs ours when it has its receivers.
	require.Equal(t, receiverNames(t, cfg), receiverNames(t, []byte(status.Config.Original)), "%s: alertmanager does not run the configuration", name)
	return status.Config.Original
}

// listeningRE finds the address Alertmanager listens on in its log.
var listeningRE = regexp.MustCompile(`msg="Listening on" address=(127\.0\.0\.1:[0-9]+)`)

// request sends a request without a body and returns the response's body,
// or an error with it when the status is not 200.
func request(method, url string) ([]byte, error) {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// receiverNames returns the names of the receivers of a configuration.
func receiverNames(t *testing.T, b []byte) []string {
	t.Helper()
	var cfg struct {
		Receivers []struct {
			Name string `yaml:"name"`
		} `yaml:"receivers"`
	}
	require.NoError(t, yaml.Unmarshal(b, &cfg))
	var names []string
	for _, r := range cfg.Receivers {
		names = append(names, r.Name)
	}
	return names
}
