package controlplane

import (
	"errors"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// childEnv marks the test binary run again by TestStartSetsLogger.
const childEnv = "PODRELOAD_CONTROLPLANE_CHILD"

// TestStartSetsLogger checks, in a process of its own (controller-runtime's
// logger is global and can be set once), that after Start an error logged
// through controller-runtime reaches stderr, and that its info messages
// and the "log.SetLogger(...) was never called" warning do not.
func TestStartSetsLogger(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		Start(t)
		ctrllog.Log.Info("info from the child")
		ctrllog.Log.Error(errors.New("boom"), "error from the child")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStartSetsLogger$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "error from the child")
	require.Contains(t, string(out), "boom")
	require.NotContains(t, string(out), "info from the child")
	require.NotContains(t, string(out), "SetLogger")
}
