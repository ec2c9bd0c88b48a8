package reloader

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/internal/testenv/projector"
)

func TestFileRenderer(t *testing.T) {
	describe := func(name string) string { return "file " + name }
	a1, a2 := gz(t, "a1"), gz(t, "a2")
	big := gz(t, strings.Repeat("x", 11))
	for _, tc := range []struct {
		name    string
		good    map[string]string // rendered first, as stored
		stored  map[string]string
		out     map[string]string
		from    map[string]string
		left    []string // the files left out, as "name: cause"
		wantErr string
	}{
		{
			name:   "plain and gzipped",
			stored: map[string]string{"cm/a.yaml.gz": a1, "cm/b.yaml": "b1"},
			out:    map[string]string{"cm/a.yaml": "a1", "cm/b.yaml": "b1"},
		},
		{
			name:   "a changed file",
			good:   map[string]string{"cm/a.yaml.gz": a1},
			stored: map[string]string{"cm/a.yaml.gz": a2},
			out:    map[string]string{"cm/a.yaml": "a2"},
		},
		{
			name:    "not gzipped: the last good file is kept",
			good:    map[string]string{"cm/a.yaml.gz": a1, "cm/b.yaml": "b1"},
			stored:  map[string]string{"cm/a.yaml.gz": "a2", "cm/b.yaml": "b2"},
			out:     map[string]string{"cm/a.yaml": "a1", "cm/b.yaml": "b2"},
			from:    map[string]string{"cm/a.yaml.gz": a1, "cm/b.yaml": "b2"},
			wantErr: "file cm/a.yaml.gz: gunzip: not gzipped (no gzip magic bytes) (keeping the last good file)",
		},
		{
			name:    "truncated: left out without a good version",
			stored:  map[string]string{"cm/a.yaml.gz": a1[:len(a1)-4], "cm/b.yaml": "b1"},
			out:     map[string]string{"cm/b.yaml": "b1"},
			from:    map[string]string{"cm/b.yaml": "b1"},
			wantErr: "file cm/a.yaml.gz: gunzip: unexpected EOF (left out: no good version yet)",
		},
		{
			name:    "too large gunzipped",
			good:    map[string]string{"cm/a.yaml.gz": a1},
			stored:  map[string]string{"cm/a.yaml.gz": big},
			out:     map[string]string{"cm/a.yaml": "a1"},
			from:    map[string]string{"cm/a.yaml.gz": a1},
			wantErr: "file cm/a.yaml.gz: gunzip: larger than 10 bytes (keeping the last good file)",
		},
		{
			name:    "stored both ways: the plain file is kept",
			stored:  map[string]string{"cm/a.yaml.gz": a2, "cm/a.yaml": "a1"},
			out:     map[string]string{"cm/a.yaml": "a1"},
			from:    map[string]string{"cm/a.yaml": "a1"},
			wantErr: "file cm/a.yaml.gz: a.yaml is also stored as it is, which is kept (left out: no good version yet)",
		},
		{
			name:   "no name left: left out, the rest rendered",
			stored: map[string]string{"cm/.gz": a1, "cm/b.yaml": "b1"},
			out:    map[string]string{"cm/b.yaml": "b1"},
			from:   map[string]string{"cm/b.yaml": "b1"},
			left:   []string{"file cm/.gz: " + invalidName},
		},
		{
			name:   "keys the rules dir cannot hold: left out, the rest rendered",
			stored: map[string]string{"cm/.hidden": "h", "cm/..data": "d", "cm/.x.yaml.gz": a1, "../escape.yaml": "e", "cm/a.yaml": "a1", "nogroup": "n"},
			out:    map[string]string{"cm/a.yaml": "a1"},
			from:   map[string]string{"cm/a.yaml": "a1"},
			left: []string{
				"file ../escape.yaml: " + invalidName, "file cm/..data: " + invalidName, "file cm/.hidden: " + invalidName,
				"file cm/.x.yaml.gz: " + invalidName, "file nogroup: " + invalidName,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fr := fileRenderer{limit: 10}
			if tc.good != nil {
				_, _, _, err := fr.render(tc.good, describe)
				require.NoError(t, err)
			}
			out, from, left, err := fr.render(tc.stored, describe)
			require.Equal(t, tc.out, out)
			var gotLeft []string
			for _, l := range left {
				require.Equal(t, reasonInvalidName, l.reason)
				gotLeft = append(gotLeft, l.name+": "+l.err.Error())
			}
			require.Equal(t, tc.left, gotLeft)
			if tc.from == nil {
				tc.from = tc.stored
			}
			require.Equal(t, tc.from, from)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.wantErr)
		})
	}
}

// TestSourceGzippedFiles: a Source's file X.gz is written gunzipped as X;
// one that cannot be gunzipped leaves its last good version in place and
// reloads nothing, counted and logged naming it; the content hash
// reported is of the files as stored that Prometheus runs.
func TestSourceGzippedFiles(t *testing.T) {
	h, src := sourceHarness(t)
	h.opts.MaxConfigSize = 1 << 10
	var log appliedLog
	h.opts.OnApplied = log.add
	config := "v: 1\n"
	good := map[string]string{"cm/a.yaml.gz": gz(t, "a1"), "cm/b.yaml": "b1"}
	src.set(config, good, nil)
	h.start(t)
	h.reloaded(t, 1, "v: 1\n|cm/a.yaml=a1;cm/b.yaml=b1;")
	require.Equal(t, contract.Sum([]byte(config), good), log.wait(t, 1).Hash)

	for i, bad := range []struct{ content, err string }{
		{"a2", `gunzip: not gzipped \(no gzip magic bytes\)`},
		{gz(t, "a2")[:10], `gunzip: unexpected EOF`},
		{gz(t, strings.Repeat("a", 1<<10+1)), `gunzip: larger than 1 KiB`},
	} {
		failed := testutil.ToFloat64(h.r.m.appliesFailed)
		src.set(config, map[string]string{"cm/a.yaml.gz": bad.content, "cm/b.yaml": "b1"}, nil)
		h.logs.waitErr(t, fmt.Sprintf(`cm/a.yaml.gz: %s \(keeping the last good file\)`, bad.err))
		require.Greater(t, testutil.ToFloat64(h.r.m.appliesFailed), failed, "case %d", i)
		require.Equal(t, "a1", readFile(filepath.Join(h.rulesDir, "cm", "a.yaml")))
		require.Len(t, h.ep.reloads(), 1, "nothing new to reload")
	}

	// Another file changes: reloaded, the bad file's last good version kept.
	src.set(config, map[string]string{"cm/a.yaml.gz": "a2", "cm/b.yaml": "b2"}, nil)
	h.reloaded(t, 2, "v: 1\n|cm/a.yaml=a1;cm/b.yaml=b2;")
	require.Equal(t, contract.Sum([]byte(config), map[string]string{"cm/a.yaml.gz": good["cm/a.yaml.gz"], "cm/b.yaml": "b2"}), log.wait(t, 2).Hash)

	// Fixed: applied at once.
	src.set(config, map[string]string{"cm/a.yaml.gz": gz(t, "a3"), "cm/b.yaml": "b2"}, nil)
	h.reloaded(t, 3, "v: 1\n|cm/a.yaml=a3;cm/b.yaml=b2;")
}

// TestSourcePlainToGzipped: the same files stored gzipped rather than
// plain, as a newer controller stores them, are the same for Prometheus:
// no reload, and the content hash reported is the new one.
func TestSourcePlainToGzipped(t *testing.T) {
	h, src := sourceHarness(t)
	var log appliedLog
	h.opts.OnApplied = log.add
	src.set("v: 1\n", map[string]string{"cm/a.yaml": "a1"}, nil)
	h.start(t)
	h.reloaded(t, 1, "v: 1\n|cm/a.yaml=a1;")
	first := log.wait(t, 1)

	gzipped := map[string]string{"cm/a.yaml.gz": gz(t, "a1")}
	src.set("v: 1\n", gzipped, nil)
	second := log.wait(t, 2)
	require.Equal(t, Applied{Hash: contract.Sum([]byte("v: 1\n"), gzipped), Time: first.Time}, second)
	require.Len(t, h.ep.reloads(), 1)
	require.Equal(t, "cm/a.yaml=a1;", readTree(h.rulesDir))
}

// TestPlainRuleFiles: the rule files of prometheus-operator's layout, plain
// YAML under the data keys <namespace>-<name>-<uid>.yaml of ConfigMaps
// prometheus-<name>-rulefiles-<i>, are written as they are into the
// directory of each ConfigMap, where the operator's pods read them too,
// whether they come through the API (a Source) or from ConfigMap volumes;
// content that happens to start with the gzip magic bytes is not
// gunzipped: only a key ending in .gz is.
func TestPlainRuleFiles(t *testing.T) {
	const uid = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
	magic := "\x1f\x8b not gzip"
	t.Run("source", func(t *testing.T) {
		h, src := sourceHarness(t)
		var log appliedLog
		h.opts.OnApplied = log.add
		files := map[string]string{
			"prometheus-main-rulefiles-0/monitoring-node-" + uid + ".yaml": "groups: []\n",
			"prometheus-main-rulefiles-1/apps-api-" + uid + ".yaml":        magic,
		}
		src.set("v: 1\n", files, nil)
		h.start(t)
		h.reloaded(t, 1, "v: 1\n|prometheus-main-rulefiles-0/monitoring-node-"+uid+".yaml=groups: []\n;prometheus-main-rulefiles-1/apps-api-"+uid+".yaml="+magic+";")
		require.Equal(t, contract.Sum([]byte("v: 1\n"), files), log.wait(t, 1).Hash)
	})
	t.Run("volumes", func(t *testing.T) {
		h, inputs, _ := inputHarness(t)
		projector.Open(t, h.cfgDir).Set(t, map[string]string{"prometheus.yaml.gz": gz(t, "v: 1\n")})
		inputs[0].Set(t, map[string]string{"monitoring-node-" + uid + ".yaml": "groups: []\n"})
		inputs[1].Set(t, map[string]string{"apps-api-" + uid + ".yaml": magic})
		h.start(t)
		h.reloaded(t, 1, "v: 1\n|cm-0/monitoring-node-"+uid+".yaml=groups: []\n;cm-1/apps-api-"+uid+".yaml="+magic+";")
	})
}

// inputHarness is a harness whose reloader reads the configuration from
// its volume and renders two ConfigMap volumes of rule files into its own
// rules dir, as the volume source's pods do.
func inputHarness(t *testing.T) (h *harness, inputs []*projector.Projector, dirs []string) {
	h = newHarness(t)
	root := t.TempDir()
	dirs = []string{filepath.Join(root, "cm-0"), filepath.Join(root, "cm-1")}
	h.opts.WatchedDirs, h.opts.RulesInputDirs, h.opts.RulesDir, h.opts.KeepAccepted = nil, dirs, h.rulesDir, true
	h.ep.snapshot = func() string { return readFile(h.out) + "|" + readTree(h.rulesDir) }
	return h, []*projector.Projector{projector.Open(t, dirs[0]), projector.Open(t, dirs[1])}, dirs
}

func TestRulesInputDirs(t *testing.T) {
	h, inputs, dirs := inputHarness(t)
	var log appliedLog
	h.opts.OnApplied = log.add
	cfg := projector.Open(t, h.cfgDir)
	config := gz(t, "v: 1\n")
	cfg.Set(t, map[string]string{"prometheus.yaml.gz": config})
	inputs[0].Set(t, map[string]string{"a.yaml.gz": gz(t, "a1"), "b.yaml": "b1"})
	h.start(t)
	h.reloaded(t, 1, "v: 1\n|cm-0/a.yaml=a1;cm-0/b.yaml=b1;")
	// Named as the controller names the ConfigMaps' keys.
	require.Equal(t, contract.Sum([]byte(config), map[string]string{"cm-0/a.yaml.gz": gz(t, "a1"), "cm-0/b.yaml": "b1"}), log.wait(t, 1).Hash)

	// A second ConfigMap appears, the first changes.
	inputs[1].Set(t, map[string]string{"c.yaml.gz": gz(t, "c1")})
	h.reloaded(t, 2, "v: 1\n|cm-0/a.yaml=a1;cm-0/b.yaml=b1;cm-1/c.yaml=c1;")
	inputs[0].Set(t, map[string]string{"a.yaml.gz": gz(t, "a2")})
	h.reloaded(t, 3, "v: 1\n|cm-0/a.yaml=a2;cm-1/c.yaml=c1;")

	// A file that cannot be gunzipped: its last good version stays,
	// nothing is reloaded, the error names its path.
	failed := testutil.ToFloat64(h.r.m.appliesFailed)
	inputs[0].Set(t, map[string]string{"a.yaml.gz": "junk"})
	h.logs.waitErr(t, regexp.QuoteMeta(filepath.Join(dirs[0], "a.yaml.gz")+": gunzip: not gzipped (no gzip magic bytes) (keeping the last good file)"))
	require.Greater(t, testutil.ToFloat64(h.r.m.appliesFailed), failed)
	require.Len(t, h.ep.reloads(), 3)
	require.Equal(t, "cm-0/a.yaml=a2;cm-1/c.yaml=c1;", readTree(h.rulesDir))

	// The ConfigMap goes away: so does its directory.
	inputs[1].Set(t, map[string]string{})
	h.reloaded(t, 4, "v: 1\n|cm-0/a.yaml=a2;")
	require.NoDirExists(t, filepath.Join(h.rulesDir, "cm-1"))
}

// TestRulesInputDirsRender: the init container renders the rule files too,
// leaving out one that cannot be gunzipped.
func TestRulesInputDirsRender(t *testing.T) {
	h, inputs, _ := inputHarness(t)
	projector.Open(t, h.cfgDir).Set(t, map[string]string{"prometheus.yaml.gz": gz(t, "v: 1\n")})
	inputs[0].Set(t, map[string]string{"a.yaml.gz": gz(t, "a1"), "bad.yaml.gz": "junk"})
	inputs[1].Set(t, map[string]string{"c.yaml": "c1"})
	r, err := New(nil, h.reg, h.opts)
	require.NoError(t, err)
	require.NoError(t, r.Render())
	require.Equal(t, "v: 1\n", readFile(h.out))
	require.Equal(t, "cm-0/a.yaml=a1;cm-1/c.yaml=c1;", readTree(h.rulesDir))
	require.Equal(t, 1.0, testutil.ToFloat64(r.m.appliesFailed))
}

func TestRulesInputDirsOptions(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"no rules dir", Options{RulesInputDirs: []string{dir + "/a"}}, "rules input dirs are written into a rules dir"},
		{"with a source", Options{Source: newMemSource(), ConfigOutput: dir + "/out", RulesDir: dir + "/rules", RulesInputDirs: []string{dir + "/a"}}, "give a source or rules input dirs, not both"},
		{"same base name", Options{RulesDir: dir + "/rules", RulesInputDirs: []string{dir + "/x/a", dir + "/y/a/"}}, "rules input dirs " + dir + "/x/a and " + dir + "/y/a/: both would be written into the rules dir's a"},
		{"hidden base name", Options{RulesDir: dir + "/rules", RulesInputDirs: []string{dir + "/.a"}}, "rules input dir " + dir + "/.a: its base name cannot name a directory of the rules dir"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(nil, nil, tc.opts)
			require.EqualError(t, err, tc.wantErr)
		})
	}
	_, err := New(nil, nil, Options{RulesDir: dir + "/rules", RulesInputDirs: []string{dir + "/a", dir + "/b"}})
	require.NoError(t, err)
}

func TestReadInputDirs(t *testing.T) {
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "cm-0"), filepath.Join(root, "missing")}
	projector.Open(t, dirs[0]).Set(t, map[string]string{"a.yaml.gz": "gz", "b.yaml": "b"})
	require.NoError(t, os.Mkdir(filepath.Join(dirs[0], "sub"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(root, "nowhere"), filepath.Join(dirs[0], "dangling")))
	files, left, err := readInputDirs(dirs, 10)
	require.NoError(t, err)
	require.Empty(t, left)
	require.Equal(t, map[string]string{"cm-0/a.yaml.gz": "gz", "cm-0/b.yaml": "b"}, files)

	// Files that cannot be read are left out, the rest read.
	require.NoError(t, os.WriteFile(filepath.Join(dirs[0], "sub", "x"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "big"), make([]byte, 11), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(root, "big"), filepath.Join(dirs[0], "big.yaml")))
	require.NoError(t, os.Symlink("loop.yaml", filepath.Join(dirs[0], "loop.yaml")))
	mkfifo(t, filepath.Join(dirs[0], "fifo.yaml"))
	files, left, err = readInputDirs(dirs, 10)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"cm-0/a.yaml.gz": "gz", "cm-0/b.yaml": "b"}, files)
	var got []string
	for _, l := range left {
		require.Equal(t, reasonUnreadable, l.reason)
		got = append(got, l.err.Error())
	}
	require.Equal(t, []string{
		"read " + filepath.Join(dirs[0], "big.yaml") + ": larger than 10 bytes",
		"open " + filepath.Join(dirs[0], "fifo.yaml") + ": not a regular file (named pipe)",
		"stat " + filepath.Join(dirs[0], "loop.yaml") + ": too many levels of symbolic links",
	}, got)
}
