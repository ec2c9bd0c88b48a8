package e2e

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// uniqueExe returns a link to bin under an executable name no other
// process has, for a signal trigger to find the process it starts by
// (--process-executable-name): another Prometheus or Alertmanager on the
// machine (e2e/node's) is then never signalled, and none stops the trigger
// from choosing.
func uniqueExe(t *testing.T, bin string) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), fmt.Sprintf("%s-e2e-%d-%d", filepath.Base(bin), os.Getpid(), time.Now().UnixNano()%1e9))
	require.NoError(t, os.Symlink(bin, exe))
	return exe
}

// sighupDefault makes the processes the test starts begin with SIGHUP's
// default action, whatever this process inherited (a test run under nohup
// ignores it, and so would its children): a signal sent before the process
// handles it ends it, as in a pod, rather than a test passing for the
// disposition it inherited. A child inherits an ignored signal, but not a
// handler: while this process handles SIGHUP, its children start with the
// default action.
func sighupDefault(t *testing.T) {
	hups := make(chan os.Signal, 1)
	signal.Notify(hups, syscall.SIGHUP)
	t.Cleanup(func() { signal.Stop(hups) })
}

// sigPod is a pod whose sidecar reloads Prometheus with SIGHUP, found by an
// executable name no other process has (uniqueExe), started with SIGHUP's
// default action (sighupDefault).
type sigPod struct {
	t                   *testing.T
	in, out, data       string // the configuration as stored, as rendered, Prometheus' data dir
	promAddr            string // where Prometheus listens, the same after a restart
	exe                 string // Prometheus under its unique name
	stateArgs           []string
	prom, sidecar       *process
	promURL, sidecarURL string
}

// sigPodOptions tell how the pod starts.
type sigPodOptions struct {
	// stateDir keeps the reloaders' state on Prometheus' data dir,
	// rather than beside the rendered configuration.
	stateDir bool
	// retryInterval is the sidecar's --retry-interval.
	retryInterval string
}

// newSigPod renders version as the init container does and starts
// Prometheus on it; the sidecar is started by startSidecar.
func newSigPod(t *testing.T, opts sigPodOptions, version string) *sigPod {
	t.Helper()
	sighupDefault(t)
	root := t.TempDir()
	p := &sigPod{
		t:    t,
		in:   filepath.Join(root, "config", "prometheus.yaml"),
		out:  filepath.Join(root, "config-out", "prometheus.env.yaml"),
		data: filepath.Join(root, "data"),
	}
	for _, dir := range []string{filepath.Dir(p.in), filepath.Dir(p.out)} {
		require.NoError(t, os.MkdirAll(dir, 0o755))
	}
	prom, err := toolbin.Path("prometheus")
	require.NoError(t, err)
	p.exe = uniqueExe(t, prom)
	if opts.stateDir {
		p.stateArgs = []string{"--state-dir=" + filepath.Join(p.data, ".podreload-reloader")}
	}
	p.setConfig(version, "15s")
	p.initContainer()
	p.startPrometheus()
	return p
}

// initContainer renders the configuration once, as the pod's init
// container does.
func (p *sigPod) initContainer() {
	p.t.Helper()
	args := append([]string{"--config-file=" + p.in, "--config-envsubst-file=" + p.out, "--watch-interval=0"}, p.stateArgs...)
	init := start(p.t, "init-config-reloader", nil, ours("config-reloader"), args...)
	require.NoError(p.t, init.wait(p.t), "init container")
}

// startPrometheus starts Prometheus on the rendered configuration and
// waits until it is ready.
func (p *sigPod) startPrometheus() {
	p.t.Helper()
	if p.promAddr == "" {
		p.promAddr = freeAddr(p.t)
	}
	p.promURL = "http://" + p.promAddr
	p.prom = start(p.t, "prometheus", nil, p.exe, "--config.file="+p.out, "--web.listen-address="+p.promAddr, "--storage.tsdb.path="+p.data)
	eventually(p.t, "prometheus ready", func() error {
		if exit := p.prom.exited(); exit != nil {
			p.t.Fatalf("prometheus: %v", exit)
		}
		return ok(p.t.Context(), p.promURL+"/-/ready")
	})
}

// startSidecar starts the sidecar, reloading Prometheus by signal.
func (p *sigPod) startSidecar(opts sigPodOptions) {
	p.t.Helper()
	addr := freeAddr(p.t)
	p.sidecarURL = "http://" + addr
	args := append([]string{"--config-file=" + p.in, "--config-envsubst-file=" + p.out, "--listen-address=" + addr, "--log-level=debug",
		"--reload-method=signal", "--process-executable-name=" + filepath.Base(p.exe), "--runtimeinfo-url=" + p.promURL + "/api/v1/status/runtimeinfo",
		"--retry-interval=" + opts.retryInterval, "--reload-timeout=30s"}, p.stateArgs...)
	p.sidecar = start(p.t, "config-reloader", nil, ours("config-reloader"), args...)
	// What a child of this process inherits: SIGHUP not ignored.
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.sidecar.cmd.Process.Pid))
	require.NoError(p.t, err)
	for line := range strings.Lines(string(status)) {
		if mask, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			v, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64)
			require.NoError(p.t, err)
			require.Zero(p.t, v&(1<<(syscall.SIGHUP-1)), "children ignore SIGHUP")
		}
	}
}

// setConfig stores a configuration whose external label version is
// version, atomically, as a volume swap does.
func (p *sigPod) setConfig(version, interval string) {
	p.t.Helper()
	cfg := fmt.Sprintf("global:\n  scrape_interval: %s\n  external_labels:\n    version: %s\n", interval, version)
	tmp := p.in + ".tmp"
	require.NoError(p.t, os.WriteFile(tmp, []byte(cfg), 0o644))
	require.NoError(p.t, os.Rename(tmp, p.in))
}

// version returns the external label version of what Prometheus runs.
func (p *sigPod) version() (string, error) {
	var cfg struct {
		YAML string `json:"yaml"`
	}
	if err := getJSON(p.t.Context(), p.promURL+"/api/v1/status/config", &cfg); err != nil {
		return "", err
	}
	return externalLabels(cfg.YAML)["version"], nil
}

// waitVersion waits until Prometheus runs version.
func (p *sigPod) waitVersion(version string) {
	p.t.Helper()
	eventually(p.t, "prometheus runs "+version, func() error {
		if exit := p.prom.exited(); exit != nil {
			p.t.Fatalf("prometheus: %v", exit)
		}
		got, err := p.version()
		if err == nil && got != version {
			err = fmt.Errorf("prometheus runs %q", got)
		}
		return err
	})
}

// waitMetric waits until the sidecar's metric name is at least min.
func (p *sigPod) waitMetric(name string, minimum float64) {
	p.t.Helper()
	eventually(p.t, fmt.Sprintf("%s at least %v", name, minimum), func() error {
		v, err := metric(p.t.Context(), p.sidecarURL+"/metrics", name)
		if err == nil && v < minimum {
			err = fmt.Errorf("%s is %v", name, v)
		}
		return err
	})
}

// waitReady waits until the sidecar's /-/ready answers 200 with a body
// the regexp pattern matches.
func (p *sigPod) waitReady(pattern string) {
	p.t.Helper()
	re := regexp.MustCompile(pattern)
	eventually(p.t, "/-/ready matching "+pattern, func() error {
		code, body, err := get(p.t.Context(), p.sidecarURL+"/-/ready")
		if err == nil && (code != 200 || !re.Match(body)) {
			err = fmt.Errorf("/-/ready: %d %s", code, body)
		}
		return err
	})
}

// restartPrometheus kills Prometheus and starts it again on what the
// rendered configuration holds now.
func (p *sigPod) restartPrometheus() {
	p.t.Helper()
	p.prom.kill(p.t)
	p.startPrometheus()
}

// sample is a read of the rendered configuration.
type sample struct {
	at       time.Time
	rejected bool
}

// sampler reads the rendered configuration every 2 ms until stopped, and
// tells which reads held the rejected content (its marker).
type sampler struct {
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	samples []sample
}

func startSampler(t *testing.T, path, marker string) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			b, err := os.ReadFile(path)
			s.mu.Lock()
			s.samples = append(s.samples, sample{at: time.Now(), rejected: err == nil && strings.Contains(string(b), marker)})
			s.mu.Unlock()
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { s.end() })
	return s
}

// end stops the sampler and returns its samples.
func (s *sampler) end() []sample {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples
}

// TestSignalRejectedNeverOnDisk has Prometheus, reloaded by signal, reject
// a configuration: from the moment the sidecar counts the rejection, the
// rendered configuration never holds it (a reader samples it every 2 ms);
// Prometheus restarted meanwhile starts on the configuration it accepted;
// a fix is loaded at once.
func TestSignalRejectedNeverOnDisk(t *testing.T) {
	opts := sigPodOptions{retryInterval: "1m"} // No retry while the file is sampled.
	p := newSigPod(t, opts, "accepted")
	p.startSidecar(opts)
	p.waitMetric("reloader_last_reload_successful", 1)

	s := startSampler(t, p.out, "1x")
	written := time.Now()
	p.setConfig("rejected", "1x")
	p.waitMetric("reloader_reloads_rejected_total", 1)
	known := time.Now()
	p.waitVersion("accepted")
	p.waitReady(`^ready, degraded: the process rejected the current content at [0-9TZ:-]+: confirm through ` + regexp.QuoteMeta(p.promURL) +
		`/api/v1/status/runtimeinfo: process reports that the reload failed; the last accepted state is served, written back\n$`)

	// Prometheus restarted during the retry's wait: it starts on what it accepted.
	p.restartPrometheus()
	p.waitVersion("accepted")

	fixed := time.Now()
	p.setConfig("fixed", "15s")
	p.waitVersion("fixed")
	loaded := time.Now()
	p.waitMetric("reloader_last_reload_successful", 1)
	samples := s.end()

	var after, onDisk int
	var firstBad, lastBad time.Time
	for _, smp := range samples {
		if smp.rejected && firstBad.IsZero() {
			firstBad = smp.at
		}
		if smp.rejected {
			lastBad = smp.at
		}
		if smp.at.After(known) && smp.at.Before(fixed) {
			after++
			if smp.rejected {
				onDisk++
			}
		}
	}
	require.Positive(t, after, "samples after the rejection was known")
	require.Zero(t, onDisk, "of %d samples after the rejection was known, %d held the rejected configuration", after, onDisk)
	t.Logf("figures: rejected configuration written %s, counted rejected %s later; on disk from the sample at %s to the one at %s (%s); after the rejection was known: %d of %d samples held it; the fix loaded %s after it was stored",
		written.Format("15:04:05.000"), known.Sub(written).Round(time.Millisecond), firstBad.Format("15:04:05.000"), lastBad.Format("15:04:05.000"),
		lastBad.Sub(firstBad).Round(time.Millisecond), onDisk, after, loaded.Sub(fixed).Round(time.Millisecond))
}

// TestSignalRejectedRetries has Prometheus reject a configuration and the
// sidecar retry it quickly: each retry is known rejected as soon as
// Prometheus has tried it (a failure after a failure shows in Prometheus'
// notifications), not after --reload-timeout (30 s), and the accepted
// configuration goes back on disk after each.
func TestSignalRejectedRetries(t *testing.T) {
	opts := sigPodOptions{retryInterval: "100ms"}
	p := newSigPod(t, opts, "accepted")
	p.startSidecar(opts)
	p.waitMetric("reloader_last_reload_successful", 1)
	s := startSampler(t, p.out, "1x")
	p.setConfig("rejected", "1x")
	// The first rejection and three retries, well within one
	// --reload-timeout: each was told rejected, not timed out.
	p.waitMetric("reloader_reloads_rejected_total", 4)
	samples := s.end()
	p.waitVersion("accepted")
	b, err := os.ReadFile(p.out)
	require.NoError(t, err)
	require.Contains(t, string(b), "version: accepted")
	require.NotContains(t, p.sidecar.output(), "has not reloaded since the signal")
	bad := 0
	for _, smp := range samples {
		if smp.rejected {
			bad++
		}
	}
	t.Logf("figures: with retries every 100 ms doubling, %d of %d samples (every 2 ms) held the rejected configuration, each within a retry", bad, len(samples))
}

// TestFirstStartRejected starts a sidecar that keeps no state (a new pod,
// a state dir lost, an upgrade) while Prometheus runs the configuration
// rendered by the init container and the input has changed since to one
// Prometheus rejects: the first reload is refused, the rendered
// configuration Prometheus runs is written back, and a restart of
// Prometheus starts on it; with the state dir on the data volume, so does
// a restart of the pod.
func TestFirstStartRejected(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts sigPodOptions
	}{
		{"without a state dir", sigPodOptions{retryInterval: "1m"}},
		{"with an empty state dir", sigPodOptions{retryInterval: "1m", stateDir: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newSigPod(t, tc.opts, "running")
			p.setConfig("rejected", "1x")
			p.startSidecar(tc.opts)
			p.waitMetric("reloader_reloads_rejected_total", 1)
			b, err := os.ReadFile(p.out)
			require.NoError(t, err)
			require.Contains(t, string(b), "version: running")
			require.Contains(t, p.sidecar.output(), "no accepted state kept: what the outputs hold is taken as accepted until a reload says otherwise")
			p.waitReady(`; the last accepted state is served, written back\n$`)
			p.restartPrometheus()
			p.waitVersion("running")
			if !tc.opts.stateDir {
				return
			}
			// The pod again: the rendered configuration's emptyDir is new.
			p.sidecar.kill(t)
			p.prom.kill(t)
			require.NoError(t, os.RemoveAll(filepath.Dir(p.out)))
			require.NoError(t, os.Mkdir(filepath.Dir(p.out), 0o755))
			p.initContainer()
			b, err = os.ReadFile(p.out)
			require.NoError(t, err)
			require.Contains(t, string(b), "version: running")
			p.startPrometheus()
			p.waitVersion("running")
		})
	}
}

// TestRestartWithEmptyInputHeld restarts the sidecar while its input has
// been emptied (whitespace only): the input is held back, Prometheus keeps
// the configuration it runs, and /-/ready says so and what is served
// rather than "no reload has succeeded yet".
func TestRestartWithEmptyInputHeld(t *testing.T) {
	opts := sigPodOptions{retryInterval: "1s"}
	p := newSigPod(t, opts, "kept")
	p.startSidecar(opts)
	p.waitMetric("reloader_last_reload_successful", 1)
	p.sidecar.kill(t)
	require.NoError(t, os.WriteFile(p.in+".tmp", []byte("\n  \n"), 0o644))
	require.NoError(t, os.Rename(p.in+".tmp", p.in))
	p.startSidecar(opts)
	p.waitReady(`^` + regexp.QuoteMeta("ready, degraded: read config: "+p.in+" holds nothing but whitespace (4 bytes) where the last configuration rendered had ") +
		`[0-9]+ bytes` + regexp.QuoteMeta(": held back as a truncated or emptied input: the configuration "+p.out+" held at start is served\n") + `$`)
	p.waitMetric(`reloader_inputs_held_back{reason="empty"}`, 1)
	p.waitVersion("kept")
	b, err := os.ReadFile(p.out)
	require.NoError(t, err)
	require.Contains(t, string(b), "version: kept")
}

// TestBlankInputsHeldBack empties, with whitespace, the configuration and
// then a rule file of a real Prometheus' rules dir: each is held back, its
// last version kept, and Prometheus keeps its targets' configuration and
// its rules; /-/ready says what is held back and served.
func TestBlankInputsHeldBack(t *testing.T) {
	root := t.TempDir()
	in, rulesIn := filepath.Join(root, "config", "prometheus.yaml"), filepath.Join(root, "rules-in", "rules")
	out, rulesDir := filepath.Join(root, "config-out", "prometheus.env.yaml"), filepath.Join(root, "rules-out")
	for _, dir := range []string{filepath.Dir(in), rulesIn} {
		require.NoError(t, os.MkdirAll(dir, 0o755))
	}
	store := func(path, content string) {
		require.NoError(t, os.WriteFile(path+".tmp", []byte(content), 0o644))
		require.NoError(t, os.Rename(path+".tmp", path))
	}
	config := "global:\n  external_labels:\n    version: kept\nrule_files:\n- " + rulesDir + "/rules/*.yaml\n"
	store(in, config)
	store(filepath.Join(rulesIn, "a.yaml"), "groups:\n- name: a\n  rules:\n  - record: a_1\n    expr: vector(1)\n")
	args := []string{"--config-file=" + in, "--config-envsubst-file=" + out, "--rules-input-dir=" + rulesIn, "--rules-dir=" + rulesDir}
	require.NoError(t, start(t, "init-config-reloader", nil, ours("config-reloader"), append(args, "--watch-interval=0")...).wait(t))
	promBin, err := toolbin.Path("prometheus")
	require.NoError(t, err)
	promAddr, sidecarAddr := freeAddr(t), freeAddr(t)
	p := &sigPod{t: t, promURL: "http://" + promAddr, sidecarURL: "http://" + sidecarAddr}
	p.prom = start(t, "prometheus", nil, promBin, "--config.file="+out, "--web.listen-address="+promAddr,
		"--storage.tsdb.path="+filepath.Join(root, "data"), "--web.enable-lifecycle")
	p.sidecar = start(t, "config-reloader", nil, ours("config-reloader"), append(args, "--listen-address="+sidecarAddr,
		"--reload-url="+p.promURL+"/-/reload", "--retry-interval=1s")...)
	p.waitMetric("reloader_last_reload_successful", 1)
	rules := func() error {
		var got struct {
			Groups []struct {
				Name string `json:"name"`
			} `json:"groups"`
		}
		if err := getJSON(t.Context(), p.promURL+"/api/v1/rules", &got); err != nil {
			return err
		}
		if len(got.Groups) != 1 || got.Groups[0].Name != "a" {
			return fmt.Errorf("prometheus runs the rule groups %+v", got.Groups)
		}
		return nil
	}
	eventually(t, "prometheus runs group a", rules)

	store(in, "\n \n")
	p.waitReady(`^ready, degraded: read config: ` + regexp.QuoteMeta(in+" holds nothing but whitespace (3 bytes) where the last configuration rendered had ") +
		`[0-9]+ bytes: held back as a truncated or emptied input: the configuration last rendered is served\n$`)
	store(filepath.Join(rulesIn, "a.yaml"), "  \n")
	store(in, strings.Replace(config, "kept", "next", 1))
	p.waitVersion("next")
	p.waitReady(`^ready, degraded: ` + regexp.QuoteMeta(filepath.Join(rulesIn, "a.yaml")+": holds nothing but whitespace (3 bytes) where its last version had content: held back as a truncated or emptied input (keeping the last good file)") + `\n$`)
	p.waitMetric(`reloader_inputs_held_back{reason="empty"}`, 1)
	require.NoError(t, rules())
	b, err := os.ReadFile(filepath.Join(rulesDir, "rules", "a.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(b), "record: a_1")
}
