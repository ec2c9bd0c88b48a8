package reloader

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// Source supplies the configuration and the rule files from elsewhere than
// the file system, such as the Kubernetes API (package apisource). The
// Reloader renders the configuration as it would ConfigFile and writes the
// files into Options.RulesDir.
type Source interface {
	// Changed receives after the content may have changed.
	Changed() <-chan struct{}
	// Snapshot returns the current content, or an error saying what is
	// missing or not yet known. It must not block.
	Snapshot() (Snapshot, error)
}

// ErrNotRead is what a Source's Snapshot wraps before it has read its
// content once: Run then waits for Changed, without counting a failure.
var ErrNotRead = errors.New("not read yet from the API server")

// Snapshot is the content of a Source at one moment.
type Snapshot struct {
	// Config is the configuration as stored, plain or gzipped.
	Config []byte
	// ConfigName names where Config comes from in errors and logs.
	ConfigName string
	// ConfigErr, when set, says why the configuration cannot be read now
	// (its Secret is missing, or lacks its key): Config is ignored, the
	// last good configuration is kept, and Files still apply. Rules and
	// configuration are independent inputs: one missing does not hold
	// back the other.
	ConfigErr error
	// Files are written into Options.RulesDir, by path relative to it:
	// "<group>/<name>", such as a ConfigMap's name and one of its keys.
	// Files the Source no longer has are removed after the others are
	// written. A file "<group>/X.gz" is written gunzipped as
	// "<group>/X" (see Options.RulesDir).
	Files map[string]string
	// Describe names a file of Files in errors and logs, such as the
	// ConfigMap and key it comes from; nil names it by its path.
	Describe func(name string) string
}

// describe names a file of Files.
func (s Snapshot) describe(name string) string {
	if s.Describe == nil {
		return name
	}
	return s.Describe(name)
}

// hash sums up the snapshot's input: the configuration as stored and every
// file by name and content, whatever the map's order.
func (s Snapshot) hash() uint64 {
	sum := xxhash.Sum64(s.Config)
	for name, content := range s.Files {
		sum += fileHash(name, content)
	}
	return sum
}

func fileHash(name, content string) uint64 {
	d := xxhash.New()
	_, _ = d.WriteString(name)
	_, _ = d.WriteString("\x00")
	_, _ = d.WriteString(content)
	return d.Sum64()
}

// validFile reports whether name is a path RulesDir can hold: one directory
// level, no hidden or relative element.
func validFile(name string) bool {
	dir, base, ok := strings.Cut(name, "/")
	return ok && validElem(dir) && validElem(base)
}

func validElem(s string) bool {
	return s != "" && !strings.HasPrefix(s, ".") && !strings.ContainsAny(s, "/\x00")
}

// filesWriter keeps a directory of files equal to a set of them. It knows
// what it wrote, so a change rewrites only the files that differ; its first
// write reads what the directory holds (left by an init container, or by an
// earlier run of the process).
type filesWriter struct {
	dir     string
	written map[string]uint64 // path relative to dir → fileHash; nil before the first write
}

// write makes dir hold exactly files: new and changed files first, each
// atomically, then the removal of those not in files (and of directories
// left empty), so that a reader never misses a file that stays.
func (w *filesWriter) write(files map[string]string) error {
	if w.written == nil {
		on, err := w.scan()
		if err != nil {
			return err
		}
		w.written = on
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if !validFile(name) {
			return fmt.Errorf("write %s: %q is not a file name of the form group/name", w.dir, name)
		}
		sum := fileHash(name, files[name])
		if old, ok := w.written[name]; ok && old == sum {
			continue
		}
		if err := writeAtomic(filepath.Join(w.dir, name), []byte(files[name])); err != nil {
			delete(w.written, name) // It may be half there: compared again next time.
			return err
		}
		w.written[name] = sum
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(w.written)) {
		if _, keep := files[name]; keep {
			continue
		}
		if err := os.Remove(filepath.Join(w.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		delete(w.written, name)
		// Fails, as it should, while the directory holds another file.
		_ = os.Remove(filepath.Join(w.dir, filepath.Dir(name)))
	}
	return errors.Join(errs...)
}

// scan returns the files dir holds, two levels deep, hashed as write hashes
// them; anything else in it is left alone.
func (w *filesWriter) scan() (map[string]uint64, error) {
	on := map[string]uint64{}
	groups, err := os.ReadDir(w.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return on, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read rules dir: %w", err)
	}
	for _, g := range groups {
		if !g.IsDir() || !validElem(g.Name()) {
			continue
		}
		files, err := os.ReadDir(filepath.Join(w.dir, g.Name()))
		if err != nil {
			return nil, fmt.Errorf("read rules dir: %w", err)
		}
		for _, f := range files {
			if !f.Type().IsRegular() {
				continue
			}
			if isTemp(f.Name()) { // Left by a write a kill interrupted.
				_ = os.Remove(filepath.Join(w.dir, g.Name(), f.Name()))
			}
			if !validElem(f.Name()) {
				continue
			}
			name := g.Name() + "/" + f.Name()
			b, err := readRegular(filepath.Join(w.dir, name), DefaultMaxConfigSize)
			if err != nil {
				return nil, fmt.Errorf("read rules dir: %w", err)
			}
			on[name] = fileHash(name, string(b))
		}
	}
	return on, nil
}

// isTemp reports whether name is one of writeAtomic's temporary files
// (see tempPrefix).
func isTemp(name string) bool {
	rest, ok := strings.CutPrefix(name, ".")
	i := strings.LastIndex(rest, ".tmp")
	if !ok || i <= 0 {
		return false
	}
	digits := rest[i+len(".tmp"):]
	return digits != "" && strings.Trim(digits, "0123456789") == ""
}
