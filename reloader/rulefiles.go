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
)

// GzipSuffix ends the name of a stored rule file that is gzipped: the file
// X.gz of a Source or of Options.RulesInputDirs is written into RulesDir
// as X, gunzipped.
const GzipSuffix = ".gz"

// storedFile is a file as stored and as rendered for RulesDir.
type storedFile struct {
	stored  string // the content as stored
	content string // the content rendered
}

// fileRenderer renders the files of a Source or of RulesInputDirs: a
// file named X.gz is gunzipped into X, at most limit bytes, and any other
// file is written as it is. It keeps the last good rendering of each
// gzipped file: a file that fails to gunzip leaves it in place, the rest
// going on.
type fileRenderer struct {
	limit int64
	// allowEmpty renders a file that holds nothing but whitespace where
	// its last version had content; by default it is held back.
	allowEmpty bool
	good       map[string]storedFile // by stored name: the last good rendering
	held       int                   // files the last render held back as empty
}

// render returns the files to write into RulesDir, by path, and the files
// as stored they come from: the stored files, with the last good version of
// each file that failed (a gzipped file that cannot be gunzipped, a file
// emptied: see allowEmpty), or without the file if it has none yet.
// A file whose name RulesDir cannot hold (group/name, no element starting
// with a dot: a ConfigMap key such as .hidden) is left out, and returned in
// left. err joins the failures, each named by describe.
func (fr *fileRenderer) render(stored map[string]string, describe func(string) string) (out, from map[string]string, left []skipped, err error) {
	out, from = make(map[string]string, len(stored)), make(map[string]string, len(stored))
	good := make(map[string]storedFile, len(fr.good))
	var errs []error
	fr.held = 0
	for _, name := range slices.Sorted(maps.Keys(stored)) {
		content := stored[name]
		target, gzipped := strings.CutSuffix(name, GzipSuffix)
		if !validFile(target) || !validFile(name) {
			left = append(left, skipped{name: describe(name), reason: reasonInvalidName, err: errors.New(invalidName)})
			continue
		}
		f, ferr := storedFile{stored: content, content: content}, error(nil)
		if gzipped {
			f, ferr = fr.gunzip(name, target, stored)
		}
		if last, ok := fr.good[name]; ferr == nil && ok && !fr.allowEmpty && blankString(f.content) && !blankString(last.content) {
			// A truncated or emptied file: the process would drop its rules.
			ferr = emptyFileError{size: int64(len(f.content))}
			fr.held++
		}
		if ferr != nil {
			f, ok := fr.good[name]
			how := "left out: no good version yet"
			if ok {
				how = "keeping the last good file"
				out[target], from[name], good[name] = f.content, f.stored, f
			}
			errs = append(errs, fmt.Errorf("%s: %w (%s)", describe(name), ferr, how))
			continue
		}
		out[target], from[name], good[name] = f.content, content, f
	}
	fr.good = good
	return out, from, left, errors.Join(errs...)
}

// invalidName is why a file whose name RulesDir cannot hold is left out.
const invalidName = "not a file name the rules dir can hold (group/name, neither starting with a dot)"

// gunzip renders the gzipped file name of stored into target.
func (fr *fileRenderer) gunzip(name, target string, stored map[string]string) (storedFile, error) {
	content := stored[name]
	if f, ok := fr.good[name]; ok && f.stored == content {
		return f, nil // Gunzipped already.
	}
	_, base, _ := strings.Cut(target, "/")
	if _, plain := stored[target]; plain {
		return storedFile{}, fmt.Errorf("%s is also stored as it is, which is kept", base)
	}
	if !gzipped([]byte(content)) {
		return storedFile{}, errors.New("gunzip: not gzipped (no gzip magic bytes)")
	}
	b, err := gunzipAll([]byte(content), fr.limit)
	if err != nil {
		return storedFile{}, fmt.Errorf("gunzip: %w", err)
	}
	return storedFile{stored: content, content: string(b)}, nil
}

// readInputDirs returns the files of dirs, each a ConfigMap's volume,
// named "<base name of dir>/<file>" as a Source names a ConfigMap's keys:
// the files a reader of dir sees at its top level (symlinks followed,
// kubelet bookkeeping, directories and dangling links left out), each at
// most limit bytes. A missing dir holds no files. A file that cannot be
// read (a symlink loop, a named pipe, no read permission, too large) is
// left out, and returned in left.
func readInputDirs(dirs []string, limit int64) (files map[string]string, left []skipped, err error) {
	files = map[string]string{}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		group := filepath.Base(dir)
		for _, e := range entries {
			if hidden(e.Name()) {
				continue
			}
			path := filepath.Join(dir, e.Name())
			fi, err := os.Stat(path)
			if errors.Is(err, fs.ErrNotExist) || (err == nil && fi.IsDir()) {
				continue // A dangling link, a file removed since, a directory: not content.
			}
			var b []byte
			if err == nil {
				b, err = readRegular(path, limit)
			}
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				left = append(left, skipped{name: path, reason: reasonUnreadable, err: err})
				continue
			}
			files[group+"/"+e.Name()] = string(b)
		}
	}
	return files, left, nil
}

// checkInputDirs refuses rules input dirs that RulesDir could not hold
// apart: two of the same base name, or a base name no group may have.
func checkInputDirs(dirs []string) error {
	seen := map[string]string{}
	for _, dir := range dirs {
		base := filepath.Base(filepath.Clean(dir))
		if !validElem(base) {
			return fmt.Errorf("rules input dir %s: its base name cannot name a directory of the rules dir", dir)
		}
		if other, ok := seen[base]; ok {
			return fmt.Errorf("rules input dirs %s and %s: both would be written into the rules dir's %s", other, dir, base)
		}
		seen[base] = dir
	}
	return nil
}
