package reloader

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/internal/testenv/projector"
)

// splitConfig is a main configuration naming parts, each by name and
// content as stored.
func splitConfig(main string, parts ...[2]string) string {
	var b []byte
	for _, p := range parts {
		b = contract.AppendPartDirective(b, p[0], []byte(p[1]))
	}
	return string(b) + main
}

// TestParts splits a configuration into parts projected by the kubelet
// into their own volume, apart from the main configuration's: every part
// is rendered as the main file (gunzip, expansion) into PartsOutDir, no
// reload happens while a part is not the one the configuration names,
// the parts no longer named are removed, and the content hash is the
// main configuration's.
func TestParts(t *testing.T) {
	s := newSetup(t)
	partsDir := filepath.Join(filepath.Dir(s.cfgDir), "config-parts")
	outParts := filepath.Join(filepath.Dir(s.out), contract.PartsOutDir)
	s.opts.PartsDir = partsDir
	var (
		mu      sync.Mutex
		applied string
	)
	s.opts.OnApplied = func(a Applied) {
		mu.Lock()
		defer mu.Unlock()
		applied = a.Hash
	}
	s.ep = newEndpoint(t, func() string { return readFile(s.out) + "|" + readDir(outParts) })
	s.opts.Trigger = s.ep.trigger(5e9)
	cfg, parts := projector.Open(t, s.cfgDir), projector.Open(t, partsDir)

	p1, p2 := gz(t, "jobs: $(POD_NAME)-1\n"), "jobs: 2\n"
	main1 := gz(t, splitConfig("main: 1\n", [2]string{"cfg-1", p1}, [2]string{"cfg-2", p2}))
	parts.Set(t, map[string]string{"cfg-1": p1, "cfg-2": p2})
	cfg.Set(t, map[string]string{"prometheus.yaml.gz": main1})
	r := s.start(t)
	eventually(t, "first reload", func() bool { return len(s.ep.reloads()) == 1 })
	want := splitConfig("main: 1\n", [2]string{"cfg-1", p1}, [2]string{"cfg-2", p2}) + "|cfg-1.yaml=jobs: prom-3-1\n;cfg-2.yaml=jobs: 2\n;"
	require.Equal(t, []string{want}, s.ep.reloads())

	// A new generation: the main configuration first, a part changed and
	// one gone. Nothing is reloaded until the parts' volume has it too.
	p1b := gz(t, "jobs: 1b\n")
	main2 := gz(t, splitConfig("main: 2\n", [2]string{"cfg-1", p1b}))
	cfg.Set(t, map[string]string{"prometheus.yaml.gz": main2})
	eventually(t, "the wait for the parts", func() bool { return testutil.ToFloat64(r.m.applies) >= 2 })
	require.Len(t, s.ep.reloads(), 1, "no reload of a half-written generation")
	require.Equal(t, want[:len(want)-len("|cfg-1.yaml=jobs: prom-3-1\n;cfg-2.yaml=jobs: 2\n;")], readFile(s.out), "the previous configuration stays")
	require.Zero(t, testutil.ToFloat64(r.m.appliesFailed))

	parts.Set(t, map[string]string{"cfg-1": p1b})
	eventually(t, "second reload", func() bool { return len(s.ep.reloads()) == 2 })
	require.Equal(t, splitConfig("main: 2\n", [2]string{"cfg-1", p1b})+"|cfg-1.yaml=jobs: 1b\n;", s.ep.reloads()[1])
	// The endpoint records the reload before its request returns, and the
	// reloader reports it after: wait for the report.
	eventually(t, "the hash of the main configuration names the parts", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return applied == contentHashOf(t, main2)
	})

	// No parts: their directory empties.
	cfg.Set(t, map[string]string{"prometheus.yaml.gz": gz(t, "main: 3\n")})
	eventually(t, "third reload", func() bool { return len(s.ep.reloads()) == 3 })
	require.Equal(t, "main: 3\n|", s.ep.reloads()[2])
	entries, err := os.ReadDir(outParts)
	require.NoError(t, err)
	require.Empty(t, entries)
}

func contentHashOf(t *testing.T, raw string) string {
	t.Helper()
	sum, err := volumeContentHash([]byte(raw), nil, nil, DefaultMaxConfigSize)
	require.NoError(t, err)
	return sum
}

// TestPartErrors names what is wrong with a part, and keeps the last
// good state.
func TestPartErrors(t *testing.T) {
	for _, tc := range []struct {
		name, main string
		parts      map[string]string
		partsDir   bool
		want       string
	}{
		{"no parts dir", splitConfig("a: 1\n", [2]string{"p", "x"}), nil, false,
			"the configuration names parts (p), and no parts directory is given"},
		{"missing", splitConfig("a: 1\n", [2]string{"p", "x"}), map[string]string{}, true,
			"waiting for the configuration's parts: part p not in PARTS yet"},
		{"another generation", splitConfig("a: 1\n", [2]string{"p", "x"}), map[string]string{"p": "y"}, true,
			"waiting for the configuration's parts: part p is not the one the configuration names yet (sha256 a1fce4363854, want 2d711642b726)"},
		{"invalid line", contract.PartDirective + "p sha256:12\na: 1\n", nil, true,
			`read config CONFIG: invalid part line "# podreload.dev/config-part: p sha256:12": want # podreload.dev/config-part: <name> sha256:<64 hex digits>`},
		{"named twice", splitConfig("a: 1\n", [2]string{"p", "x"}, [2]string{"p", "x"}), nil, true,
			"read config CONFIG: part p named twice"},
		{"undefined variable", splitConfig("a: 1\n", [2]string{"p", "v: $(NOPE)\n"}), map[string]string{"p": "v: $(NOPE)\n"}, true,
			`expand part p: line 1: environment variable "NOPE" is not set`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			config, parts := filepath.Join(dir, "prometheus.yaml"), filepath.Join(dir, "parts")
			require.NoError(t, os.WriteFile(config, []byte(tc.main), 0o644))
			require.NoError(t, os.MkdirAll(parts, 0o755))
			for name, content := range tc.parts {
				require.NoError(t, os.WriteFile(filepath.Join(parts, name), []byte(content), 0o644))
			}
			opts := Options{ConfigFile: config, ConfigOutput: filepath.Join(dir, "out", "prometheus.env.yaml"), Expander: expander(true)}
			if tc.partsDir {
				opts.PartsDir = parts
			}
			r, err := New(nil, nil, opts)
			require.NoError(t, err)
			err = r.Render()
			require.Error(t, err)
			require.Equal(t, strings.NewReplacer("PARTS", parts, "CONFIG", config).Replace(tc.want), err.Error())
			require.NoFileExists(t, opts.ConfigOutput)
		})
	}
}
