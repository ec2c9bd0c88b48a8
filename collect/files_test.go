package collect

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/internal/testenv/testlog"
)

func newTestStore(t *testing.T) *store {
	t.Helper()
	return newStore(discard(), 0o644, newMetrics(prometheus.NewRegistry()))
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// TestStoreOwners: a file two objects have stays while either does, with
// the content of the last written, then of the one left.
func TestStoreOwners(t *testing.T) {
	dir := t.TempDir()
	s := newTestStore(t)
	path := filepath.Join(dir, "shared.json")
	a := objectKey{ConfigMap, "a", "x"}
	b := objectKey{Secret, "b", "y"}
	require.True(t, s.set(a, "1", map[string][]byte{path: []byte("A")}, nil))
	require.False(t, s.set(a, "1", map[string][]byte{path: []byte("A")}, nil), "unchanged")
	require.True(t, s.set(b, "2", map[string][]byte{path: []byte("B")}, nil))
	require.Equal(t, "B", read(t, path))
	require.False(t, s.set(a, "1", map[string][]byte{path: []byte("A")}, nil), "listed again unchanged: no takeover")
	require.Equal(t, "B", read(t, path))
	require.True(t, s.remove(b))
	require.Equal(t, "A", read(t, path))
	require.True(t, s.set(b, "3", map[string][]byte{path: []byte("B2")}, nil))
	require.True(t, s.set(a, "4", map[string][]byte{path: []byte("A2")}, nil))
	require.False(t, s.remove(b), "the winner stays")
	require.Equal(t, "A2", read(t, path))
	require.True(t, s.remove(a))
	require.NoFileExists(t, path)
	require.Zero(t, testutil.ToFloat64(s.m.files))
}

// TestStoreKeepsFileOfFailedKey: a key whose content could not be read
// keeps its file; a key gone removes its own.
func TestStoreKeepsFileOfFailedKey(t *testing.T) {
	dir := t.TempDir()
	s := newTestStore(t)
	a := objectKey{ConfigMap, "a", "x"}
	p1, p2 := filepath.Join(dir, "one"), filepath.Join(dir, "two")
	require.True(t, s.set(a, "1", map[string][]byte{p1: []byte("1"), p2: []byte("2")}, nil))
	require.False(t, s.set(a, "2", map[string][]byte{p1: []byte("1")}, map[string]bool{p2: true}))
	require.Equal(t, "2", read(t, p2))
	require.True(t, s.set(a, "3", map[string][]byte{p1: []byte("1")}, nil))
	require.NoFileExists(t, p2)
}

// TestStoreLeavesIdenticalFile: a file an earlier run wrote with the same
// content is not written again (no reload after a container restart).
func TestStoreLeavesIdenticalFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "d.json")
	require.NoError(t, os.WriteFile(path, []byte("same"), 0o644))
	s := newTestStore(t)
	require.False(t, s.set(objectKey{ConfigMap, "a", "x"}, "1", map[string][]byte{path: []byte("same")}, nil))
	require.Zero(t, testutil.ToFloat64(s.m.fileWrites))
}

// TestStoreWriteError: a folder that cannot be written is an error counted
// and logged, and nothing changed.
func TestStoreWriteError(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o644))
	var logs testlog.Buffer
	s := newStore(slog.New(slog.NewTextHandler(&logs, nil)), 0o644, newMetrics(prometheus.NewRegistry()))
	path := filepath.Join(blocker, "sub", "d.json")
	require.False(t, s.set(objectKey{ConfigMap, "a", "x"}, "1", map[string][]byte{path: []byte("x")}, nil))
	require.Equal(t, 1.0, testutil.ToFloat64(s.m.fileErrors))
	require.Contains(t, logs.String(), `level=ERROR msg="write file" object="configmap a/x" path=`+path+` err="mkdir `+blocker+`: not a directory"`)
}

func TestWriteAtomicMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "f")
	require.NoError(t, writeAtomic(path, []byte("x"), 0o440))
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o440), st.Mode().Perm())
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left")
}
