package reloader

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
)

// DefaultStateDir is where, beside Options.ConfigOutput, the last accepted
// state is kept when Options.StateDir is empty.
const DefaultStateDir = ".podreload-state"

// The state directory holds two files, each replaced atomically:
// acceptedFile, a tar of what the process last accepted (its report, the
// rendered configuration, its parts and the files of RulesDir), and
// rejectedFile, the content it rejected after it (a hash of it) with its
// message. The tar can be read with any tar tool.
const (
	acceptedFile = "accepted.tar"
	rejectedFile = "rejected.json"
	appliedEntry = "applied.json"
	configEntry  = "config"
	partsPrefix  = "parts/"
	rulesPrefix  = "rules/"
)

// stateStore keeps the last accepted state in a directory.
type stateStore struct {
	dir   string
	limit int64  // bound on each file read back
	saved uint64 // acceptedKey of the state last saved; 0 when unknown
	// rejection is the rejection last recorded, as written; nil when
	// unknown or none.
	rejection []byte
	read      bool // whether the accepted state was read (or tried)
	// mirrorRead is whether the StateMirror was read (or tried).
	mirrorRead bool
}

// savedApplied is Applied without its rejection, as saved.
type savedApplied struct {
	Hash string    `json:"hash"`
	Time time.Time `json:"time"`
}

// savedRejection is the content the process rejected after it accepted
// the saved state.
type savedRejection struct {
	Key string `json:"key"` // rejectedKey, hex
	// Content is acceptedKey, hex: the rejected content without the
	// watched directories, which a process watching none (an init
	// container beside a sidecar that watches them) compares.
	Content string    `json:"content,omitempty"`
	Message string    `json:"message"`
	Time    time.Time `json:"time"`
}

// loadState reads the rejection StateDir records, which the first apply
// checks (resumeRejected), and then the last accepted state. Without a
// rejection, the accepted state is read only when the process rejects
// something before it accepts anything (loadAccepted): a start holds one
// state in memory, not two. A state that cannot be read is logged,
// counted and ignored.
func (r *Reloader) loadState() {
	if r.state == nil {
		return
	}
	for _, name := range []string{acceptedFile, rejectedFile} {
		if _, err := removeTemps(filepath.Join(r.state.dir, name)); err != nil {
			r.stateError("remove temporary files", err)
		}
	}
	rej, err := r.state.loadRejection()
	if err != nil {
		r.stateError("read the rejection recorded", err)
	}
	if rej != nil && r.loadAccepted() {
		r.startRejected = rej
	}
}

// loadAccepted makes the last accepted state StateDir keeps the one
// restored after a rejection, unless the process accepted one since the
// start; it reports whether there is one.
func (r *Reloader) loadAccepted() bool {
	if r.hasAccepted || r.state == nil || r.state.read {
		return r.hasAccepted
	}
	r.state.read = true
	st, applied, found, err := r.state.loadAccepted()
	switch {
	case err != nil:
		r.stateError("read the last accepted state", err)
		return false
	case !found:
		return false
	}
	r.accepted, r.hasAccepted = st, true
	if r.report == (Applied{}) {
		r.report = Applied{Hash: applied.Hash, Time: applied.Time}
	}
	r.logger.Info("last accepted state read", "dir", r.state.dir, "hash", applied.Hash, "accepted_at", applied.Time)
	return true
}

func (r *Reloader) stateError(action string, err error) {
	r.m.stateErrors.Inc()
	r.logger.Warn("state dir", "action", action, "dir", r.state.dir, "err", err)
}

// resumeRejected handles the first apply that reads a state after a start:
// when it is the content StateDir records as rejected, the last accepted
// state is written instead and reported with the rejection, and nothing is
// reloaded (the process runs it, or reads it when it starts); the retry
// then comes as after any rejection. ok is false when the apply goes on as
// usual.
func (r *Reloader) resumeRejected(st state, sum uint64) (res result, err error, ok bool) {
	rej := r.startRejected
	if rej == nil {
		return 0, nil, false
	}
	r.startRejected = nil
	if !r.isRejected(st, rej) {
		return 0, nil, false
	}
	r.accepted.dirs = st.dirs
	r.applied, r.synced, r.rejected = r.sum(r.accepted), true, sum
	r.reportApplied(r.report.Hash, r.report.Time, &Rejection{Message: rej.Message, Time: rej.Time})
	err = fmt.Errorf("rejected at %s: %s", rej.Time.Format(time.RFC3339), rej.Message)
	return resultRestored, errors.Join(err, r.restore()), true
}

// acceptedInstead returns, for Render, the last accepted state when st is
// the content StateDir records as rejected, and st otherwise.
func (r *Reloader) acceptedInstead(st state) state {
	rej := r.startRejected
	if rej == nil || !r.hasAccepted {
		return st
	}
	if !r.isRejected(st, rej) {
		return st
	}
	r.logger.Warn("the current content was rejected: writing the last accepted state instead", "rejected_at", rej.Time, "message", rej.Message)
	return r.accepted
}

// rejectedNow records that the process rejected st, and reports it.
func (r *Reloader) rejectedNow(st state, rejected *RejectedError) {
	r.loadAccepted()
	msg := rejected.Err.Error()
	if r.report.Rejection == nil || r.report.Rejection.Message != msg {
		r.reportApplied(r.report.Hash, r.report.Time, &Rejection{Message: msg, Time: time.Now()})
	}
	if r.hasAccepted {
		// It answered, and runs what it accepted, which is on disk again.
		r.ready.Store(true)
	}
	if r.state == nil {
		return
	}
	if r.adopted {
		// What the outputs held at start: kept before the rejection,
		// which saving an accepted state forgets.
		r.adopted = false
		r.saveAccepted()
	}
	key, err := r.rejectedKey(st)
	changed := false
	if err == nil {
		changed, err = r.state.saveRejection(savedRejection{Key: strconv.FormatUint(key, 16), Content: strconv.FormatUint(acceptedKey(st), 16),
			Message: msg, Time: r.report.Rejection.Time})
	}
	if err != nil {
		r.stateError("record the rejection", err)
	}
	if changed {
		r.mirrorState()
	}
}

// saveAccepted keeps the state the process just accepted in StateDir.
func (r *Reloader) saveAccepted() {
	if r.state == nil {
		return
	}
	changed, err := r.state.saveAccepted(r.accepted, savedApplied{Hash: r.report.Hash, Time: r.report.Time})
	if err != nil {
		r.stateError("keep the accepted state", err)
	}
	if changed {
		r.mirrorState()
	}
}

// isRejected tells whether st is the content rej records. A process that
// watches no directory compares what it renders only: the init container
// of prometheus-config-reloader's manifests is given no --watched-dir,
// its sidecar is.
func (r *Reloader) isRejected(st state, rej *savedRejection) bool {
	if len(r.opts.WatchedDirs) == 0 && rej.Content != "" {
		return strconv.FormatUint(acceptedKey(st), 16) == rej.Content
	}
	key, err := r.rejectedKey(st)
	return err == nil && strconv.FormatUint(key, 16) == rej.Key
}

// rejectedKey hashes the content of st as the process reads it, whatever
// the kubelet names its versions: the rendered configuration and parts,
// the files of RulesDir and those of each watched directory, read. It
// tells the same content apart across restarts of the pod.
func (r *Reloader) rejectedKey(st state) (uint64, error) {
	h := xxhash.New()
	writeUint64(h, acceptedKey(st))
	for _, dir := range r.opts.WatchedDirs {
		sum, _, err := hashFiles(dir)
		if err != nil {
			return 0, fmt.Errorf("hash watched dir %s: %w", dir, err)
		}
		writeUint64(h, sum)
	}
	return h.Sum64(), nil
}

// acceptedKey hashes what the state store keeps of st.
func acceptedKey(st state) uint64 {
	h := xxhash.New()
	fmt.Fprintf(h, "%d\x00", len(st.config))
	_, _ = h.Write(st.config)
	for _, name := range slices.Sorted(maps.Keys(st.parts)) {
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(st.parts[name]))
		_, _ = h.Write(st.parts[name])
	}
	var files uint64
	for name, content := range st.files {
		files += fileHash(name, content)
	}
	writeUint64(h, files)
	return h.Sum64()
}

// saveAccepted replaces the accepted state with st, unless it is the one
// saved, and forgets the rejection recorded: it was of an older state.
// changed reports whether it touched the directory, also on error.
func (s *stateStore) saveAccepted(st state, applied savedApplied) (changed bool, err error) {
	key := acceptedKey(st)
	if key == s.saved {
		return false, nil
	}
	s.rejection = nil
	if err := os.Remove(filepath.Join(s.dir, rejectedFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return true, fmt.Errorf("remove the rejection recorded: %w", err)
	}
	meta, err := json.Marshal(applied)
	if err != nil {
		return true, err
	}
	err = s.replace(acceptedFile, func(w io.Writer) error {
		tw := tar.NewWriter(w)
		add := func(name string, b []byte) error {
			if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
				return err
			}
			_, err := tw.Write(b)
			return err
		}
		errs := []error{add(appliedEntry, meta)}
		if st.config != nil {
			errs = append(errs, add(configEntry, st.config))
		}
		for _, name := range slices.Sorted(maps.Keys(st.parts)) {
			errs = append(errs, add(partsPrefix+name, st.parts[name]))
		}
		for _, name := range slices.Sorted(maps.Keys(st.files)) {
			errs = append(errs, add(rulesPrefix+name, []byte(st.files[name])))
		}
		return errors.Join(append(errs, tw.Close())...)
	})
	if err != nil {
		return true, err
	}
	s.saved = key
	return true, nil
}

// loadAccepted reads the accepted state back; found is false when there
// is none.
func (s *stateStore) loadAccepted() (st state, applied savedApplied, found bool, err error) {
	path := filepath.Join(s.dir, acceptedFile)
	f, _, err := openRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, applied, false, nil
	}
	if err != nil {
		return st, applied, false, err
	}
	defer f.Close()
	tr := tar.NewReader(bufio.NewReader(f))
	seenApplied := false
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return state{}, applied, false, fmt.Errorf("read %s: %w", path, err)
		}
		b, err := readAll(tr, hdr.Size, s.limit)
		if err != nil {
			return state{}, applied, false, fmt.Errorf("read %s: %s: %w", path, hdr.Name, err)
		}
		switch name := hdr.Name; {
		case name == appliedEntry:
			if err := json.Unmarshal(b, &applied); err != nil {
				return state{}, applied, false, fmt.Errorf("read %s: %s: %w", path, name, err)
			}
			seenApplied = true
		case name == configEntry:
			st.config = b
		case strings.HasPrefix(name, partsPrefix) && validElem(strings.TrimPrefix(name, partsPrefix)):
			if st.parts == nil {
				st.parts = map[string][]byte{}
			}
			st.parts[strings.TrimPrefix(name, partsPrefix)] = b
		case strings.HasPrefix(name, rulesPrefix) && validFile(strings.TrimPrefix(name, rulesPrefix)):
			if st.files == nil {
				st.files = map[string]string{}
			}
			st.files[strings.TrimPrefix(name, rulesPrefix)] = string(b)
		default:
			return state{}, applied, false, fmt.Errorf("read %s: unexpected entry %q", path, name)
		}
	}
	if !seenApplied {
		return state{}, applied, false, fmt.Errorf("read %s: no %s in it", path, appliedEntry)
	}
	s.saved = acceptedKey(st)
	return st, applied, true, nil
}

// saveRejection records the content the process rejected, unless it is
// the rejection last recorded; changed reports whether it wrote, also on
// error.
func (s *stateStore) saveRejection(rej savedRejection) (changed bool, err error) {
	b, err := json.Marshal(rej)
	if err != nil {
		return false, err
	}
	if bytes.Equal(b, s.rejection) {
		return false, nil
	}
	err = s.replace(rejectedFile, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
	if err == nil {
		s.rejection = b
	}
	return true, err
}

// loadRejection reads the rejection recorded, nil if none.
func (s *stateStore) loadRejection() (*savedRejection, error) {
	path := filepath.Join(s.dir, rejectedFile)
	b, err := readRegular(path, 1<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rej savedRejection
	if err := json.Unmarshal(b, &rej); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return &rej, nil
}

// replace writes the file name of the directory atomically with what
// write writes: a temporary file, fsync, rename.
func (s *stateStore) replace(name string, write func(io.Writer) error) error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}
	// 0600: the state holds the configuration, credentials included.
	return replaceFile(filepath.Join(s.dir, name), 0o600, write)
}
