package reloader

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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
	// O_DIRECTORY|O_NONBLOCK: a named pipe in place of the directory is
	// refused rather than waited on.
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
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

// settlingDir reports whether dir is a kubelet volume between the swap of its
// ..data link and the update of its user-visible links (see hashDir).
func settlingDir(dir string) bool {
	visible, _ := list(dir)
	if !visible.kubelet {
		return false
	}
	published, _ := list(filepath.Join(dir, dataDir))
	return !visible.same(published)
}

// hashDir hashes the content a reader of dir sees: every regular file at its
// top level (symlinks followed), by name and bytes; subdirectories and
// kubelet bookkeeping entries are not content. An entry that cannot be read
// as a regular file (a symlink loop, a named pipe, a socket, a device, a
// file without read permission) is left out of the hash and returned in
// left: the rest still counts.
//
// A kubelet volume is hashed by the name of the directory ..data points to:
// the kubelet never changes a published directory, and publishes a new one
// only when the content differs. While its user-visible names differ from
// the published ones, the kubelet is between the swap of ..data and the
// update of its links, and a reader would see neither the old nor the new
// version: hashDir then reports settling, unless told to hash the content
// as it is.
func hashDir(dir string, consistent bool) (sum uint64, left []skipped, settling bool, err error) {
	visible, err := list(dir)
	if err != nil {
		return 0, nil, false, fmt.Errorf("read dir: %w", err)
	}
	if visible.kubelet && consistent {
		target, err := os.Readlink(filepath.Join(dir, dataDir))
		published, _ := list(filepath.Join(dir, dataDir))
		if err != nil || !visible.same(published) {
			return 0, nil, true, nil
		}
		h := xxhash.New()
		_, _ = h.WriteString(dataDir + "=" + target)
		_, _ = h.Write(binary.NativeEndian.AppendUint64(binary.NativeEndian.AppendUint64(nil, uint64(visible.n)), visible.names))
		return h.Sum64(), nil, false, nil
	}
	sum, left, err = hashFiles(dir)
	return sum, left, false, err
}

// hashFiles hashes every regular file at the top level of dir on its own,
// and sums the hashes, so that the order of the listing does not matter.
// The entries it cannot read are left out, and returned.
func hashFiles(dir string) (uint64, []skipped, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("read dir: %w", err)
	}
	defer f.Close()
	h, chunk := xxhash.New(), make([]byte, 32<<10)
	var (
		sum  uint64
		left []skipped
	)
	for {
		names, err := f.Readdirnames(256)
		for _, name := range names {
			if hidden(name) {
				continue
			}
			path := filepath.Join(dir, name)
			file, err := hashFile(h, path, chunk)
			if err != nil {
				left = append(left, skipped{name: path, reason: reasonUnreadable, err: err})
				continue
			}
			sum += file
		}
		if err == io.EOF {
			return sum, left, nil
		}
		if err != nil {
			return 0, nil, fmt.Errorf("read dir: %w", err)
		}
	}
}

// hashFile returns the hash of path's name and content when it is a regular
// file (symlinks followed), and 0 when it is a directory or no longer
// exists. A named pipe, a socket or a device is an error: the process would
// block reading it, or read something that is not a file. It is refused
// before it is opened: opening some devices does something.
func hashFile(h *xxhash.Digest, path string, chunk []byte) (uint64, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, nil // A dangling link or a file removed since it was listed.
	case err != nil:
		return 0, err
	case fi.IsDir():
		return 0, nil
	case !fi.Mode().IsRegular():
		return 0, &fs.PathError{Op: "open", Path: path, Err: notRegularError{fi.Mode()}}
	}
	f, _, err := openRegular(path)
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
			return 0, &fs.PathError{Op: "read", Path: path, Err: err}
		}
	}
	_, _ = h.Write(binary.NativeEndian.AppendUint64(nil, uint64(size)))
	return h.Sum64(), nil
}

// notRegularError is the error for a file that is not a regular file.
type notRegularError struct{ mode fs.FileMode }

func (e notRegularError) Error() string {
	kind := "irregular file"
	switch m := e.mode.Type(); {
	case m&fs.ModeDir != 0:
		kind = "directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "named pipe"
	case m&fs.ModeSocket != 0:
		kind = "socket"
	case m&fs.ModeCharDevice != 0:
		kind = "character device"
	case m&fs.ModeDevice != 0:
		kind = "device"
	}
	return "not a regular file (" + kind + ")"
}

// openRegular opens path, a regular file (symlinks followed), for reading,
// and returns its size. Anything else is refused without blocking: the file
// is opened without waiting for the writer of a named pipe (O_NONBLOCK),
// then checked, and a regular file is read in blocking mode as any other
// (FUSE file systems see the flag).
func openRegular(path string) (*os.File, int64, error) {
	var (
		fd  int
		err error
	)
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, 0, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st syscall.Stat_t
	if err = syscall.Fstat(fd, &st); err != nil {
		err = &fs.PathError{Op: "stat", Path: path, Err: err}
	} else if typ := st.Mode & syscall.S_IFMT; typ != syscall.S_IFREG {
		err = &fs.PathError{Op: "open", Path: path, Err: notRegularError{fileType(typ)}}
	} else if err = syscall.SetNonblock(fd, false); err != nil {
		err = &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if err != nil {
		_ = syscall.Close(fd)
		return nil, 0, err
	}
	return os.NewFile(uintptr(fd), path), st.Size, nil
}

// fileType returns the fs.FileMode type bits for a stat(2) S_IFMT value.
func fileType(typ uint32) fs.FileMode {
	switch typ {
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
}

// tooLargeError is the error for content larger than a bound.
type tooLargeError struct{ limit int64 }

func (e tooLargeError) Error() string { return "larger than " + formatSize(e.limit) }

// formatSize writes n bytes in the largest binary unit that divides it.
func formatSize(n int64) string {
	switch {
	case n > 0 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n > 0 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// readRegular returns the content of path, a regular file of at most limit
// bytes (see openRegular).
func readRegular(path string, limit int64) ([]byte, error) {
	f, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := readAll(f, size, limit)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return b, nil
}

// readAll reads r to its end, in a buffer sized for hint bytes, and refuses
// more than limit bytes without reading (or allocating for) more than one
// byte past it.
func readAll(r io.Reader, hint, limit int64) ([]byte, error) {
	if hint > limit {
		return nil, tooLargeError{limit}
	}
	b := make([]byte, 0, max(hint, 512)+1) // +1: the end is seen without growing.
	r = io.LimitReader(r, limit+1)
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, int(min(int64(cap(b)), limit+1-int64(len(b)))))
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if int64(len(b)) > limit {
			return nil, tooLargeError{limit}
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// gunzip returns b, the content of path, gunzipped when it starts with the
// gzip magic bytes; more than limit bytes gunzipped is an error.
func gunzip(path string, b []byte, limit int64) ([]byte, error) {
	if !gzipped(b) {
		return b, nil
	}
	out, err := gunzipAll(b, limit)
	if err != nil {
		return nil, fmt.Errorf("gunzip %s: %w", path, err)
	}
	return out, nil
}

// gzipped reports whether b starts with the gzip magic bytes.
func gzipped(b []byte) bool { return bytes.HasPrefix(b, []byte{0x1f, 0x8b}) }

// gunzipAll returns b gunzipped, at most limit bytes. Content over the
// limit (a gzip bomb) is never held: only what is within it is.
func gunzipAll(b []byte, limit int64) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	// The gzip trailer holds the size modulo 4 GiB: a hint, not a promise.
	hint := int64(binary.LittleEndian.Uint32(b[len(b)-4:]))
	if hint > limit {
		// Too large, if the trailer is right: counted, not held,
		// to tell a bomb from a corrupt trailer.
		n, err := io.Copy(io.Discard, io.LimitReader(zr, limit+1))
		switch {
		case err != nil:
			return nil, err
		case n > limit:
			return nil, tooLargeError{limit}
		}
		if err := zr.Reset(bytes.NewReader(b)); err != nil {
			return nil, err
		}
	}
	return readAll(zr, min(hint, limit), limit)
}

// writeAtomic replaces path with b so that a reader sees either the old or the
// new content: a temporary file in the same directory, fsync, rename. The
// directory is created when missing. An unchanged file is not rewritten.
func writeAtomic(path string, b []byte) error {
	// Whatever is at path is never opened for long nor waited on, and
	// never read past the size of b: the rename replaces it.
	if old, err := readRegular(path, int64(len(b))); err == nil && bytes.Equal(old, b) {
		return nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create output dir: %w", err)
	}
	return replaceFile(path, 0o644, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// replaceFile replaces the file at path, in an existing directory, with
// what write writes, mode perm: a temporary file beside it, fsync, rename.
func replaceFile(path string, perm os.FileMode, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), tempPrefix(path)+"*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	bw := bufio.NewWriter(f)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Chmod(perm)
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

// tempPrefix is how the names of writeAtomic's temporary files for path
// start; os.CreateTemp ends them with decimal digits.
func tempPrefix(path string) string { return "." + filepath.Base(path) + ".tmp" }

// removeTemps removes the temporary files writeAtomic leaves next to path
// when the process is killed while it writes, and returns their names.
// Nothing else is touched: only regular files named exactly as writeAtomic
// names them.
func removeTemps(path string) ([]string, error) {
	dir, prefix := filepath.Dir(path), tempPrefix(path)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		digits, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" || !e.Type().IsRegular() {
			continue
		}
		name := filepath.Join(dir, e.Name())
		if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, err
		}
		removed = append(removed, name)
	}
	return removed, nil
}
