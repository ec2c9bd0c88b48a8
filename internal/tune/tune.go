// Package tune sizes the Go runtime of the podreload binaries: the memory
// limit (--auto-gomemlimit-ratio), and for the sidecars one P from the
// start, a smaller heap goal and code pages dropped when they are quiet.
package tune

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// SetMemoryLimit sets the Go memory limit to ratio, the value of
// --auto-gomemlimit-ratio, of the memory available to the process, as
// prometheus-operator's binaries do: the cgroup's memory limit (v2, else
// v1), else the system's memory. A ratio of 0 or less sets none (their
// default), one above 1 counts as 1, and GOMEMLIMIT in the environment
// takes precedence. It logs and returns the limit set, 0 for none.
func SetMemoryLimit(logger *slog.Logger, ratio float64) int64 {
	_, fromEnv := os.LookupEnv("GOMEMLIMIT")
	var info syscall.Sysinfo_t
	var system uint64
	if syscall.Sysinfo(&info) == nil {
		system = uint64(info.Totalram) * uint64(info.Unit)
	}
	limit, source := memoryLimit(ratio, "/sys/fs/cgroup", system, fromEnv)
	switch {
	case limit > 0:
		debug.SetMemoryLimit(limit)
		logger.Info("go memory limit set", "limit_bytes", limit, "ratio", ratio, "of", source)
	case fromEnv:
		logger.Debug("go memory limit left to GOMEMLIMIT", "ratio", ratio)
	default:
		logger.Debug("go memory limit not set", "ratio", ratio)
	}
	return limit
}

// unlimited is where cgroup v1 memory limits start to mean "no limit"
// (their "unlimited" is the largest page-aligned int64).
const unlimited = 1 << 62

// memoryLimit returns the memory limit for ratio of the memory available
// (the cgroup's under cgroupRoot, else system bytes) and where that figure
// came from; 0 when ratio disables it or fromEnv.
func memoryLimit(ratio float64, cgroupRoot string, system uint64, fromEnv bool) (int64, string) {
	if ratio <= 0 || fromEnv {
		return 0, ""
	}
	ratio = min(ratio, 1)
	available, source := uint64(0), ""
	for _, f := range []struct{ path, source string }{
		{filepath.Join(cgroupRoot, "memory.max"), "cgroup v2"},
		{filepath.Join(cgroupRoot, "memory", "memory.limit_in_bytes"), "cgroup v1"},
	} {
		b, err := os.ReadFile(f.path)
		if err != nil {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n == 0 || n >= unlimited {
			break // "max": no limit in this cgroup.
		}
		available, source = n, f.source
		break
	}
	if available == 0 {
		available, source = system, "system memory"
	}
	n := int64(float64(available) * ratio)
	if n <= 0 {
		return 0, ""
	}
	return n, source
}

// Trimmer drops code pages once the process has been quiet for a while:
// after start-up, and after each burst of work it is told about.
type Trimmer struct {
	logger *slog.Logger
	quiet  time.Duration
	kick   chan struct{}
}

// NewTrimmer returns a Trimmer that trims after quiet.
func NewTrimmer(logger *slog.Logger, quiet time.Duration) *Trimmer {
	return &Trimmer{logger: logger, quiet: quiet, kick: make(chan struct{}, 1)}
}

// Worked tells the Trimmer that the process just did some work; it never blocks.
func (t *Trimmer) Worked() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// Run trims quiet after start and after the last Worked, until ctx is done.
func (t *Trimmer) Run(ctx context.Context) error {
	timer := time.NewTimer(t.quiet)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.kick:
			timer.Reset(t.quiet)
		case <-timer.C:
			debug.FreeOSMemory() // Return the heap freed by the burst, too.
			if n, err := TrimCode(); err != nil {
				t.logger.Debug("trim code pages", "err", err)
			} else {
				t.logger.Debug("trimmed code pages", "bytes", n)
			}
		}
	}
}

// oneP marks the environment of a process that ExecWithOneP executed again.
const oneP = "PODRELOAD_ONE_P"

// ExecWithOneP executes the program again, in place (same PID, arguments and
// environment), with GOMAXPROCS=1, unless GOMAXPROCS is set: only a process
// started with one P has one P during package initialisation. A sidecar
// that starts with two and is cut down to one by Runtime idles with about
// 0.5 MiB more anonymous memory (measured: 2.5 against 2.0 MiB): more heap
// spans, half used, and more of the runtime's lists of spans, which it never
// frees. Call it first thing in main.
// In the process executed again, it removes GOMAXPROCS from the environment,
// so that commands the sidecar runs do not inherit it. When executing fails,
// it returns and the process goes on with the Ps the runtime chose.
func ExecWithOneP() {
	if os.Getenv(oneP) != "" {
		_ = os.Unsetenv(oneP)
		_ = os.Unsetenv("GOMAXPROCS")
		return
	}
	if _, set := os.LookupEnv("GOMAXPROCS"); set {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	_ = syscall.Exec(exe, os.Args, append(os.Environ(), "GOMAXPROCS=1", oneP+"=1"))
}

// Runtime sizes the Go runtime for a sidecar whose live heap is a few
// hundred kilobytes and whose work is a burst now and then: one P (each P
// caches memory of its own), a collection when the heap has grown by 50%
// rather than 100%, and no heap profiling (nothing serves the profiles, and
// their hash table would be the biggest thing in memory). GOMAXPROCS and
// GOGC in the environment take precedence.
func Runtime() {
	runtime.MemProfileRate = 0
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}

// TrimCode drops this process's mappings of its own executable's read-only
// segments (code and constant data). Most of those pages were touched once,
// during start-up; the kernel maps back, from the page cache, only the ones
// used afterwards. It returns the number of bytes advised.
func TrimCode() (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	total := 0
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[5] != exe || strings.Contains(f[1], "w") {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil {
			continue
		}
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(end-start), madvDontNeed); errno != 0 {
			return total, fmt.Errorf("madvise %s: %w", f[0], errno)
		}
		total += int(end - start)
	}
	return total, nil
}

const madvDontNeed = 4
