package reloader

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/podreload/podreload/contract"
)

// adoptOutputs, when Run starts, notes whether ConfigOutput has content
// and, with KeepAccepted, takes what the outputs hold as the last accepted
// state when StateDir keeps none (a state dir lost with its volume, a
// first start, an upgrade from a build that kept none): the process runs
// what it read from them, so a first reload it rejects writes them back
// rather than leaving the rejected content for its next restart, and
// keeps them in StateDir then, for the next start of the pod. A reload it
// accepts replaces them, as any accepted state.
func (r *Reloader) adoptOutputs() {
	var config []byte
	if r.opts.ConfigOutput != "" {
		b, err := readRegular(r.opts.ConfigOutput, r.opts.MaxConfigSize)
		switch {
		case err == nil:
			config, r.startOutput = b, !blank(b)
		case !errors.Is(err, fs.ErrNotExist):
			r.logger.Warn("read the output at start", "file", r.opts.ConfigOutput, "err", err)
			return
		}
	}
	if !r.opts.KeepAccepted || r.hasAccepted {
		return
	}
	if r.state != nil {
		if _, err := os.Lstat(filepath.Join(r.state.dir, acceptedFile)); !errors.Is(err, fs.ErrNotExist) {
			return // Kept, or there and unreadable: it is read on a rejection.
		}
	}
	st, err := r.readOutputs(config)
	if err != nil {
		r.logger.Warn("read the outputs at start", "err", err)
		return
	}
	if st.config == nil && len(st.files) == 0 {
		return
	}
	st.dirs = make([]uint64, len(r.opts.WatchedDirs))
	r.accepted, r.hasAccepted, r.adopted = st, true, true
	if r.state != nil {
		r.state.read = true
	}
	r.logger.Info("no accepted state kept: what the outputs hold is taken as accepted until a reload says otherwise",
		"output", r.opts.ConfigOutput, "rules_dir", r.opts.RulesDir, "rule_files", len(st.files))
}

// readOutputs returns what the outputs hold: config, read from
// ConfigOutput (nil if missing), the parts it names that are next to it,
// and the files of RulesDir.
func (r *Reloader) readOutputs(config []byte) (state, error) {
	st := state{config: config}
	if config != nil {
		parts, err := parseParts(config)
		if err != nil {
			return state{}, fmt.Errorf("read %s: %w", r.opts.ConfigOutput, err)
		}
		dir := filepath.Join(filepath.Dir(r.opts.ConfigOutput), contract.PartsOutDir)
		for _, p := range parts {
			b, err := readRegular(filepath.Join(dir, p.name+".yaml"), r.opts.MaxConfigSize)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return state{}, err
			}
			if st.parts == nil {
				st.parts = map[string][]byte{}
			}
			st.parts[p.name] = b
		}
	}
	if r.opts.RulesDir == "" {
		return st, nil
	}
	groups, err := os.ReadDir(r.opts.RulesDir)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return state{}, fmt.Errorf("read rules dir: %w", err)
	}
	for _, g := range groups {
		if !g.IsDir() || !validElem(g.Name()) {
			continue
		}
		files, err := os.ReadDir(filepath.Join(r.opts.RulesDir, g.Name()))
		if err != nil {
			return state{}, fmt.Errorf("read rules dir: %w", err)
		}
		for _, f := range files {
			if !f.Type().IsRegular() || !validElem(f.Name()) || isTemp(f.Name()) {
				continue
			}
			name := g.Name() + "/" + f.Name()
			b, err := readRegular(filepath.Join(r.opts.RulesDir, name), r.opts.MaxConfigSize)
			if err != nil {
				return state{}, fmt.Errorf("read rules dir: %w", err)
			}
			if st.files == nil {
				st.files = map[string]string{}
			}
			st.files[name] = string(b)
		}
	}
	return st, nil
}
