package reloader

import (
	"errors"
	"fmt"
)

// written is what the outputs hold, as far as the Reloader wrote them.
type written struct {
	config []byte            // the configuration in ConfigOutput; nil before the first write
	parts  map[string][]byte // the parts next to it
	raw    []byte            // the configuration as stored that config was rendered from
	// stale are the outputs the last write could not bring to the state
	// it was given: the configuration (with its parts) and RulesDir.
	configStale, rulesStale bool
}

// write writes st's configuration into ConfigOutput and its files into
// RulesDir; what is already there is not rewritten. The two outputs are
// written independently: a full or read-only file system under one does
// not hold back the other.
func (r *Reloader) write(st state) error {
	var configErr, rulesErr error
	if r.opts.ConfigOutput != "" && st.config != nil {
		configErr = r.writeConfig(st)
	}
	if r.opts.RulesDir != "" {
		rulesErr = r.files.write(st.files)
	}
	r.disk.configStale, r.disk.rulesStale = configErr != nil, rulesErr != nil
	if rulesErr != nil {
		rulesErr = fmt.Errorf("%w (keeping the previous version of the files not written)", rulesErr)
	}
	r.deg.write = errors.Join(configErr, rulesErr)
	return r.deg.write
}

// writeConfig writes st's configuration and its parts.
func (r *Reloader) writeConfig(st state) error {
	// The parts first, so that the configuration never names a part that
	// is not there.
	if err := r.writeParts(st.parts); err != nil {
		return fmt.Errorf("%w (keeping the previous config)", err)
	}
	if err := writeAtomic(r.opts.ConfigOutput, st.config); err != nil {
		return fmt.Errorf("%w (keeping the previous config)", err)
	}
	r.disk.config, r.disk.parts, r.disk.raw = st.config, st.parts, st.raw
	return r.removeParts(st.parts)
}

// onDisk returns st as the outputs hold it after a write of st that
// failed: the configuration last written where it could not be written,
// and, in RulesDir, each file as it is there, taken from st or from the
// last accepted state; a file of neither is left out.
func (r *Reloader) onDisk(st state) state {
	if r.disk.configStale {
		st.config, st.parts, st.raw = r.disk.config, r.disk.parts, r.disk.raw
	}
	if r.disk.rulesStale {
		files := make(map[string]string, len(r.files.written))
		for name, sum := range r.files.written {
			for _, from := range []map[string]string{st.files, r.accepted.files} {
				if content, ok := from[name]; ok && fileHash(name, content) == sum {
					files[name] = content
					break
				}
			}
		}
		st.files = files
	}
	return st
}
