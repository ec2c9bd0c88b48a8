package kube

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// events records the Events emitted.
type events struct {
	recorder.EventRecorder
	got []string
}

func (e *events) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	e.got = append(e.got, strings.Join([]string{eventtype, reason, action, note, args[0].(string)}, "|"))
}

// TestWarn: a Warning Event of a reconcile, its note cut, never read as
// a format.
func TestWarn(t *testing.T) {
	e := &events{}
	Warn(e, &corev1.Pod{}, nil, "Rejected", "100%s "+strings.Repeat("x", MaxEventNote))
	require.Len(t, e.got, 1)
	parts := strings.Split(e.got[0], "|")
	require.Equal(t, []string{corev1.EventTypeWarning, "Rejected", "Reconcile", "%s"}, parts[:4])
	require.Len(t, parts[4], MaxEventNote)
	require.True(t, strings.HasPrefix(parts[4], "100%s x"))
}

// TestTold: what was told last time is not told again, what went and
// comes back is; each object apart; Forget forgets.
func TestTold(t *testing.T) {
	var told Told[string]
	a, b := types.NamespacedName{Name: "a"}, types.NamespacedName{Name: "b"}
	require.Equal(t, []string{"x", "y"}, told.New(a, []string{"x", "y"}))
	require.Equal(t, []string{"z"}, told.New(a, []string{"y", "z"}))
	require.Equal(t, []string{"x"}, told.New(a, []string{"x", "z"}), "told again once gone")
	require.Equal(t, []string{"x"}, told.New(b, []string{"x"}))
	require.Empty(t, told.New(a, []string{"x", "z"}))
	told.Forget(a)
	require.Equal(t, []string{"x", "z"}, told.New(a, []string{"x", "z"}))
}
