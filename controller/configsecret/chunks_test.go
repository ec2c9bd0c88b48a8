package configsecret

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/podreload/podreload/internal/testenv/promfixture"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// chunkJobs cuts jobs into chunks with a chunker, whose estimates cache
// keeps (nil: none), and returns them and the bytes of jobs it deflated.
func chunkJobs(cache *Cache, jobs []Job) ([][]Job, int) {
	c := chunker{cache: cache}
	var chunks [][]Job
	for _, j := range jobs {
		chunks = append(chunks, c.add(j)...)
	}
	if last := c.close(); len(last) > 0 {
		chunks = append(chunks, last)
	}
	if cache != nil {
		cache.Rotate()
	}
	return chunks, c.deflated
}

// variedJobs are n scrape jobs of some 2.5 KB that compress about 15
// times together, as jobs with their own label values, credentials and
// regular expressions do; those of the benchmark (benchConfigInput)
// compress some 140 times. rnd draws their varied parts.
func variedJobs(rnd *rand.Rand, n int) []Job {
	jobs := make([]Job, n)
	for i := range jobs {
		name := fmt.Sprintf("serviceMonitor/team-%d/app-%05d/0", i%10, i)
		var b []byte
		b = fmt.Appendf(b, "- job_name: %s\n  kubernetes_sd_configs:\n  - role: endpoints\n    namespaces:\n      names: [team-%d]\n", name, i%10)
		b = fmt.Appendf(b, "  authorization:\n    credentials: %s\n  relabel_configs:\n", promfixture.RandomWord(rnd, 40))
		for _, label := range []string{"owner", "cost_center", "runbook", "version"} {
			b = fmt.Appendf(b, "  - target_label: %s\n    replacement: %s\n", label, promfixture.RandomWord(rnd, 16))
		}
		for range 3 + rnd.IntN(5) {
			b = fmt.Appendf(b, "  - source_labels: [__meta_kubernetes_service_label_app_kubernetes_io_name, __meta_kubernetes_service_labelpresent_app_kubernetes_io_name]\n    action: keep\n    regex: (app-%05d);true\n", i)
		}
		b = fmt.Appendf(b, "  metric_relabel_configs:\n  - source_labels: [__name__]\n    action: drop\n    regex: %s_.*|%s_total|%s\n",
			promfixture.RandomWord(rnd, 12), promfixture.RandomWord(rnd, 12), promfixture.RandomWord(rnd, 12))
		jobs[i] = Job{Monitor: i, Name: name, Item: b}
	}
	return jobs
}

// chunkNames are the chunks as the names of their jobs and the hash of
// their content, one string each.
func chunkNames(chunks [][]Job) []string {
	var names []string
	for _, c := range chunks {
		var b strings.Builder
		h := sha256.New()
		for _, j := range c {
			b.WriteString(j.Name + "\n")
			h.Write(j.Item)
		}
		names = append(names, b.String()+hex.EncodeToString(h.Sum(nil)))
	}
	return names
}

// TestChunkJobs cuts 10,000 jobs that compress like real ones into
// chunks: each within partTarget gzipped, and but for the last at least
// 20 KiB (the estimate is not so far off that parts get small, and many);
// the same jobs, the same chunks.
func TestChunkJobs(t *testing.T) {
	all := variedJobs(rand.New(rand.NewPCG(1, 2)), 10000)
	var cache Cache
	chunks, deflated := chunkJobs(&cache, all)
	size, gzipped := 0, 0
	for i, c := range chunks {
		items := [][]byte{[]byte(ScrapeConfigsKey)}
		for _, j := range c {
			items = append(items, j.Item)
			size += len(j.Item)
		}
		gz, err := Gzip(maxPartGzip, items...)
		require.NoError(t, err)
		gzipped += len(gz)
		require.LessOrEqual(t, len(gz), partTarget, "chunk %d gzipped", i)
		if i < len(chunks)-1 {
			require.GreaterOrEqual(t, len(gz), 8<<10, "chunk %d gzipped", i)
		}
	}
	require.LessOrEqual(t, deflated, size+len(chunks)*64<<10, "every job deflated once, but after a cut")
	ratio := float64(size) / float64(gzipped)
	require.True(t, ratio >= 10 && ratio <= 20, "the jobs compress %.1f times, not like real ones", ratio)
	t.Logf("%d jobs, %d bytes, %d gzipped (%.1f times) in %d chunks", len(all), size, gzipped, ratio, len(chunks))

	again, deflated := chunkJobs(&cache, all)
	require.Equal(t, chunkNames(chunks), chunkNames(again))
	require.Zero(t, deflated, "the estimates were kept")
	again, _ = chunkJobs(nil, all)
	require.Equal(t, chunkNames(chunks), chunkNames(again), "without the estimates kept")
}

// TestChunkJobsStable changes one job among 10,000 that compress like real
// ones, at 25 places: the chunk that holds it changes, and in at most 3 of
// the 25 the next one too, when the end of the first moves. Only the
// chunks that changed are deflated again.
func TestChunkJobsStable(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	all := variedJobs(rnd, 10000)
	var cache Cache
	before, size := chunkJobs(&cache, all)
	require.Greater(t, len(before), 20)
	beforeNames := chunkNames(before)
	for _, change := range []struct {
		name string
		edit func(js []Job, at int) []Job
	}{
		{"a job added", func(js []Job, at int) []Job {
			added := variedJobs(rnd, 1)[0]
			added.Name = js[at].Name + "a"
			return slices.Insert(js, at, added)
		}},
		{"a job removed", func(js []Job, at int) []Job { return slices.Delete(js, at, at+1) }},
		{"a job changed", func(js []Job, at int) []Job {
			js[at].Item = slices.Concat(js[at].Item, []byte("    replacement: "+promfixture.RandomWord(rnd, 300)+"\n"))
			return js
		}},
	} {
		t.Run(change.name, func(t *testing.T) {
			one := 0
			for at := 100; at < len(all); at += len(all) / 25 {
				edited := change.edit(slices.Clone(all), at)
				var edit Cache
				edit.lastEst = cache.lastEst
				after, deflated := chunkJobs(&edit, edited)
				afterNames := chunkNames(after)
				gone := 0
				for _, c := range beforeNames {
					if !slices.Contains(afterNames, c) {
						gone++
					}
				}
				require.True(t, gone == 1 || gone == 2, "at %d: %d chunks changed", at, gone)
				require.InDelta(t, len(before), len(after), 1, "at %d: chunks", at)
				require.Less(t, deflated, size/10, "at %d: bytes of jobs deflated again, of %d", at, size)
				if gone == 1 {
					one++
				}
			}
			require.GreaterOrEqual(t, one, 22, "edits that changed one chunk only, of 25")
		})
	}
}
