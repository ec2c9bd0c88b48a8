package reloader

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// TestOutputsIndependent makes one output read-only, then the other: the
// other is still written, and the process reloaded with what the outputs
// hold; once the output is writable again, its content follows.
func TestOutputsIndependent(t *testing.T) {
	h, src := sourceHarness(t)
	src.set("v: 1\n", map[string]string{"cm/a.yaml": "a1"}, nil)
	h.start(t)
	h.reloaded(t, 1, "v: 1\n|cm/a.yaml=a1;")
	cause := "read-only file system"
	if os.Geteuid() != 0 {
		cause = "permission denied"
	}

	restore := readOnly(t, filepath.Dir(h.out))
	src.set("v: 2\n", map[string]string{"cm/a.yaml": "a2"}, nil)
	h.reloaded(t, 2, "v: 1\n|cm/a.yaml=a2;")
	h.logs.waitErr(t, regexp.QuoteMeta(`write `+h.out+`: open `+filepath.Dir(h.out)+`/.prometheus.env.yaml.tmp`)+`[0-9]+: `+cause+regexp.QuoteMeta(` (keeping the previous config)`))
	require.Positive(t, testutil.ToFloat64(h.r.m.appliesFailed))
	restore()
	h.reloaded(t, 3, "v: 2\n|cm/a.yaml=a2;")

	restore = readOnly(t, h.rulesDir)
	src.set("v: 3\n", map[string]string{"cm/a.yaml": "a3"}, nil)
	h.reloaded(t, 4, "v: 3\n|cm/a.yaml=a2;")
	h.logs.waitErr(t, regexp.QuoteMeta(`write `+filepath.Join(h.rulesDir, "cm", "a.yaml")+`: open `+filepath.Join(h.rulesDir, "cm")+`/.a.yaml.tmp`)+`[0-9]+: `+cause+regexp.QuoteMeta(` (keeping the previous version of the files not written)`))
	restore()
	h.reloaded(t, 5, "v: 3\n|cm/a.yaml=a3;")
}

// TestEmptyConfigHeldBack truncates the configuration: the empty input is
// held back (logged, counted, said by Degraded), the previous output kept,
// also when the next write is refused as too large; a configuration with
// content is applied again.
func TestEmptyConfigHeldBack(t *testing.T) {
	t.Run("truncated, then oversized", func(t *testing.T) {
		h := newHarness(t)
		h.opts.MaxConfigSize = 64 << 10
		plainFiles(t, h, "a: 1\n")
		h.start(t)
		h.reloaded(t, 1, "a: 1\n|")

		require.NoError(t, os.Truncate(h.opts.ConfigFile, 0))
		held := `read config: ` + h.opts.ConfigFile + ` is empty where the last configuration rendered had 5 bytes: held back as a truncated or emptied input`
		h.logs.waitErr(t, regexp.QuoteMeta(held+` (keeping the previous config)`))
		require.Equal(t, "a: 1\n", readFile(h.out))
		require.Positive(t, testutil.ToFloat64(h.r.m.appliesFailed))
		require.EqualError(t, h.r.Degraded(), held+": the configuration last rendered is served")
		require.NoError(t, h.r.Ready())

		require.NoError(t, writeAtomic(h.opts.ConfigFile, []byte(strings.Repeat("#", 64<<10+1))))
		h.logs.waitErr(t, regexp.QuoteMeta(`read config: read `+h.opts.ConfigFile+`: larger than 64 KiB (keeping the previous config)`))
		require.Equal(t, "a: 1\n", readFile(h.out))
		require.Len(t, h.ep.reloads(), 1)

		require.NoError(t, writeAtomic(h.opts.ConfigFile, []byte("a: 2\n")))
		h.reloaded(t, 2, "a: 2\n|")
		require.NoError(t, h.r.Degraded())
	})

	t.Run("gzipped empty, at start, over an output with content", func(t *testing.T) {
		h := newHarness(t)
		plainFiles(t, h, gz(t, ""))
		require.NoError(t, writeAtomic(h.out, []byte("a: 0\n")))
		h.start(t)
		h.logs.waitErr(t, regexp.QuoteMeta(`read config: `+h.opts.ConfigFile+` is empty where the last configuration rendered had 5 bytes: held back as a truncated or emptied input`))
		require.Equal(t, "a: 0\n", readFile(h.out))
		require.Empty(t, h.ep.reloads())
	})

	t.Run("allowed", func(t *testing.T) {
		h := newHarness(t)
		h.opts.AllowEmptyConfig = true
		plainFiles(t, h, "a: 1\n")
		h.start(t)
		h.reloaded(t, 1, "a: 1\n|")
		require.NoError(t, os.Truncate(h.opts.ConfigFile, 0))
		h.reloaded(t, 2, "|")
	})
}
