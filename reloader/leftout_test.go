package reloader

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/internal/testenv/projector"
)

// TestUnreadableEntryLeftOut puts, in a watched directory, an entry neither
// the reloader nor the process can read: it is left out (logged naming it
// and the cause, counted, said by Degraded), and a change of the
// configuration made meanwhile is applied with the rest.
func TestUnreadableEntryLeftOut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		make  func(t *testing.T, path string)
		cause string
	}{
		{"symlink loop", func(t *testing.T, path string) {
			require.NoError(t, os.Symlink(filepath.Base(path), path))
		}, "stat %s: too many levels of symbolic links"},
		{"named pipe", mkfifo, "open %s: not a regular file (named pipe)"},
		{"socket", func(t *testing.T, path string) {
			l, err := net.Listen("unix", path)
			require.NoError(t, err)
			t.Cleanup(func() { _ = l.Close() })
		}, "open %s: not a regular file (socket)"},
		{"link to a device", func(t *testing.T, path string) {
			require.NoError(t, os.Symlink("/dev/null", path))
		}, "open %s: not a regular file (character device)"},
		{"no read permission", unreadable, "open %s: permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			require.NoError(t, os.MkdirAll(h.rulesDir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(h.rulesDir, "a.yaml"), []byte("a1"), 0o644))
			cfg := projector.Open(t, h.cfgDir)
			cfg.Set(t, map[string]string{"prometheus.yaml.gz": "a: 1\n"})
			h.start(t)
			h.reloaded(t, 1, "a: 1\n|a.yaml=a1;")

			path := filepath.Join(h.rulesDir, "x.yaml")
			tc.make(t, path)
			cause := fmt.Sprintf(tc.cause, path)
			h.logs.waitErr(t, regexp.QuoteMeta(cause))
			require.Contains(t, h.logs.String(), `"msg":"input file left out, the rest applies without it","file":"`+path+`","reason":"unreadable"`)
			eventually(t, "the gauge", func() bool { return testutil.ToFloat64(h.r.m.leftOut.WithLabelValues(reasonUnreadable)) == 1 })
			require.EqualError(t, h.r.Degraded(), "1 input files left out: "+path+": "+cause+"; the rest is applied")
			require.NoError(t, h.r.Ready())

			// The config, changed meanwhile, is applied with the rest.
			cfg.Set(t, map[string]string{"prometheus.yaml.gz": "a: 2\n"})
			eventually(t, "a reload of the config", func() bool { return len(h.ep.reloads()) == 2 })
			require.Equal(t, "a: 2\n", readFile(h.out))
			require.Zero(t, testutil.ToFloat64(h.r.m.appliesFailed))

			require.NoError(t, os.Remove(path))
			require.NoError(t, writeAtomic(path, []byte("x1")))
			// The last reload carries the file: the removal may bring a
			// reload of its own, which under load read the directory while
			// writeAtomic's temporary file was there.
			want := "a: 2\n|a.yaml=a1;x.yaml=x1;"
			eventually(t, "reload "+want, func() bool { r := h.ep.reloads(); return r[len(r)-1] == want })
			eventually(t, "the gauge back to 0", func() bool { return testutil.ToFloat64(h.r.m.leftOut.WithLabelValues(reasonUnreadable)) == 0 })
			require.NoError(t, h.r.Degraded())
			require.Contains(t, h.logs.String(), `"msg":"input file no longer left out","file":"`+path+`"`)
		})
	}
}
