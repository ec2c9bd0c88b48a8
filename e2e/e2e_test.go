package e2e

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// The signal trigger finds Prometheus by name among all processes: in
// signal mode each test runs Prometheus under a name of its own
// (uniqueExe), so that another Prometheus on the machine is no matter.

func TestConfigAndRules(t *testing.T) { testReloads(t, podOptions{}) }

func TestSignalReload(t *testing.T) { testReloads(t, podOptions{signal: true}) }

// testReloads changes the pod's volumes step by step, and checks after each
// kubelet swap that Prometheus runs exactly the new state.
func testReloads(t *testing.T, opts podOptions) {
	p := newPod(t, opts, state{replica: podName, version: "v1", rules: map[string][]string{"a": {"a_1"}}})
	reloads, err := p.sidecarMetric("reloader_reloads_total")
	require.NoError(t, err)
	for _, step := range []struct {
		name string
		want state
	}{
		{"change a rule", state{podName, "v1", map[string][]string{"a": {"a_2"}}}},
		{"add a rule file", state{podName, "v1", map[string][]string{"a": {"a_2"}, "b": {"b_3", "b_3_bis"}}}},
		{"remove a rule file", state{podName, "v1", map[string][]string{"b": {"b_3", "b_3_bis"}}}},
		{"change the external label", state{podName, "v4", map[string][]string{"b": {"b_3", "b_3_bis"}}}},
		{"swap both volumes", state{podName, "v5", map[string][]string{"c": {"c_5"}}}},
	} {
		t.Logf("step %q", step.name)
		swaps := p.apply(step.want)
		before := reloads
		reloads = p.waitFor(step.want, before)
		if swaps == 1 {
			require.Equal(t, before+1, reloads, "%s: reloads for one kubelet swap", step.name)
		}
	}
	require.NoError(t, ok(t.Context(), p.sidecarURL+"/-/ready"))
}

// TestInvalidConfigKeepsServing swaps in a configuration Prometheus rejects:
// Prometheus keeps running the previous one, the sidecar says so, and the
// next valid configuration is applied.
func TestInvalidConfigKeepsServing(t *testing.T) {
	t.Run("http", func(t *testing.T) { testInvalidConfig(t, podOptions{}) })
	t.Run("signal", func(t *testing.T) { testInvalidConfig(t, podOptions{signal: true}) })
}

func testInvalidConfig(t *testing.T, opts podOptions) {
	good := state{podName, "v1", map[string][]string{"a": {"a_1"}}}
	p := newPod(t, opts, good)

	p.setConfig("v2", "1x")
	eventually(t, "reload rejected", func() error {
		if v, err := p.sidecarMetric("reloader_last_reload_successful"); err != nil || v != 0 {
			return errors.Join(err, fmt.Errorf("sidecar: reloader_last_reload_successful is %v", v))
		}
		if v, err := p.sidecarMetric("reloader_reloads_failed_total"); err != nil || v < 1 {
			return errors.Join(err, fmt.Errorf("sidecar: reloader_reloads_failed_total is %v", v))
		}
		if v, err := metric(t.Context(), p.promURL+"/metrics", "prometheus_config_last_reload_successful"); err != nil || v != 0 {
			return errors.Join(err, fmt.Errorf("prometheus: prometheus_config_last_reload_successful is %v", v))
		}
		if success, err := p.reloadSuccessful(); err != nil || success {
			return errors.Join(err, errors.New("prometheus: runtimeinfo reports its last reload successful"))
		}
		// Only the HTTP answer explains why; a signal has none.
		if !opts.signal && !strings.Contains(p.sidecar.output(), `unknown unit \"x\" in duration \"1x\"`) {
			return errors.New("the sidecar has not logged Prometheus' error")
		}
		return nil
	})
	got, err := p.observe()
	require.NoError(t, err)
	require.Equal(t, good.String(), got.String(), "prometheus keeps its previous config")
	reloads, err := p.sidecarMetric("reloader_reloads_total")
	require.NoError(t, err)

	fixed := state{podName, "v3", good.rules}
	p.apply(fixed)
	p.waitFor(fixed, reloads)
	v, err := metric(t.Context(), p.promURL+"/metrics", "prometheus_config_last_reload_successful")
	require.NoError(t, err)
	require.Equal(t, 1.0, v)
	success, err := p.reloadSuccessful()
	require.NoError(t, err)
	require.True(t, success, "runtimeinfo reloadConfigSuccess")
}

// TestPodRestartOnRejectedConfig restarts the pod while its configuration
// is one Prometheus rejected: the config emptyDir is new, the data
// directory, which holds the reloaders' state, is kept. The init container
// writes the configuration Prometheus last accepted, not the rejected one,
// so Prometheus starts (it exits on a configuration it cannot parse), and
// the new sidecar reports the rejection it kept.
func TestPodRestartOnRejectedConfig(t *testing.T) {
	good := state{podName, "v1", map[string][]string{"a": {"a_1"}}}
	p := newPod(t, podOptions{stateDir: true}, good)
	p.setConfig("v2", "1x")
	eventually(t, "reload rejected", func() error {
		// Not reloads_failed: the first reload, sent before Prometheus
		// listened, failed already.
		if v, err := p.sidecarMetric("reloader_reloads_rejected_total"); err != nil || v < 1 {
			return errors.Join(err, fmt.Errorf("sidecar: reloader_reloads_rejected_total is %v", v))
		}
		return nil
	})

	// The pod goes: its containers end, its emptyDir with them.
	p.sidecar.kill(t)
	p.prom.kill(t)
	out := filepath.Dir(p.output)
	require.NoError(t, os.RemoveAll(out))
	require.NoError(t, os.Mkdir(out, 0o755))

	initc := start(t, "init-config-reloader", []string{"POD_NAME=" + podName}, ours("config-reloader"), p.initArgs...)
	require.NoError(t, initc.wait(t), "init container")
	rendered, err := os.ReadFile(p.output)
	require.NoError(t, err)
	require.Contains(t, string(rendered), "version: v1\n", "the configuration Prometheus accepted")
	require.NotContains(t, string(rendered), "1x")

	promBin, err := toolbin.Path("prometheus")
	require.NoError(t, err)
	addr := freeAddr(t)
	prom := start(t, "prometheus", nil, promBin, "--config.file="+p.output, "--web.listen-address="+addr, "--storage.tsdb.path="+p.data)
	eventually(t, "prometheus ready on the accepted configuration", func() error {
		if exit := prom.exited(); exit != nil {
			t.Fatalf("prometheus ended: %v", exit)
		}
		return ok(t.Context(), "http://"+addr+"/-/ready")
	})
}

// TestRandomizedSwaps swaps the two volumes in a random order at a random
// pace: whatever the timing, Prometheus ends up running the last state.
func TestRandomizedSwaps(t *testing.T) {
	seed := rand.Uint64()
	if s := os.Getenv("E2E_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "E2E_SEED")
	}
	t.Logf("seed %d (set E2E_SEED to repeat)", seed)
	for _, tc := range []struct {
		name string
		opts podOptions
	}{
		{"http", podOptions{}},
		{"signal", podOptions{signal: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, seed))
			want := state{podName, "v0", map[string][]string{"a": {"a_0"}}}
			p := newPod(t, tc.opts, want)
			reloads, err := p.sidecarMetric("reloader_reloads_total")
			require.NoError(t, err)
			for i := 1; i <= 50; i++ {
				if rng.IntN(2) == 0 {
					want.version = fmt.Sprintf("v%d", i)
					p.setConfig(want.version, "15s")
				} else {
					want.rules = map[string][]string{}
					for _, group := range []string{"a", "b", "c"} {
						if rng.IntN(2) == 0 {
							want.rules[group] = []string{fmt.Sprintf("%s_%d", group, i)}
						}
					}
					p.setRules(want.rules)
				}
				// The pace of the changes, not a wait for a condition.
				time.Sleep(time.Duration(rng.IntN(51)) * time.Millisecond)
			}
			p.waitFor(want, reloads)
		})
	}
}
