package collect

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// objectKey names one ConfigMap or Secret.
type objectKey struct {
	resource  Resource
	namespace string
	name      string
}

func (k objectKey) String() string { return string(k.resource) + " " + k.namespace + "/" + k.name }

// less orders keys: the greatest owner of a file takes it over when the
// one whose content it holds goes.
func (k objectKey) less(o objectKey) bool {
	if k.resource != o.resource {
		return k.resource < o.resource
	}
	if k.namespace != o.namespace {
		return k.namespace < o.namespace
	}
	return k.name < o.name
}

// objectState is what the store remembers of an object: the
// resourceVersion it last processed and the hash of each file it has.
type objectState struct {
	resourceVersion string
	files           map[string]uint64 // path to content hash
}

// fileState is one file on disk and the objects that have it: a key
// present in two objects is one file. The content on disk is the
// winner's, the object that wrote it last; the contents of the others
// are kept only while there are several, to be written back when the
// winner goes.
type fileState struct {
	owners   map[objectKey]uint64
	winner   objectKey
	contents map[objectKey][]byte // only with two owners or more
}

// store turns the objects watched into files: it writes what changed
// atomically, removes the files no object has any more, and counts.
type store struct {
	logger *slog.Logger
	mode   fs.FileMode
	m      *metrics

	mu      sync.Mutex
	objects map[objectKey]*objectState
	files   map[string]*fileState
}

func newStore(logger *slog.Logger, mode fs.FileMode, m *metrics) *store {
	return &store{logger: logger, mode: mode, m: m, objects: map[objectKey]*objectState{}, files: map[string]*fileState{}}
}

// processed reports whether the object was last processed at
// resourceVersion rv.
func (s *store) processed(key objectKey, rv string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.objects[key]
	return ok && rv != "" && st.resourceVersion == rv
}

// set makes the object's files those of want (path to content), writing
// what changed and removing the files it no longer has, and reports
// whether anything on disk changed. keep names paths whose content could
// not be read this time (a .url that failed): their file stays as it is.
func (s *store) set(key objectKey, rv string, want map[string][]byte, keep map[string]bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.objects[key]
	st := &objectState{resourceVersion: rv, files: make(map[string]uint64, len(want))}
	changed := false
	for path, content := range want {
		h := xxhash.Sum64(content)
		st.files[path] = h
		changed = s.own(path, key, h, content) || changed
	}
	if prev != nil {
		for path, h := range prev.files {
			if _, ok := st.files[path]; ok {
				continue
			}
			if keep[path] {
				st.files[path] = h
				continue
			}
			changed = s.disown(path, key) || changed
		}
	}
	s.objects[key] = st
	s.count()
	return changed
}

// remove removes the object's files but those another object has, and
// reports whether anything on disk changed.
func (s *store) remove(key objectKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.removeLocked(key)
}

func (s *store) removeLocked(key objectKey) bool {
	prev, ok := s.objects[key]
	if !ok {
		return false
	}
	changed := false
	for path := range prev.files {
		changed = s.disown(path, key) || changed
	}
	delete(s.objects, key)
	s.count()
	return changed
}

// replace removes the objects that in scope are not among present: what
// a list says was deleted while no watch was there to see it.
func (s *store) replace(in func(objectKey) bool, present map[objectKey]bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for key := range s.objects {
		if in(key) && !present[key] {
			s.logger.Debug("object gone", "object", key.String())
			changed = s.removeLocked(key) || changed
		}
	}
	return changed
}

// own records that key has path with content of hash h, and writes it
// if it is not on disk already. The last object to change a file wins it,
// as with k8s-sidecar; one that is listed again unchanged does not.
func (s *store) own(path string, key objectKey, h uint64, content []byte) bool {
	f, ok := s.files[path]
	if !ok {
		s.files[path] = &fileState{owners: map[objectKey]uint64{key: h}, winner: key}
		// A file left by an earlier run with this content stays.
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, content) {
			return false
		}
		return s.write(path, content, key)
	}
	old, had := f.owners[key]
	if had && old == h {
		return false
	}
	onDisk := f.owners[f.winner]
	if !had || len(f.owners) > 1 {
		if f.contents == nil {
			// A second owner: keep both contents, the winner's is on disk.
			f.contents = map[objectKey][]byte{}
			if b, err := os.ReadFile(path); err == nil {
				f.contents[f.winner] = b
			}
		}
		f.contents[key] = content
	}
	f.owners[key], f.winner = h, key
	if onDisk == h {
		return false
	}
	return s.write(path, content, key)
}

// disown records that key no longer has path: the file goes with its
// last owner, or takes the content of the greatest owner left when its
// winner goes.
func (s *store) disown(path string, key objectKey) bool {
	f, ok := s.files[path]
	if !ok {
		return false
	}
	onDisk := f.owners[f.winner]
	delete(f.owners, key)
	delete(f.contents, key)
	if len(f.owners) == 0 {
		delete(s.files, path)
		return s.removeFile(path, key)
	}
	if f.winner == key {
		var next objectKey
		first := true
		for k := range f.owners {
			if first || next.less(k) {
				next, first = k, false
			}
		}
		f.winner = next
	}
	content, known := f.contents[f.winner]
	if len(f.owners) == 1 {
		f.contents = nil
	}
	if f.owners[f.winner] == onDisk || !known {
		return false
	}
	return s.write(path, content, f.winner)
}

// write writes content to path atomically: a temporary file in the same
// directory, synced, then renamed over path, so that a reader sees the
// old content or the new, never a part.
// key is the object whose content it is, for the logs.
func (s *store) write(path string, content []byte, key objectKey) bool {
	if err := writeAtomic(path, content, s.mode); err != nil {
		s.m.fileErrors.Inc()
		s.logger.Error("write file", "object", key.String(), "path", path, "err", err)
		return false
	}
	s.m.fileWrites.Inc()
	s.logger.Debug("file written", "object", key.String(), "path", path, "bytes", len(content))
	return true
}

// removeFile removes path, the file of key that no object has any more.
func (s *store) removeFile(path string, key objectKey) bool {
	err := os.Remove(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false
	case err != nil:
		s.m.fileErrors.Inc()
		s.logger.Error("remove file", "object", key.String(), "path", path, "err", err)
		return false
	}
	s.m.fileRemovals.Inc()
	s.logger.Debug("file removed", "object", key.String(), "path", path)
	return true
}

// count sets the gauges of objects and files.
func (s *store) count() {
	s.m.files.Set(float64(len(s.files)))
	n := map[Resource]int{ConfigMap: 0, Secret: 0}
	for k := range s.objects {
		n[k.resource]++
	}
	for r, c := range n {
		s.m.objects.WithLabelValues(string(r)).Set(float64(c))
	}
}

// writeAtomic writes b to path through a temporary file of the same
// directory (created with its parents if missing), synced and renamed.
func writeAtomic(path string, b []byte, mode fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(b); err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	return os.Rename(tmp, path)
}
