package reloader

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// reading is what read found.
type reading struct {
	st       state  // what the process would read now
	input    uint64 // a hash of the input st comes from
	settling bool   // a kubelet volume is half-updated: nothing was read
	// kept is a failed render of a new configuration, the previous one
	// being in st, or of rule files, the last good version of each being
	// in st.
	kept error
}

// read returns what the process would read now; err leaves nothing to
// apply.
func (r *Reloader) read(consistent bool) (reading, error) {
	var st state
	if consistent && r.settling() {
		return reading{settling: true}, nil
	}
	in := xxhash.New()
	st.dirs = make([]uint64, len(r.opts.WatchedDirs))
	var left []skipped
	for i, dir := range r.opts.WatchedDirs {
		sum, dirLeft, settling, err := hashDir(dir, consistent)
		if settling {
			return reading{settling: true}, nil
		}
		if err != nil {
			r.m.appliesFailed.Inc()
			// The input is which directory could not be read.
			return reading{st: st, input: uint64(i) + 1}, fmt.Errorf("read watched dir %s: %w", dir, err)
		}
		st.dirs[i] = sum
		writeUint64(in, sum)
		left = append(left, dirLeft...)
	}
	src, err := r.readInput()
	if err != nil {
		if !errors.Is(err, ErrNotRead) {
			r.m.appliesFailed.Inc()
		}
		return reading{st: st, input: in.Sum64()}, err
	}
	left = append(left, src.left...)
	writeUint64(in, Snapshot{Files: src.files}.hash())
	var filesLeft []skipped
	var filesErr error
	if st.files, st.stored, filesLeft, filesErr = r.fileRenderer.render(src.files, src.describe); filesErr != nil {
		r.m.appliesFailed.Inc()
	}
	r.deg.files = filesErr
	left = append(left, filesLeft...)
	if !src.config {
		r.noteHeld(nil, false)
		r.noteLeftOut(left)
		return reading{st: st, input: in.Sum64(), kept: filesErr}, nil
	}
	out, from, err := r.render(src.raw, src.name, src.readErr)
	writeUint64(in, from)
	// The Source tells itself why it holds no configuration, or parts.
	r.noteHeld(err, r.opts.Source != nil && (src.readErr != nil || errors.Is(err, ErrPartsPending)))
	r.noteLeftOut(left)
	var kept error
	switch {
	case err != nil && r.cache.last.config == nil:
		// Nothing new to apply: what the process runs stays.
		return reading{st: st, input: in.Sum64()}, err
	case err != nil:
		// Keep the last good configuration, and its parts, while the
		// new one cannot be rendered or waits for its parts: the rest
		// may still need a reload. The error still makes Run retry (or
		// wait for the parts).
		kept = fmt.Errorf("%w (keeping the previous config)", err)
	default:
		r.cache.keep(out, src.raw, r.opts.OnApplied != nil)
	}
	st.config, st.raw, st.parts = r.cache.last.config, r.cache.raw, r.cache.last.out
	return reading{st: st, input: in.Sum64(), kept: errors.Join(kept, filesErr)}, nil
}

// settling reports whether a kubelet volume the configuration or the rule
// files are read from is half-updated (see hashDir).
func (r *Reloader) settling() bool {
	if r.opts.ConfigFile != "" && settlingDir(filepath.Dir(r.opts.ConfigFile)) ||
		r.opts.PartsDir != "" && settlingDir(r.opts.PartsDir) {
		return true
	}
	return slices.ContainsFunc(r.opts.RulesInputDirs, settlingDir)
}

// input is the configuration and the rule files as stored.
type input struct {
	config   bool   // whether there is a configuration
	raw      []byte // the configuration as stored
	name     string // names where raw comes from
	readErr  error  // the error reading raw, if any
	files    map[string]string
	describe func(string) string // names a file of files
	left     []skipped           // files that could not be read
}

// readInput reads the configuration and the rule files as stored, from
// the Source, or from ConfigFile and RulesInputDirs.
func (r *Reloader) readInput() (input, error) {
	if r.opts.Source != nil {
		snap, err := r.opts.Source.Snapshot()
		if err != nil {
			return input{}, err
		}
		return input{config: true, raw: snap.Config, name: snap.ConfigName, readErr: snap.ConfigErr, files: snap.Files, describe: snap.describe}, nil
	}
	var in input
	if r.opts.ConfigFile != "" {
		in.config, in.name = true, r.opts.ConfigFile
		in.raw, in.readErr = readRegular(in.name, r.opts.MaxConfigSize)
	}
	files, left, err := readInputDirs(r.opts.RulesInputDirs, r.opts.MaxConfigSize)
	if err != nil {
		return input{}, fmt.Errorf("read rules input dir: %w", err)
	}
	in.files, in.describe, in.left = files, r.describeInput, left
	return in, nil
}

// describeInput names a file of RulesInputDirs, "<base name of dir>/<file>",
// by its path.
func (r *Reloader) describeInput(name string) string {
	group, file, _ := strings.Cut(name, "/")
	for _, dir := range r.opts.RulesInputDirs {
		if filepath.Base(filepath.Clean(dir)) == group {
			return filepath.Join(dir, file)
		}
	}
	return name
}
