// Package toolbin locates, for tests only, the binaries that `make build
// tools` builds: Prometheus, promtool, kube-apiserver, etcd, the projector
// and the others.
package toolbin

import (
	"fmt"
	"os"
	"path/filepath"
)

// Path returns the path of the built binary name: $PODRELOAD_BIN/name when
// that variable is set, else bin/name at the repository root. It fails,
// saying how to build it, when the binary is missing.
func Path(name string) (string, error) {
	dir := os.Getenv("PODRELOAD_BIN")
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil && filepath.Base(d) != "tools" {
				dir = filepath.Join(d, "bin")
				break
			}
			if d == filepath.Dir(d) {
				return "", fmt.Errorf("find repository root from %s", wd)
			}
		}
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s is missing: run `make tools` to build it (%w)", path, err)
	}
	return path, nil
}
