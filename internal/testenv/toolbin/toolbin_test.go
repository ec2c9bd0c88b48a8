package toolbin

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPath(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "promtool"), nil, 0o755))
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	require.NoError(t, err)
	for _, tc := range []struct {
		name, env, bin string
		want, err      string
	}{
		{name: "from PODRELOAD_BIN", env: dir, bin: "promtool", want: filepath.Join(dir, "promtool")},
		{name: "missing", env: dir, bin: "etcd",
			err: filepath.Join(dir, "etcd") + " is missing: run `make tools` to build it (stat " + filepath.Join(dir, "etcd") + ": no such file or directory)"},
		{name: "bin/ at the repository root", bin: "no-such-tool",
			err: filepath.Join(root, "bin", "no-such-tool") + " is missing: run `make tools` to build it (stat " + filepath.Join(root, "bin", "no-such-tool") + ": no such file or directory)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PODRELOAD_BIN", tc.env)
			got, err := Path(tc.bin)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
