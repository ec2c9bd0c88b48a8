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

// names lists the content entries of dir in order, and whether dir holds a
// ..data link. A missing dir has none. Only names are read: a kubelet
// volume of thousands of files is listed on every change.
func names(dir string) (list []string, kubelet bool, err error) {
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	all, err := f.Readdirnames(-1)
	list = all[:0]
	for _, name := range all {
		switch {
		case name == dataDir:
			kubelet = true
		case !hidden(name):
			list = append(list, name)
		}
	}
	slices.Sort(list)
	return list, kubelet, err
}

// settling reports whether dir is a kubelet volume between the swap of its
// ..data link and the update of its user-visible links (see hashDir).
func settling(dir string) bool {
	visible, kubelet, _ := names(dir)
	if !kubelet {
		return false
	}
	published, _, _ := names(filepath.Join(dir, dataDir))
	return !slices.Equal(visible, published)
}

// hashDir hashes the content a reader of dir sees: every regular file at its
// top level (symlinks followed), by name and bytes; subdirectories and
// kubelet bookkeeping entries are not content.
//
// A kubelet volume is hashed by the name of the directory ..data points to:
// the kubelet never changes a published directory, and publishes a new one
// only when the content differs. While its user-visible names differ from
// the published ones, the kubelet is between the swap of ..data and the
// update of its links, and a reader would see neither the old nor the new
// version: hashDir then reports settling, unless told to hash the content
// as it is.
func hashDir(dir string, consistent bool) (sum uint64, settling bool, err error) {
	visible, kubelet, err := names(dir)
	if err != nil {
		return 0, false, fmt.Errorf("read dir: %w", err)
	}
	h := xxhash.New()
	if kubelet && consistent {
		target, err := os.Readlink(filepath.Join(dir, dataDir))
		published, _, _ := names(filepath.Join(dir, dataDir))
		if err != nil || !slices.Equal(visible, published) {
			return 0, true, nil
		}
		_, _ = h.WriteString(dataDir + "=" + target)
		for _, name := range visible {
			_, _ = h.WriteString("\x00" + name)
		}
		return h.Sum64(), false, nil
	}
	for _, name := range visible {
		path := filepath.Join(dir, name)
		fi, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // A dangling link or a file removed since ReadDir.
		}
		if err != nil {
			return 0, false, err
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, false, err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(b))
		_, _ = h.Write(b)
	}
	return h.Sum64(), false, nil
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
