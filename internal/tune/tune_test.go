package tune

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func rssFile(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

func TestTrimCode(t *testing.T) {
	before := rssFile(t)
	n, err := TrimCode()
	require.NoError(t, err)
	require.Positive(t, n)
	require.Less(t, rssFile(t), before)
}

// TestExecWithOneP runs this test in a child process, which ExecWithOneP
// executes again with one P unless GOMAXPROCS is set.
func TestExecWithOneP(t *testing.T) {
	if os.Getenv("PODRELOAD_TEST_CHILD") != "" {
		ExecWithOneP()
		fmt.Printf("procs=%d env=%q\n", runtime.GOMAXPROCS(0), os.Getenv("GOMAXPROCS"))
		return
	}
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, `procs=1 env=""`}, // Commands the sidecar runs do not inherit GOMAXPROCS.
		{[]string{"GOMAXPROCS=3"}, `procs=3 env="3"`},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestExecWithOneP$", "-test.v")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "GOMAXPROCS=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(append(cmd.Env, "PODRELOAD_TEST_CHILD=1"), tc.env...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		require.Contains(t, string(out), tc.want+"\n", tc.env)
	}
}

func TestTrimmer(t *testing.T) {
	tr := NewTrimmer(slog.New(slog.DiscardHandler), 20*time.Millisecond)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- tr.Run(ctx) }()
	for range 3 {
		tr.Worked() // Never blocks, even when nobody reads.
	}
	before := rssFile(t)
	deadline := time.Now().Add(10 * time.Second)
	for rssFile(t) >= before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	require.Less(t, rssFile(t), before, "the trimmer dropped code pages")
	cancel()
	require.NoError(t, <-done)
}

// TestMemoryLimit covers every --auto-gomemlimit-ratio prometheus-operator
// accepts: 0 or less sets no limit, above 1 counts as 1, and the cgroup's
// limit is used before the system's memory.
func TestMemoryLimit(t *testing.T) {
	const system = 8 << 30
	for _, tc := range []struct {
		name    string
		ratio   float64
		v2, v1  string // cgroup files; empty means absent
		fromEnv bool
		want    int64
		source  string
	}{
		{name: "0, their default, sets none", ratio: 0, v2: "1000\n"},
		{name: "negative sets none", ratio: -0.5, v2: "1000\n"},
		{name: "GOMEMLIMIT takes precedence", ratio: 0.9, v2: "1000\n", fromEnv: true},
		{name: "cgroup v2", ratio: 0.9, v2: "1000\n", v1: "2000\n", want: 900, source: "cgroup v2"},
		{name: "1", ratio: 1, v2: "1000\n", want: 1000, source: "cgroup v2"},
		{name: "above 1 counts as 1", ratio: 2.5, v2: "1000\n", want: 1000, source: "cgroup v2"},
		{name: "cgroup v1", ratio: 0.5, v1: "2000\n", want: 1000, source: "cgroup v1"},
		{name: "v2 without limit: system memory", ratio: 0.5, v2: "max\n", want: system / 2, source: "system memory"},
		{name: "v1 without limit: system memory", ratio: 0.5, v1: "9223372036854771712\n", want: system / 2, source: "system memory"},
		{name: "no cgroup: system memory", ratio: 0.25, want: system / 4, source: "system memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.v2 != "" {
				require.NoError(t, os.WriteFile(filepath.Join(root, "memory.max"), []byte(tc.v2), 0o644))
			}
			if tc.v1 != "" {
				require.NoError(t, os.Mkdir(filepath.Join(root, "memory"), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(root, "memory", "memory.limit_in_bytes"), []byte(tc.v1), 0o644))
			}
			limit, source := memoryLimit(tc.ratio, root, system, tc.fromEnv)
			require.Equal(t, tc.want, limit)
			require.Equal(t, tc.source, source)
		})
	}
}
