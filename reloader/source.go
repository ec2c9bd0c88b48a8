package reloader

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cespare/xxhash/v2"
)

// dataDir is the symlink the kubelet swaps to publish a new version of a
// Secret, ConfigMap or projected volume.
const dataDir = "..data"

// hidden reports whether a directory entry is kubelet bookkeeping
// (..data, ..data_tmp, ..2026_11_21_...) rather than content.
func hidden(name string) bool { return strings.HasPrefix(name, "..") }

// entries sums up the content entries of a directory.
type entries struct {
	n       int    // how many
	names   uint64 // the sum of their names' xxhashes, whatever the order they are listed in
	kubelet bool   // whether the directory holds a ..data link
}

// same reports whether e and o list the same names.
func (e entries) same(o entries) bool { return e.n == o.n && e.names == o.names }

// Offsets in Linux's struct linux_dirent64, the records getdents64 returns:
// inode (8 bytes), offset (8), record length (2), type (1), name (NUL-terminated).
const (
	direntReclen = 16
	direntName   = 19
)

// list sums up the entries of dir (none when it is missing). It reads the
// kernel's records into a buffer on its stack and their names in place: a
// kubelet volume of thousands of files is listed on every change, and a
// list of their names would be most of the garbage of that change.
func list(dir string) (entries, error) {
	var (
		e   entries
		buf [2 << 10]byte // 50 records of 40 bytes: a read for every 50 entries
	)
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return e, nil
	}
	if err != nil {
		return e, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer syscall.Close(fd)
	for {
		n, err := syscall.ReadDirent(fd, buf[:])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return e, &fs.PathError{Op: "readdirent", Path: dir, Err: err}
		case n <= 0:
			return e, nil
		}
		for rec := buf[:n]; len(rec) > direntName; {
			size := int(binary.NativeEndian.Uint16(rec[direntReclen:]))
			if size <= direntName || size > len(rec) {
				return e, &fs.PathError{Op: "readdirent", Path: dir, Err: syscall.EBADMSG}
			}
			name := rec[direntName:size]
			name = name[:bytes.IndexByte(name, 0)]
			rec = rec[size:]
			switch {
			case string(name) == dataDir:
				e.kubelet = true
			case string(name) == "." || bytes.HasPrefix(name, []byte("..")): // .., and see hidden
			default:
				e.n++
				e.names += xxhash.Sum64(name)
			}
		}
	}
}

// settling reports whether dir is a kubelet volume between the swap of its
// ..data link and the update of its user-visible links (see hashDir).
func settling(dir string) bool {
	visible, _ := list(dir)
	if !visible.kubelet {
		return false
	}
	published, _ := list(filepath.Join(dir, dataDir))
	return !visible.same(published)
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
	visible, err := list(dir)
	if err != nil {
		return 0, false, fmt.Errorf("read dir: %w", err)
	}
	if visible.kubelet && consistent {
		target, err := os.Readlink(filepath.Join(dir, dataDir))
		published, _ := list(filepath.Join(dir, dataDir))
		if err != nil || !visible.same(published) {
			return 0, true, nil
		}
		h := xxhash.New()
		_, _ = h.WriteString(dataDir + "=" + target)
		_, _ = h.Write(binary.NativeEndian.AppendUint64(binary.NativeEndian.AppendUint64(nil, uint64(visible.n)), visible.names))
		return h.Sum64(), false, nil
	}
	sum, err = hashFiles(dir)
	return sum, false, err
}

// hashFiles hashes every regular file at the top level of dir on its own,
// and sums the hashes, so that the order of the listing does not matter.
func hashFiles(dir string) (uint64, error) {
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read dir: %w", err)
	}
	defer f.Close()
	h, chunk := xxhash.New(), make([]byte, 32<<10)
	var sum uint64
	for {
		names, err := f.Readdirnames(256)
		for _, name := range names {
			if hidden(name) {
				continue
			}
			file, err := hashFile(h, filepath.Join(dir, name), chunk)
			if err != nil {
				return 0, err
			}
			sum += file
		}
		if err == io.EOF {
			return sum, nil
		}
		if err != nil {
			return 0, fmt.Errorf("read dir: %w", err)
		}
	}
}

// hashFile returns the hash of path's name and content when it is a regular
// file (symlinks followed), and 0 when it is not or no longer exists.
func hashFile(h *xxhash.Digest, path string, chunk []byte) (uint64, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil // A dangling link or a file removed since it was listed.
	}
	if err != nil || !fi.Mode().IsRegular() {
		return 0, err
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	h.Reset()
	_, _ = h.WriteString(filepath.Base(path) + "\x00")
	size := 0
	for {
		n, err := f.Read(chunk)
		_, _ = h.Write(chunk[:n])
		size += n
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	_, _ = h.Write(binary.NativeEndian.AppendUint64(nil, uint64(size)))
	return h.Sum64(), nil
}

// gunzip returns b, the content of path, gunzipped when it starts with the
// gzip magic bytes.
func gunzip(path string, b []byte) ([]byte, error) {
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
