package rulefiles

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ruleConfigMap(name, file string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, BinaryData: map[string][]byte{"a.yaml.gz": []byte(file)}}
}

// TestWrittenHold: held, a render writes copies of what was written for
// the same version, and says whether they differ from its own; not for
// another version, not when what was written is unknown, not without
// hold.
func TestWrittenHold(t *testing.T) {
	var w Written[int64]
	old, shards := []*corev1.ConfigMap{ruleConfigMap("r-0", "old")}, []*corev1.ConfigMap{ruleConfigMap("r-0", "new")}
	got, held := w.Hold(1, shards, true)
	require.Equal(t, shards, got, "nothing known")
	require.False(t, held)

	w.Wrote(1, old)
	got, held = w.Hold(1, shards, true)
	require.Equal(t, old, got)
	require.NotSame(t, old[0], got[0], "a copy")
	require.True(t, held)
	got, held = w.Hold(1, Clone(old), true)
	require.Equal(t, old, got)
	require.False(t, held, "the same files")
	got, held = w.Hold(2, shards, true)
	require.Equal(t, shards, got, "another version")
	require.False(t, held)
	got, held = w.Hold(1, shards, false)
	require.Equal(t, shards, got, "not held")
	require.False(t, held)

	w.Wrote(1, nil)
	got, held = w.Hold(1, shards, true)
	require.Equal(t, shards, got, "unknown after a failed write")
	require.False(t, held)

	w.Wrote(1, []*corev1.ConfigMap{})
	got, held = w.Hold(1, shards, true)
	require.Empty(t, got, "known: none written")
	require.True(t, held)
}
