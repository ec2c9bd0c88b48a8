package reloader

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// dataDir is the symlink the kubelet swaps to publish a new version of a
// Secret, ConfigMap or projected volume.
const dataDir = "..data"

// hidden reports whether a directory entry is kubelet bookkeeping
// (..data, ..data_tmp, ..2026_11_21_...) rather than content.
func hidden(name string) bool { return strings.HasPrefix(name, "..") }

// settling reports whether dir is a kubelet volume caught between the swap of
// its ..data symlink and the update of its user-visible links: a reader would
// see neither the old nor the new version. Each kubelet update ends with the
// visible names equal to the names in ..data.
func settling(dir string) bool {
	visible, kubelet := names(dir)
	if !kubelet {
		return false
	}
	published, _ := names(filepath.Join(dir, dataDir))
	return !slices.Equal(visible, published)
}

// names lists the content entries of dir in order, and whether dir holds a
// ..data link.
func names(dir string) (list []string, kubelet bool) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		switch {
		case e.Name() == dataDir:
			kubelet = true
		case !hidden(e.Name()):
			list = append(list, e.Name())
		}
	}
	return list, kubelet
}

// hashDir hashes the content a reader of dir sees: every regular file at its
// top level (symlinks followed), by name and bytes. Subdirectories and kubelet
// bookkeeping entries are not content. A missing dir hashes as empty.
func hashDir(dir string) (uint64, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read dir: %w", err)
	}
	h := xxhash.New()
	for _, e := range entries {
		if hidden(e.Name()) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		fi, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // A dangling link or a file removed since ReadDir.
		}
		if err != nil {
			return 0, err
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", e.Name(), len(b))
		_, _ = h.Write(b)
	}
	return h.Sum64(), nil
}

// readConfig reads path and gunzips it when it starts with the gzip magic bytes.
func readConfig(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		return b, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("gunzip %s: %w", path, err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("gunzip %s: %w", path, err)
	}
	return out, nil
}

// writeAtomic replaces path with b so that a reader sees either the old or the
// new content: a temporary file in the same directory, fsync, rename. The
// directory is created when missing. An unchanged file is not rewritten.
func writeAtomic(path string, b []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
		return nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create output dir: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
