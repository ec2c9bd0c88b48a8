// Package procstatus is for benchmarks only: it reads a process's memory
// figures from /proc/PID/status.
package procstatus

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// MiB returns the resident set (VmRSS), its anonymous part (RssAnon) and
// the peak resident set (VmHWM) of the process pid, in MiB.
func MiB(tb testing.TB, pid int) (rss, anon, peak float64) {
	tb.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(tb, err)
	for line := range strings.SplitSeq(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "RssAnon:":
			anon = kb / 1024
		case "VmHWM:":
			peak = kb / 1024
		}
	}
	return rss, anon, peak
}
