package configsecret

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// TestPartCache renders the jobs of a split configuration twice through
// one Cache, one job changed the second time: only its part is
// compressed again, the others are the same bytes, reused.
func TestPartCache(t *testing.T) {
	var cache Cache
	all := variedJobs(rand.New(rand.NewPCG(5, 6)), 10000)
	render := func(changed int) ([][]byte, int) {
		s := &Stream{Cache: &cache, splitting: true}
		for i, j := range all {
			if i == changed {
				j.Item = bytes.Replace(j.Item, []byte("action: drop"), []byte("action: keep"), 1)
			}
			require.NoError(t, s.addSplit([]Job{j}))
		}
		require.NoError(t, s.close())
		cache.Rotate()
		return s.gzipped, s.chunker.deflated
	}
	before, _ := render(-1)
	require.Greater(t, len(before), 20)
	after, deflated := render(5000)
	require.Len(t, after, len(before))
	reused := 0
	for i := range before {
		if &before[i][0] == &after[i][0] {
			reused++
		} else {
			require.NotEqual(t, before[i], after[i], "part %d compressed again, unchanged", i+1)
		}
	}
	require.Equal(t, len(before)-1, reused)
	require.Len(t, cache.last, len(after), "the parts of the last render only")
	require.Positive(t, deflated)
	require.Less(t, deflated, 2<<20, "the chunk of the job changed deflated again, not all")
}

// TestSplitSingleEdit splits 20,000 jobs, then the same with one changed:
// one part changes, and the main configuration, which holds no job, only
// by the hash naming that part.
func TestSplitSingleEdit(t *testing.T) {
	render := func(changed int) *Split {
		s := &Stream{}
		for i := range 20000 {
			name := fmt.Sprintf("serviceMonitor/ns/app-%05d/0", i)
			item := fmt.Appendf(nil, "- job_name: %s\n  scrape_interval: %ds\n  static_configs:\n  - targets: [app-%05d:8080]\n", name, 30+i%7, i)
			if i == changed {
				item = fmt.Appendf(nil, "- job_name: %s\n  scrape_interval: 31s\n  static_configs:\n  - targets: [changed:8080]\n", name)
			}
			// Some 1.1 KB a job, 22 MB in all: more than a config Secret.
			item = fmt.Appendf(item, "    labels: {pad: %s}\n", strings.Repeat(strconv.Itoa(i), 1000/len(strconv.Itoa(i))))
			s.Monitors = append(s.Monitors, Monitor{Kind: "ServiceMonitor", Namespace: "ns", Name: name})
			require.NoError(t, s.Add([]Job{{Monitor: i, Name: name, Item: item}}))
		}
		require.True(t, s.splitting)
		out, err := SplitConfig("main-config", []byte("global: {}\n"), nil, s)
		require.NoError(t, err)
		return out
	}
	before, after := render(-1), render(12345)
	require.Greater(t, len(before.Parts), 1)
	require.Len(t, after.Parts, len(before.Parts))
	changed := 0
	for i := range before.Parts {
		if !bytes.Equal(before.Parts[i], after.Parts[i]) {
			changed++
		}
	}
	require.Equal(t, 1, changed, "parts changed")
	require.NotEqual(t, before.Main, after.Main)
	require.Less(t, len(after.MainGzip), 4<<10, "the config Secret holds the parts' names and hashes only")
	require.Contains(t, string(after.Main), "scrape_configs: []\n")
}

// TestGzip checks the compression level (the best, always), the
// size limit, that the same configuration gives the same bytes, and that
// the result does not depend on how the configuration is split.
func TestGzip(t *testing.T) {
	var config []byte
	for _, j := range variedJobs(rand.New(rand.NewPCG(7, 8)), 300) {
		config = append(config, j.Item...)
	}
	size := func(level int) int {
		var b bytes.Buffer
		w, err := gzip.NewWriterLevel(&b, level)
		require.NoError(t, err)
		_, err = w.Write(config)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		return b.Len()
	}
	fast, best := size(gzip.BestSpeed), size(gzip.BestCompression)
	require.Less(t, best, fast)

	// The XFL byte of the gzip header says which level compressed.
	const xflBestCompression = 2
	for _, tc := range []struct {
		name    string
		limit   int
		wantXFL byte
		wantErr string
	}{
		{name: "fits", limit: corev1.MaxSecretSize, wantXFL: xflBestCompression},
		{name: "fits exactly", limit: best, wantXFL: xflBestCompression},
		{
			name:    "nothing fits",
			limit:   best - 1,
			wantErr: fmt.Sprintf("gzip config: prometheus.yaml is %d bytes, %d gzipped, more than the %d bytes a Secret holds", len(config), best, best-1),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gz, err := Gzip(tc.limit, config)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.LessOrEqual(t, len(gz), tc.limit)
			require.Equal(t, tc.wantXFL, gz[8])
			require.Equal(t, string(config), string(gunzip(t, gz)))
			again, err := Gzip(tc.limit, config)
			require.NoError(t, err)
			require.Equal(t, gz, again, "the same configuration, the same bytes")
			for _, at := range []int{0, 1, len(config) / 3, len(config) - 1} {
				split, err := Gzip(tc.limit, config[:at], config[at:])
				require.NoError(t, err)
				require.Equal(t, gz, split, "split at %d", at)
			}
		})
	}
}

// TestPartSlots: the part Secrets the pods can read, with a step of 4, a
// multiple of 4 up to 32 parts, of a power of two within an eighth of
// them past that; never fewer than the parts, never fewer for more
// parts.
func TestPartSlots(t *testing.T) {
	for _, tc := range []struct{ parts, want int }{
		{0, 0}, {1, 4}, {4, 4}, {5, 8}, {31, 32}, {32, 32}, {33, 40}, {60, 64}, {64, 64}, {65, 80}, {129, 160}, {150, 160}, {300, 320},
	} {
		require.Equal(t, tc.want, PartSlots(tc.parts, 4), "parts %d", tc.parts)
	}
	for parts := range 5000 {
		require.GreaterOrEqual(t, PartSlots(parts, 4), parts)
		require.GreaterOrEqual(t, PartSlots(parts+1, 4), PartSlots(parts, 4))
	}
}

func gunzip(t *testing.T, gz []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	require.NoError(t, err)
	b, err := io.ReadAll(zr)
	require.NoError(t, err)
	return b
}
