package rulefiles

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podreload/podreload/internal/testenv/promfixture"
)

// sizedFiles are files named f000.yaml, f001.yaml... of gzipped sizes.
func sizedFiles(sizes ...int) []ruleResult {
	files := make([]ruleResult, len(sizes))
	for i, size := range sizes {
		files[i] = ruleResult{name: fmt.Sprintf("f%03d.yaml", i), gz: make([]byte, size)}
	}
	return files
}

// repeated is n times size.
func repeated(n, size int) []int {
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = size
	}
	return sizes
}

// checkLayout checks that shards hold exactly files: each small one in
// the hashed ConfigMap its name hashes to, a ConfigMap of more than one
// of them within shardTarget, then each large one alone, in name order.
func checkLayout(t *testing.T, shards []*corev1.ConfigMap, files []ruleResult) {
	t.Helper()
	var large []string
	for _, f := range files {
		if largeFile(f) {
			large = append(large, f.name+gzipSuffix)
		}
	}
	slices.Sort(large)
	n := len(shards) - len(large)
	require.Positive(t, n)
	held := 0
	for i, cm := range shards {
		require.Equal(t, "main-rulefiles-"+strconv.Itoa(i), cm.Name)
		require.Empty(t, cm.Data)
		held += len(cm.BinaryData)
		if i >= n {
			require.Equal(t, []string{large[i-n]}, slices.Collect(maps.Keys(cm.BinaryData)), cm.Name)
			continue
		}
		cost := 0
		for key, gz := range cm.BinaryData {
			name, ok := strings.CutSuffix(key, gzipSuffix)
			require.True(t, ok, key)
			f := ruleResult{name: name, gz: gz}
			require.False(t, largeFile(f), "%s in %s", name, cm.Name)
			require.Equal(t, i, Bucket(name, n), "%s in %s", name, cm.Name)
			cost += shardCost(f)
		}
		if len(cm.BinaryData) > 1 {
			require.LessOrEqual(t, cost, shardTarget, cm.Name)
		}
	}
	require.Equal(t, len(files), held)
}

func TestPackShards(t *testing.T) {
	require.Nil(t, packShards(testShards(), nil, 4), "no files, no ConfigMaps")

	// Empty buckets are ConfigMaps all the same: the count is the
	// configuration's rule_files.
	files := sizedFiles(100, 100)
	shards := packShards(testShards(), files, 8)
	require.Len(t, shards, 8)
	checkLayout(t, shards, files)

	// Large files come after the hashed ConfigMaps, each alone.
	files = sizedFiles(100, 20<<10, 100, 300<<10, 15<<10)
	shards = packShards(testShards(), files, 2)
	require.Len(t, shards, 5)
	checkLayout(t, shards, files)
	require.Equal(t, []string{"f001.yaml.gz"}, slices.Collect(maps.Keys(shards[2].BinaryData)))

	// One more keeps a file where it was or moves it to the new
	// ConfigMap, and the files spread evenly.
	files = sizedFiles(repeated(2000, 100)...)
	for n := 1; n <= 40; n++ {
		moved, count := 0, make([]int, n+1)
		for _, f := range files {
			b, b1 := Bucket(f.name, n), Bucket(f.name, n+1)
			require.True(t, b >= 0 && b < n, "%s: %d of %d", f.name, b, n)
			require.True(t, b1 == b || b1 == n, "%s: %d of %d, then %d of %d", f.name, b, n, b1, n+1)
			if b1 != b {
				moved++
			}
			count[b1]++
		}
		// 2,000/(n+1) expected in each: within 5 standard deviations.
		mean := float64(len(files)) / float64(n+1)
		for b, c := range count {
			require.InDelta(t, mean, c, 5*math.Sqrt(mean), "%d files in %d of %d", c, b, n+1)
		}
		require.InDelta(t, mean, moved, 5*math.Sqrt(mean), "%d files moved from %d to %d", moved, n, n+1)
	}
}

func TestRuleBuckets(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sizes []int
		prev  int
		want  int // 0: the least count that holds them
	}{
		{name: "no files", want: 1},
		{name: "one small file", sizes: []int{1000}, want: 1},
		{name: "one file larger than the target alone", sizes: []int{300 << 10}, want: 1},
		{name: "small files within the target", sizes: repeated(40, 1000), want: 1},
		{name: "1,000 files of 500 bytes", sizes: repeated(1000, 500)},
		{name: "large files apart", sizes: append(repeated(6, 40<<10), 1000), want: 1},
		{name: "halved only while half as many hold them at three quarters", sizes: repeated(40, 1000), prev: 4, want: 2},
		{name: "halved when half holds them at three quarters", sizes: repeated(10, 1000), prev: 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := sizedFiles(tc.sizes...)
			var small []ruleResult
			for _, f := range files {
				if !largeFile(f) {
					small = append(small, f)
				}
			}
			n := ruleBuckets(small, tc.prev)
			if tc.want > 0 {
				require.Equal(t, tc.want, n)
			}
			require.False(t, overfull(small, n, shardTarget), "within the target at %d", n)
			if tc.prev == 0 && n > 1 {
				require.True(t, overfull(small, n-1, shardTarget), "the least count: %d", n)
			}
			if len(files) > 0 {
				checkLayout(t, packShards(testShards(), files, n), files)
			}
		})
	}

	// Shrinkage of a few percent keeps the count (hysteresis), growth
	// past the target raises it to the least that holds them, as from
	// scratch; far fewer lower it.
	files := sizedFiles(repeated(1000, 500)...)
	n := ruleBuckets(files, 0)
	require.Equal(t, n, ruleBuckets(files[:950], n), "5 % fewer files: same count")
	more := sizedFiles(repeated(1300, 500)...)
	require.Equal(t, ruleBuckets(more, 0), ruleBuckets(more, n), "30 % more")
	require.Greater(t, ruleBuckets(more, n), n, "30 % more")
	require.Less(t, ruleBuckets(files[:500], n), n, "half as many")
	require.Equal(t, maxRuleShards, ruleBuckets(sizedFiles(repeated(30000, 10<<10)...), 0), "bounded")
	require.Equal(t, maxRuleShards, ruleBuckets(sizedFiles(repeated(30000, 10<<10)...), 5000), "bounded")
}

// TestRenderRulesSingleEdit renders 1,000 PrometheusRules, then the same
// with one of them edited: one ConfigMap changes, of less than 64 KiB as
// JSON, and its other files are those it held.
func TestRenderRulesSingleEdit(t *testing.T) {
	rules := promfixture.BenchRules(1000)
	var cache Cache
	before, rejected := cache.render(testShards(), rules)
	require.Empty(t, rejected)
	require.Greater(t, len(before), 4, "the rules spread over several ConfigMaps")
	var files []ruleResult
	for _, cm := range before {
		for key, gz := range cm.BinaryData {
			files = append(files, ruleResult{name: strings.TrimSuffix(key, gzipSuffix), gz: gz})
		}
	}
	checkLayout(t, before, files)
	require.Len(t, files, 1000)
	promfixture.CheckRules(t, before)
	// The API server adds a uid, a resourceVersion, a creation time,
	// owner references and managed fields: under 3 KiB with their keys
	// (counted in shardCost).
	for _, cm := range before {
		b, err := json.Marshal(cm)
		require.NoError(t, err)
		require.LessOrEqual(t, len(b), 61<<10, "%s as JSON, without its metadata", cm.Name)
	}

	edited := rules[417]
	edited.ResourceVersion = "2"
	edited.Spec.Groups[0].Rules[0].Expr = intstr.FromString("sum(up)")
	after, _ := cache.render(testShards(), rules)
	require.Len(t, after, len(before))
	var changed []string
	for i := range after {
		if !maps.EqualFunc(before[i].BinaryData, after[i].BinaryData, bytes.Equal) {
			changed = append(changed, after[i].Name)
			require.Equal(t, slices.Sorted(maps.Keys(before[i].BinaryData)), slices.Sorted(maps.Keys(after[i].BinaryData)))
			require.Contains(t, after[i].BinaryData, FileName(edited)+gzipSuffix)
			b, err := json.Marshal(after[i])
			require.NoError(t, err)
			require.LessOrEqual(t, len(b), 64<<10, "%s as JSON", after[i].Name)
			t.Logf("%s: %d files, %d bytes as JSON; %d ConfigMaps", after[i].Name, len(after[i].BinaryData), len(b), len(after))
		}
	}
	require.Len(t, changed, 1)
}

// TestRenderRulesVolumeSource: with the volume source, the rules take a
// power of two of ConfigMaps, the least that holds them, so that the
// pods roll once per doubling of the rules (volumeBuckets).
func TestRenderRulesVolumeSource(t *testing.T) {
	for _, tc := range []struct{ n, want int }{{0, 1}, {1, 1}, {2, 2}, {3, 4}, {4, 4}, {5, 8}, {12, 16}, {16, 16}, {17, 32}} {
		require.Equal(t, tc.want, volumeBuckets(tc.n), "%d", tc.n)
	}
	server := testShards()
	server.Volume = true
	rules := promfixture.BenchRules(1000)
	var api, volume Cache
	apiShards, _ := api.render(testShards(), rules)
	volumeShards, _ := volume.render(server, rules)
	require.Len(t, apiShards, 13)
	require.Len(t, volumeShards, 16)
	promfixture.CheckRules(t, volumeShards)
	var restarted Cache
	restarted.Seed(volumeShards)
	again, _ := restarted.render(server, rules)
	require.Len(t, again, 16, "the same after a restart")
}

// ruleState is the rule files of live ConfigMaps: by ConfigMap, its keys.
type ruleState map[string]map[string][]byte

func stateOf(cms []*corev1.ConfigMap) ruleState {
	s := ruleState{}
	for _, cm := range cms {
		s[cm.Name] = cm.BinaryData
	}
	return s
}

func (s ruleState) files() map[string]bool {
	files := map[string]bool{}
	for _, data := range s {
		for key := range data {
			files[key] = true
		}
	}
	return files
}

func configMaps(server string, layout [][]string) []*corev1.ConfigMap {
	var cms []*corev1.ConfigMap
	for i, keys := range layout {
		cm := testShards().ConfigMap(i)
		cm.Name = server + "-rulefiles-" + strconv.Itoa(i)
		for _, k := range keys {
			cm.BinaryData[k] = []byte(k)
		}
		cms = append(cms, cm)
	}
	return cms
}

// TestRuleWrites applies the writes ruleWrites orders, one by one, then
// deletes the extra ConfigMaps, as write does: a file there before and
// after is in some ConfigMap at every step.
func TestRuleWrites(t *testing.T) {
	layout := func(n int, bucket func(string) int, names ...string) [][]string {
		layout := make([][]string, n)
		for _, name := range names {
			b := bucket(name)
			layout[b] = append(layout[b], name)
		}
		return layout
	}
	hashed := func(n int, names ...string) [][]string {
		return layout(n, func(name string) int { return Bucket(name, n) }, names...)
	}
	// masked is the layout of earlier versions: a power of two of
	// ConfigMaps, by the name's xxhash's low bits.
	masked := func(n int, names ...string) [][]string {
		return layout(n, func(name string) int { return int(xxhash.Sum64String(name) & uint64(n-1)) }, names...)
	}
	var many []string
	for i := range 40 {
		many = append(many, fmt.Sprintf("f%02d.yaml.gz", i))
	}
	for _, tc := range []struct {
		name          string
		live, desired [][]string
		interim       int
	}{
		{name: "upgrade from one shard", live: [][]string{many}, desired: hashed(8, many...)},
		{name: "one more", live: hashed(4, many...), desired: hashed(5, many...)},
		{name: "one fewer", live: hashed(5, many...), desired: hashed(4, many...)},
		{name: "doubled", live: hashed(4, many...), desired: hashed(8, many...)},
		{name: "halved", live: hashed(8, many...), desired: hashed(4, many...)},
		{name: "upgrade from the power-of-two layout", live: masked(8, many...), desired: hashed(6, many...), interim: 6},
		{name: "a file added, one removed", live: hashed(4, many[1:]...), desired: hashed(4, many[:39]...)},
		{
			name:    "shards that swap files, from the older layout",
			live:    [][]string{{"a", "b"}, {"c", "d"}},
			desired: [][]string{{"a", "c"}, {"b", "d"}},
			interim: 2,
		},
		{
			name:    "a chain of moves, from the older layout",
			live:    [][]string{{"a", "b"}, {"c", "d"}, {"e"}},
			desired: [][]string{{"a"}, {"b", "c"}, {"d", "e"}},
			interim: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live, desired := configMaps("main", tc.live), configMaps("main", tc.desired)
			state := stateOf(live)
			before := state.files()
			kept := stateOf(desired).files()
			phases := Writes(live, desired)
			require.Len(t, slices.Concat(phases...), len(desired)+tc.interim)
			// The writes of a phase may land in any order: every prefix
			// of each, in both orders, keeps every file.
			for _, phase := range phases {
				reversed := slices.Clone(phase)
				slices.Reverse(reversed)
				for _, order := range [][]*corev1.ConfigMap{phase, reversed} {
					s := maps.Clone(state)
					for _, w := range order {
						s[w.Name] = w.BinaryData
						have := s.files()
						for f := range before {
							require.True(t, !kept[f] || have[f], "%s missing after writing %s", f, w.Name)
						}
					}
				}
				for _, w := range phase {
					state[w.Name] = w.BinaryData
				}
			}
			for name := range state {
				if !slices.ContainsFunc(desired, func(cm *corev1.ConfigMap) bool { return cm.Name == name }) {
					delete(state, name)
				}
			}
			require.Equal(t, stateOf(desired), state)
		})
	}
}

// TestRuleCacheSeed checks that a controller that restarts keeps the
// number of hashed ConfigMaps the previous one had, where the hysteresis
// kept it above the least that holds the files: seeded from the live
// ConfigMaps (a large file's alone not counted), it renders the same.
func TestRuleCacheSeed(t *testing.T) {
	all := sizedFiles(repeated(1000, 500)...)
	n := ruleBuckets(all, 0)
	k := len(all)
	for k > 0 && ruleBuckets(all[:k], 0) == n {
		k--
	}
	files := all[:k]
	require.Equal(t, n, ruleBuckets(files, n), "%d files: kept at %d by the hysteresis", k, n)
	require.Less(t, ruleBuckets(files, 0), n, "%d files: fewer from scratch", k)

	large := ruleResult{name: "large.yaml", gz: make([]byte, 20<<10)}
	live := packShards(testShards(), append(slices.Clone(files), large), n)
	require.Len(t, live, n+1)
	var c Cache
	require.False(t, c.Seeded())
	c.Seed(live)
	require.True(t, c.Seeded())
	require.Equal(t, n, c.buckets)
	c.Seed(nil)
	require.Equal(t, n, c.buckets, "seeded once")

	var empty Cache
	empty.Seed(nil)
	require.False(t, empty.Seeded())
}
