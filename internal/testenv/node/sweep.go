package node

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sysctls are the global kernel settings the kubelet changes
// (protectKernelDefaults is false): saved by Up, restored by sweep.
func sysctls() []string {
	return []string{"kernel/panic", "kernel/panic_on_oops", "vm/overcommit_memory", "vm/panic_on_oom",
		"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}
}

// hostPaths are the machine's paths a node may create whatever its
// configuration says; those that did not exist before Up are removed.
func hostPaths() []string {
	return []string{"/run/netns", "/run/containerd", "/var/lib/cni", "/var/log/containers", "/var/log/pods", "/var/lib/kubelet"}
}

// saveSysctls records, in dir, the sysctls and which host paths are
// missing, for sweep.
func saveSysctls(dir string) error {
	var b strings.Builder
	for _, s := range sysctls() {
		v, err := os.ReadFile("/proc/sys/" + s)
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "%s=%s\n", s, strings.TrimSpace(string(v)))
	}
	for _, p := range hostPaths() {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(&b, "created %s\n", p)
		}
	}
	return os.WriteFile(filepath.Join(dir, "restore"), []byte(b.String()), 0o600)
}

// sweep undoes everything a node started or changed, whether it stopped
// or crashed: it kills every process whose command line names dir (the
// components and containerd's shims) and every process of the kubepods
// cgroups (the containers), unmounts what is mounted under dir, deletes the
// network namespace, removes the cgroups, restores the sysctls and removes
// the host paths the node created, then dir.
func sweep(dir string, logger *slog.Logger) error {
	var errs []error
	restore, _ := os.ReadFile(filepath.Join(dir, "restore"))
	// The kernel reaps killed processes: look again on each tick.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(30 * time.Second); ; <-tick.C {
		pids := append(processesNaming(dir), cgroupProcesses()...)
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			errs = append(errs, fmt.Errorf("processes %v survive SIGKILL", pids))
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	created := map[string]bool{}
	for line := range strings.Lines(string(restore)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "created "); ok {
			created[p] = true
		}
	}
	if _, err := os.Stat(netnsPath(netnsName)); err == nil {
		if err := run("ip", "netns", "delete", netnsName); err != nil {
			errs = append(errs, err)
		}
	}
	// Deleting the namespace deletes the pair, but not at once; a failed
	// Up may have left the machine's end alone.
	if _, err := os.Stat("/sys/class/net/" + hostVeth); err == nil {
		if err := run("ip", "link", "delete", hostVeth); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
			errs = append(errs, err)
		}
	}
	prefixes := []string{dir + "/"}
	if created["/run/netns"] {
		prefixes = append(prefixes, "/run/netns")
	}
	if err := unmountUnder(prefixes...); err != nil {
		errs = append(errs, err)
	}
	if err := removeCgroups(); err != nil {
		errs = append(errs, err)
	}
	for line := range strings.Lines(string(restore)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			if err := os.WriteFile("/proc/sys/"+k, []byte(v), 0o644); err != nil {
				errs = append(errs, fmt.Errorf("restore sysctl %s: %w", k, err))
			}
		}
	}
	for p := range created {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 && len(restore) > 0 {
		logger.Info("node cleaned up", "dir", dir)
	}
	return errors.Join(errs...)
}

func netnsPath(name string) string { return "/run/netns/" + name }

// processesNaming returns the processes, other than this one, whose
// command line contains dir.
func processesNaming(dir string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), dir) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// kubepodsCgroups returns the kubelet's cgroup directories, one per cgroup
// hierarchy.
func kubepodsCgroups() []string {
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	if _, err := os.Stat("/sys/fs/cgroup/kubepods"); err == nil {
		dirs = append(dirs, "/sys/fs/cgroup/kubepods") // cgroup v2 only
	}
	return dirs
}

// cgroupProcesses returns the processes of the kubepods cgroups.
func cgroupProcesses() []int {
	var pids []int
	for _, root := range kubepodsCgroups() {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(p)
			for f := range strings.FieldsSeq(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	slices.Sort(pids)
	return slices.Compact(pids)
}

// removeCgroups removes the kubepods cgroups, children first.
func removeCgroups() error {
	var errs []error
	for _, root := range kubepodsCgroups() {
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for _, d := range slices.Backward(dirs) {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// unmountUnder unmounts every mount point under the prefixes, the deepest
// first.
func unmountUnder(prefixes ...string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var points []string
	for s := bufio.NewScanner(f); s.Scan(); {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		// Octal escapes (\040 for a space) do not occur in our paths.
		p := fields[4]
		for _, prefix := range prefixes {
			if strings.HasPrefix(p, prefix) || p == strings.TrimSuffix(prefix, "/") {
				points = append(points, p)
				break
			}
		}
	}
	slices.SortFunc(points, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	var errs []error
	for _, p := range slices.Compact(points) {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}
