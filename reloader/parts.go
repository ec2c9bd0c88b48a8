package reloader

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/podreload/podreload/contract"
)

// A configuration too large for one Secret is split into parts: the main
// configuration names each part, and the SHA-256 of the part as stored
// (gzipped or not), on comment lines at its very start:
//
//	# podreload.dev/config-part: main-config-1 sha256:9f86d0...
//
// and loads the rendered parts with Prometheus' scrape_config_files, by
// the paths contract.PartPath gives (relative to the rendered configuration's
// directory, which Prometheus resolves them against). The reloader reads
// each part from the Secret of that name (a PartSource, the API source)
// or from the file of that name in Options.PartsDir (the kubelet's
// projection), renders it as the main configuration (gunzip, $(VAR)
// expansion) into contract.PartsOutDir, and applies nothing until every part has
// the hash the main configuration names: Prometheus never reloads a mix
// of two generations. The hashes make the main configuration, as stored,
// name the whole content: its content hash covers the parts. The lines
// and paths are package contract's, which the controller writes with.

// ErrPartsPending is what a render wraps while a part the configuration
// names is missing or still holds another generation: the previous
// state stays, and Run waits for the next change.
var ErrPartsPending = errors.New("waiting for the configuration's parts")

// PartSource is a Source that also supplies the parts a configuration
// names, such as Secrets read from the Kubernetes API.
type PartSource interface {
	Source
	// Parts returns the content of the parts named, as stored, by name,
	// and reads those parts from now on (and no others): a part read for
	// the first time is an error wrapping ErrNotRead until Changed
	// receives. It must not block.
	Parts(names []string) (map[string][]byte, error)
}

// part is a part named by a configuration.
type part struct {
	name   string
	sha256 string // hex
}

// parseParts returns the parts that config, gunzipped, names on its
// leading comment lines.
func parseParts(config []byte) ([]part, error) {
	var parts []part
	for rest := config; len(rest) > 0 && rest[0] == '#'; {
		line, next, _ := bytes.Cut(rest, []byte{'\n'})
		rest = next
		spec, ok := bytes.CutPrefix(line, []byte(contract.PartDirective))
		if !ok {
			continue
		}
		name, sum, ok := strings.Cut(strings.TrimSpace(string(spec)), " sha256:")
		if !ok || !validElem(name) || len(sum) != 2*sha256.Size || strings.Trim(sum, "0123456789abcdef") != "" {
			return nil, fmt.Errorf("invalid part line %q: want %s<name> sha256:<64 hex digits>", line, contract.PartDirective)
		}
		if slices.ContainsFunc(parts, func(p part) bool { return p.name == name }) {
			return nil, fmt.Errorf("part %s named twice", name)
		}
		parts = append(parts, part{name: name, sha256: sum})
	}
	return parts, nil
}

// partNames returns the names of parts.
func partNames(parts []part) []string {
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = p.name
	}
	return names
}

// readParts returns the parts named, as stored, from the Source or from
// PartsDir, each checked against the hash the configuration names.
func (r *Reloader) readParts(parts []part) (map[string][]byte, error) {
	ps, fromSource := r.opts.Source.(PartSource)
	if len(parts) == 0 {
		if fromSource {
			_, _ = ps.Parts(nil) // Those of an earlier configuration are no longer read.
		}
		return nil, nil
	}
	var raw map[string][]byte
	if fromSource {
		var err error
		if raw, err = ps.Parts(partNames(parts)); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPartsPending, err)
		}
	} else {
		if r.opts.PartsDir == "" {
			return nil, fmt.Errorf("the configuration names parts (%s), and no parts directory is given", strings.Join(partNames(parts), ", "))
		}
		raw = make(map[string][]byte, len(parts))
		for _, p := range parts {
			b, err := readRegular(filepath.Join(r.opts.PartsDir, p.name), r.opts.MaxConfigSize)
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%w: part %s not in %s yet", ErrPartsPending, p.name, r.opts.PartsDir)
			}
			if err != nil {
				return nil, fmt.Errorf("read part: %w", err)
			}
			raw[p.name] = b
		}
	}
	for _, p := range parts {
		b, ok := raw[p.name]
		if !ok {
			return nil, fmt.Errorf("%w: part %s not read yet", ErrPartsPending, p.name)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != p.sha256 {
			return nil, fmt.Errorf("%w: part %s is not the one the configuration names yet (sha256 %.12s, want %.12s)",
				ErrPartsPending, p.name, hex.EncodeToString(sum[:]), p.sha256)
		}
	}
	return raw, nil
}

// renderParts renders the parts raw (gunzip, expansion) and returns them
// by name, with a hash of raw. Parts rendered last time from the same
// bytes are not rendered again.
func (r *Reloader) renderParts(raw map[string][]byte) (map[string][]byte, uint64, error) {
	var from uint64
	out := make(map[string][]byte, len(raw))
	cache := make(map[string]renderedPart, len(raw))
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		sum := xxhash.Sum64(raw[name])
		from += fileHash(name, string(raw[name]))
		if c, ok := r.cache.parts[name]; ok && c.from == sum {
			out[name], cache[name] = c.out, c
			continue
		}
		b, err := gunzip(name, raw[name], r.opts.MaxConfigSize)
		if err != nil {
			return nil, from, fmt.Errorf("read part %s: %w", name, err)
		}
		if r.opts.Expander != nil {
			var undefined int
			b, undefined, err = r.opts.Expander.Expand(b)
			if err != nil {
				return nil, from, fmt.Errorf("expand part %s: %w", name, err)
			}
			cache[name] = renderedPart{from: sum, out: b, undefined: undefined}
		} else {
			cache[name] = renderedPart{from: sum, out: b}
		}
		out[name] = b
	}
	r.cache.parts = cache
	undefined := r.cache.undefined
	for _, c := range cache {
		undefined += c.undefined
	}
	r.m.expansionErrors.Set(float64(undefined))
	return out, from, nil
}

// renderedPart is a part as last rendered, and the hash of what it was
// rendered from.
type renderedPart struct {
	from      uint64
	out       []byte
	undefined int // references left unexpanded
}

// writeParts writes the rendered parts into contract.PartsOutDir next to
// ConfigOutput; removeParts removes the ones no longer named, once the
// configuration naming the others is written.
func (r *Reloader) writeParts(parts map[string][]byte) error {
	dir := filepath.Join(filepath.Dir(r.opts.ConfigOutput), contract.PartsOutDir)
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		if err := writeAtomic(filepath.Join(dir, name+".yaml"), parts[name]); err != nil {
			return err
		}
	}
	return nil
}

// removeParts removes from contract.PartsOutDir the rendered parts, and the
// temporary files of interrupted writes, that are not among parts.
func (r *Reloader) removeParts(parts map[string][]byte) error {
	dir := filepath.Join(filepath.Dir(r.opts.ConfigOutput), contract.PartsOutDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove parts: %w", err)
	}
	var errs []error
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".yaml")
		if _, keep := parts[name]; (ok && keep) || !e.Type().IsRegular() || (!ok && !isTemp(e.Name())) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove parts: %w", err))
		}
	}
	return errors.Join(errs...)
}
