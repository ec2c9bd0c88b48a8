package node

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSweepRemovesWhatANodeLeft leaves what a killed node leaves (a
// process naming its directory, a mount under it, its network namespace
// and veth pair, a changed sysctl) and checks that sweep removes all of it.
func TestSweepRemovesWhatANodeLeft(t *testing.T) {
	require.Zero(t, os.Geteuid(), "the node's teardown needs root: run as root")
	f, err := lock(t.Context())
	require.NoError(t, err)
	defer f.Close()
	// A node killed before this test (an earlier run's, on this machine)
	// left its own: Start sweeps it away first, and so does this test.
	require.NoError(t, Clean(DefaultDir))
	dir := filepath.Join(t.TempDir(), "node")
	// A failed assertion below must not leave the namespace and the mount
	// to the node tests that follow.
	t.Cleanup(func() { _ = Clean(dir) })
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "mnt"), 0o755))
	require.NoError(t, saveSysctls(dir))
	panicBefore, err := os.ReadFile("/proc/sys/kernel/panic")
	require.NoError(t, err)

	require.NoError(t, syscall.Mount("tmpfs", filepath.Join(dir, "mnt"), "tmpfs", 0, ""))
	require.NoError(t, network())
	proc := exec.Command("sh", "-c", "sleep 600; : "+dir)
	require.NoError(t, proc.Start())
	waited := make(chan error, 1)
	go func() { waited <- proc.Wait() }()
	require.NoError(t, os.WriteFile("/proc/sys/kernel/panic", []byte("17"), 0o644))

	require.NoError(t, sweep(dir, slog.New(slog.DiscardHandler)))

	require.Error(t, <-waited, "the process naming the directory is killed")
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	require.NotContains(t, string(mounts), dir)
	require.NoFileExists(t, netnsPath(netnsName))
	require.NoDirExists(t, "/sys/class/net/"+hostVeth)
	panicAfter, err := os.ReadFile("/proc/sys/kernel/panic")
	require.NoError(t, err)
	require.Equal(t, strings.TrimSpace(string(panicBefore)), strings.TrimSpace(string(panicAfter)))
	require.NoDirExists(t, dir)
}
