package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/podreload/podreload/internal/testenv/projector"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

const (
	// deadline bounds every wait for a condition.
	deadline = 20 * time.Second
	// binEnv names a directory holding prebuilt config-reloader,
	// rules-reloader and controller binaries to test instead of the
	// working tree's.
	binEnv  = "PODRELOAD_E2E_BIN"
	podName = "prom-0"
)

func TestMain(m *testing.M) {
	cleanup := os.Exit
	if os.Getenv(binEnv) == "" {
		dir, err := os.MkdirTemp("", "podreload-e2e")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		cleanup = func(code int) {
			_ = os.RemoveAll(dir)
			os.Exit(code)
		}
		build := exec.Command("go", "build", "-race", "-o", dir+"/", "github.com/podreload/podreload/cmd/config-reloader",
			"github.com/podreload/podreload/cmd/rules-reloader", "github.com/podreload/podreload/cmd/controller")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build the reloaders: %v\n%s", err, out)
			cleanup(1)
		}
		_ = os.Setenv(binEnv, dir)
	}
	// Ctrl-C reaches the processes in the terminal's process group, but
	// envtest starts kube-apiserver and etcd in groups of their own: on
	// SIGINT or SIGTERM, stop every child before exiting, so that nothing
	// outlives an interrupted test or demo.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		stopChildren()
		cleanup(130)
	}()
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent(), goleak.Cleanup(cleanup))
}

// stopChildren sends SIGTERM to the children of this process until none is
// left, for up to ten seconds, then kills those left.
func stopChildren() {
	children := func() []int {
		var pids []int
		stats, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, stat := range stats {
			b, err := os.ReadFile(stat)
			if err != nil {
				continue
			}
			// pid (comm) state ppid ...: comm may hold spaces and parentheses.
			f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
			if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(stat)))
				pids = append(pids, pid)
			}
		}
		return pids
	}
	// The tests keep running meanwhile and may start more: signal until
	// none is left.
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		pids := children()
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
		// Zombies count as children until reaped; reap what ended.
		var status syscall.WaitStatus
		if pid, _ := syscall.Wait4(-1, &status, syscall.WNOHANG, nil); pid <= 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, pid := range children() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// ours returns the path of one of the reloaders under test.
func ours(name string) string { return filepath.Join(os.Getenv(binEnv), name) }

// eventually calls cond until it returns nil, failing the test with cond's
// last error when that takes longer than deadline.
func eventually(t testing.TB, what string, cond func() error) {
	t.Helper()
	end := time.Now().Add(deadline)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not within %s: %v", what, deadline, err)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: %v", what, t.Context().Err())
		case <-tick.C:
		}
	}
}

// freeAddr returns a loopback address with a port nobody listens on.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// process is a child process whose output goes to a log file, printed when
// the test fails. It is stopped (SIGTERM) and waited for at test cleanup.
type process struct {
	name, log string
	cmd       *exec.Cmd
	done      chan struct{}
	err       error // set before done is closed
	killed    bool
}

func start(t testing.TB, name string, env []string, bin string, args ...string) *process {
	t.Helper()
	dir := t.TempDir()
	p := &process{name: name, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	f, err := os.Create(p.log)
	require.NoError(t, err)
	defer f.Close() // The child has its own descriptor.
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = deadline
	require.NoError(t, cmd.Start(), "start %s", name)
	p.cmd = cmd
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		<-p.done // t.Context is canceled before cleanups: the process got SIGTERM.
		if p.err != nil && !errors.Is(p.err, context.Canceled) && !p.killed {
			t.Errorf("%s did not stop cleanly: %v", name, p.err)
		}
		if t.Failed() {
			t.Logf("%s (%s) log:\n%s", name, strings.Join(cmd.Args, " "), p.output())
		}
	})
	return p
}

// kill kills the process, as a crash would, and waits for it to end.
func (p *process) kill(t testing.TB) {
	t.Helper()
	p.killed = true
	require.NoError(t, p.cmd.Process.Kill())
	<-p.done
}

func (p *process) output() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// exited returns an error when the process has ended.
func (p *process) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited: %v", p.name, p.err) //nolint:errorlint // p.err is nil after a clean exit, which %w cannot print.
	default:
		return nil
	}
}

// wait waits for the process to end on its own and returns its exit error.
func (p *process) wait(t testing.TB) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(deadline):
		t.Fatalf("%s still running after %s", p.name, deadline)
		return nil
	}
}

// refused waits for the process to end on its own with an error, as a
// refusal is meant to end it, and returns its log; cleanup does not report
// that exit.
func (p *process) refused(t testing.TB) string {
	t.Helper()
	err := p.wait(t)
	require.Error(t, err, "%s exited cleanly:\n%s", p.name, p.output())
	p.killed = true // Expected: not an unclean stop.
	return p.output()
}

// get returns the status and body of a GET of url.
func get(ctx context.Context, url string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// ok returns nil when url answers 200.
func ok(ctx context.Context, url string) error {
	code, body, err := get(ctx, url)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("GET %s: status %d: %s", url, code, bytes.TrimSpace(body))
	}
	return err
}

// getRawJSON decodes the JSON body of a GET of url.
func getRawJSON(ctx context.Context, url string, v any) error {
	code, body, err := get(ctx, url)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s: status %d: %s", url, code, bytes.TrimSpace(body))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}

// getJSON decodes the data field of a Prometheus API response.
func getJSON(ctx context.Context, url string, data any) error {
	var resp struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
	}
	if err := getRawJSON(ctx, url, &resp); err != nil {
		return err
	}
	if resp.Status != "success" {
		return fmt.Errorf("GET %s: status %q", url, resp.Status)
	}
	return json.Unmarshal(resp.Data, data)
}

// metric returns the value of an unlabelled sample in a /metrics page.
func metric(ctx context.Context, url, name string) (float64, error) {
	code, body, err := get(ctx, url)
	if err != nil {
		return 0, err
	}
	if code != http.StatusOK {
		return 0, fmt.Errorf("GET %s: status %d", url, code)
	}
	for line := range strings.Lines(string(body)) {
		if v, found := strings.CutPrefix(line, name+" "); found {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("%s has no sample %s", url, name)
}

// state is what Prometheus runs: its external labels and its rules.
type state struct {
	replica, version string
	// rules maps a group, named after its rule file, to its recording rules.
	rules map[string][]string
}

func (s state) String() string {
	return fmt.Sprintf("replica=%s version=%s rules=%v", s.replica, s.version, s.rules)
}

// pod is a Prometheus pod: a Secret-like config volume holding
// prometheus.yaml.gz, a ConfigMap-like rules volume, an emptyDir for the
// rendered config, Prometheus and the config-reloader sidecar.
type pod struct {
	t                     testing.TB
	configVol, rulesVol   string
	output                string
	configProj, rulesProj *projector.Projector
	cur                   state
	interval              string
	prom, sidecar         *process
	promURL, sidecarURL   string
	// data is Prometheus' TSDB directory; initArgs, the init container's
	// arguments.
	data     string
	initArgs []string
}

// podOptions tell how the sidecar reloads Prometheus.
type podOptions struct {
	signal bool
	// stateDir keeps the reloaders' accepted state on Prometheus' data
	// directory, as the controller does on a persistent volume, where it
	// outlives the emptyDir of the rendered config.
	stateDir bool
}

// newPod projects initial into the volumes, renders the config as the init
// container does, then starts Prometheus and the sidecar and waits until
// both are ready.
func newPod(t *testing.T, opts podOptions, initial state) *pod {
	t.Helper()
	root := t.TempDir()
	p := &pod{
		t:         t,
		configVol: filepath.Join(root, "config"),
		rulesVol:  filepath.Join(root, "rules"),
		output:    filepath.Join(root, "config-out", "prometheus.env.yaml"),
		cur:       state{replica: podName},
	}
	require.NoError(t, os.Mkdir(filepath.Dir(p.output), 0o755)) // An emptyDir.
	// Projectors are closed (stdin EOF) at cleanup, after t.Context is done.
	var err error
	p.configProj, err = projector.Start(context.Background(), p.configVol, filepath.Join(root, "scratch-config"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.configProj.Close()) })
	p.rulesProj, err = projector.Start(context.Background(), p.rulesVol, filepath.Join(root, "scratch-rules"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.rulesProj.Close()) })
	p.setConfig(initial.version, "15s")
	p.setRules(initial.rules)

	reloader := ours("config-reloader")
	env := []string{"POD_NAME=" + podName}
	configArgs := []string{"--config-file=" + filepath.Join(p.configVol, "prometheus.yaml.gz"), "--config-envsubst-file=" + p.output}
	p.data = filepath.Join(root, "data")
	if opts.stateDir {
		configArgs = append(configArgs, "--state-dir="+filepath.Join(p.data, ".podreload-reloader"))
	}
	p.initArgs = slices.Concat(configArgs, []string{"--watch-interval=0"})

	// Init container.
	initc := start(t, "init-config-reloader", env, reloader, p.initArgs...)
	require.NoError(t, initc.wait(t), "init container")
	rendered, err := os.ReadFile(p.output)
	require.NoError(t, err)
	require.Contains(t, string(rendered), "replica: "+podName+"\n")
	require.NotContains(t, string(rendered), "$(POD_NAME)")

	promBin, err := toolbin.Path("prometheus")
	require.NoError(t, err)
	promAddr, sidecarAddr := freeAddr(t), freeAddr(t)
	p.promURL, p.sidecarURL = "http://"+promAddr, "http://"+sidecarAddr
	promArgs := []string{"--config.file=" + p.output, "--web.listen-address=" + promAddr, "--storage.tsdb.path=" + p.data}
	sidecarArgs := slices.Concat(configArgs, []string{"--watched-dir=" + p.rulesVol, "--listen-address=" + sidecarAddr, "--log-level=debug"})
	if opts.signal {
		// The signal trigger picks the process by name and refuses to
		// choose between several: Prometheus runs under a name of its own.
		sighupDefault(t)
		promBin = uniqueExe(t, promBin)
		sidecarArgs = append(sidecarArgs, "--reload-method=signal", "--process-executable-name="+filepath.Base(promBin),
			"--runtimeinfo-url="+p.promURL+"/api/v1/status/runtimeinfo")
	} else {
		promArgs = append(promArgs, "--web.enable-lifecycle")
		sidecarArgs = append(sidecarArgs, "--reload-url="+p.promURL+"/-/reload")
	}
	// As in a pod, Prometheus and the sidecar start together: the sidecar
	// must neither fail nor kill a Prometheus that is still starting.
	p.prom = start(t, "prometheus", nil, promBin, promArgs...)
	p.sidecar = start(t, "config-reloader", env, reloader, sidecarArgs...)
	eventually(t, "prometheus ready", func() error { return p.alive(ok(t.Context(), p.promURL+"/-/ready")) })
	p.waitFor(initial, 0)
	return p
}

// reloadSuccessful returns what Prometheus' runtime information says of its
// last reload.
func (p *pod) reloadSuccessful() (bool, error) {
	var info struct {
		ReloadConfigSuccess bool `json:"reloadConfigSuccess"`
	}
	err := getJSON(p.t.Context(), p.promURL+"/api/v1/status/runtimeinfo", &info)
	return info.ReloadConfigSuccess, err
}

// alive returns err, failing the test at once if Prometheus or the sidecar
// has ended.
func (p *pod) alive(err error) error {
	for _, proc := range []*process{p.prom, p.sidecar} {
		if proc == nil {
			continue
		}
		if exit := proc.exited(); exit != nil {
			p.t.Fatal(exit)
		}
	}
	return err
}

// setConfig projects a gzipped configuration into the config volume.
func (p *pod) setConfig(version, interval string) {
	p.t.Helper()
	cfg := fmt.Sprintf(`global:
  scrape_interval: %s
  external_labels:
    replica: $(POD_NAME)
    version: %s
rule_files:
- %s/*.yaml
`, interval, version, p.rulesVol)
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, err := w.Write([]byte(cfg))
	require.NoError(p.t, err)
	require.NoError(p.t, w.Close())
	_, err = p.configProj.Project(map[string]string{"prometheus.yaml.gz": gz.String()})
	require.NoError(p.t, err)
	p.cur.version, p.interval = version, interval
}

// setRules projects one rule file per group into the rules volume.
func (p *pod) setRules(rules map[string][]string) {
	p.t.Helper()
	files := map[string]string{}
	for group, names := range rules {
		var b strings.Builder
		fmt.Fprintf(&b, "groups:\n- name: %s\n  rules:\n", group)
		for _, name := range names {
			fmt.Fprintf(&b, "  - record: %s\n    expr: vector(1)\n", name)
		}
		files[group+".yaml"] = b.String()
	}
	_, err := p.rulesProj.Project(files)
	require.NoError(p.t, err)
	p.cur.rules = rules
}

// apply projects the volumes whose content differs from want and returns
// how many it projected.
func (p *pod) apply(want state) int {
	p.t.Helper()
	n := 0
	if want.version != p.cur.version || p.interval != "15s" {
		p.setConfig(want.version, "15s")
		n++
	}
	if fmt.Sprint(want.rules) != fmt.Sprint(p.cur.rules) {
		p.setRules(want.rules)
		n++
	}
	return n
}

// observe asks Prometheus what it runs.
func (p *pod) observe() (state, error) {
	ctx := p.t.Context()
	var cfg struct {
		YAML string `json:"yaml"`
	}
	if err := getJSON(ctx, p.promURL+"/api/v1/status/config", &cfg); err != nil {
		return state{}, err
	}
	labels := externalLabels(cfg.YAML)
	s := state{replica: labels["replica"], version: labels["version"], rules: map[string][]string{}}
	var rules struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Name string `json:"name"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := getJSON(ctx, p.promURL+"/api/v1/rules", &rules); err != nil {
		return state{}, err
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			s.rules[g.Name] = append(s.rules[g.Name], r.Name)
		}
	}
	return s, nil
}

// externalLabels parses global.external_labels out of the YAML Prometheus
// serves at /api/v1/status/config.
func externalLabels(yaml string) map[string]string {
	labels := map[string]string{}
	lines := strings.Split(yaml, "\n")
	i := slices.Index(lines, "  external_labels:")
	if i < 0 {
		return labels
	}
	for _, l := range lines[i+1:] {
		if !strings.HasPrefix(l, "    ") {
			break
		}
		k, v, _ := strings.Cut(strings.TrimSpace(l), ": ")
		labels[k] = strings.Trim(v, `"'`)
	}
	return labels
}

// sidecarMetric returns a sample of the sidecar's /metrics.
func (p *pod) sidecarMetric(name string) (float64, error) {
	return metric(p.t.Context(), p.sidecarURL+"/metrics", name)
}

// waitFor waits until Prometheus runs want, the sidecar has counted more
// than after reloads and reports its last reload successful, and returns
// the reload count.
func (p *pod) waitFor(want state, after float64) float64 {
	p.t.Helper()
	var reloads float64
	eventually(p.t, "prometheus runs "+want.String(), func() error {
		got, err := p.observe()
		if err = p.alive(err); err != nil {
			return err
		}
		if got.String() != want.String() {
			return fmt.Errorf("prometheus runs %s", got)
		}
		if reloads, err = p.sidecarMetric("reloader_reloads_total"); err != nil {
			return err
		}
		if reloads <= after {
			return fmt.Errorf("reloader_reloads_total is %v, want more than %v", reloads, after)
		}
		if v, err := p.sidecarMetric("reloader_last_reload_successful"); err != nil || v != 1 {
			return errors.Join(err, fmt.Errorf("reloader_last_reload_successful is %v", v))
		}
		return nil
	})
	return reloads
}
