package reloader

import (
	"context"
	"errors"
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// Render writes ConfigOutput (and RulesDir, from a Source) once, without
// reloading: the init-container mode. Content StateDir records as rejected
// is not written: the last accepted state is, instead. It does not read
// the StateMirror: RenderOnce does.
func (r *Reloader) Render() error {
	r.removeTemps()
	r.loadState()
	var (
		st  state
		out rendered
		err error
	)
	src, err := r.readInput()
	if err != nil {
		return err
	}
	if src.config {
		if out, _, err = r.render(src.raw, src.name, src.readErr); err != nil {
			return err
		}
	}
	// A rule file that cannot be rendered is left out: the process starts
	// with the others.
	var left []skipped
	st.files, _, left, err = r.fileRenderer.render(src.files, src.describe)
	if err != nil {
		r.m.appliesFailed.Inc()
		r.logger.Error("rule files left out", "err", err)
	}
	r.noteLeftOut(append(src.left, left...))
	st.config, st.parts = out.config, out.out
	return r.write(r.acceptedInstead(st))
}

// RenderOnce is the init-container mode: it writes the outputs once, as
// Render does, and logs the outcome. From a Source, which must be running,
// it waits until ctx is done for what Render needs and the Source does not
// hold yet (its first content, a Secret created later, the configuration's
// parts), saying what it waits for.
func (r *Reloader) RenderOnce(ctx context.Context) error {
	r.restoreMirrored(ctx)
	if r.opts.Source == nil {
		if err := r.Render(); err != nil {
			r.logger.Error("render config", "err", err)
			return err
		}
		r.logger.Info("config rendered", "output", r.opts.ConfigOutput)
		return nil
	}
	var last string
	for {
		select {
		case <-ctx.Done():
			r.logger.Error("render config: stopped before the configuration could be read", "waiting_for", last)
			return fmt.Errorf("render config: %w", context.Cause(ctx))
		case <-r.opts.Source.Changed():
		}
		err := r.Render()
		if err == nil {
			r.logger.Info("config rendered", "output", r.opts.ConfigOutput)
			return nil
		}
		if err.Error() != last {
			last = err.Error()
			r.logger.Warn("render config: waiting", "err", err)
		}
	}
}

// removeTemps removes the temporary files a write of ConfigOutput
// interrupted by a kill left behind.
func (r *Reloader) removeTemps() {
	if r.opts.ConfigOutput == "" {
		return
	}
	removed, err := removeTemps(r.opts.ConfigOutput)
	for _, name := range removed {
		r.logger.Info("removed a temporary file left by an interrupted write", "file", name)
	}
	if err != nil {
		r.logger.Warn("remove temporary files", "err", err)
	}
}

// rendered is a configuration rendered, and its parts.
type rendered struct {
	config []byte
	parts  []part            // the parts config names
	out    map[string][]byte // the parts rendered, by name
}

// renderCache is what the last renders left, owned by Run: the last good
// configuration rendered, kept while a newer one cannot be rendered, and
// what it and each part were rendered from, so that the same bytes are
// not gunzipped and expanded again.
type renderCache struct {
	last      rendered                // the last good configuration rendered; config nil before the first
	from      uint64                  // hash of the configuration as stored rendered into last
	raw       []byte                  // the configuration as stored rendered into last, when OnApplied is set
	undefined int                     // references the configuration last rendered left unexpanded
	parts     map[string]renderedPart // each part as last rendered
}

// keep makes out, rendered from raw, the last good configuration; raw
// itself is kept when keepRaw.
func (c *renderCache) keep(out rendered, raw []byte, keepRaw bool) {
	c.last, c.from = out, xxhash.Sum64(raw)
	if keepRaw {
		c.raw = raw
	}
}

// render gunzips and expands raw, the configuration read from name (with
// readErr, the error reading it, if any), and the parts it names,
// returning them rendered and a hash of raw and of the parts as stored
// (also on error, once raw is read; 0 before). An error wrapping
// ErrPartsPending is no failure: a part is not there yet.
func (r *Reloader) render(raw []byte, name string, readErr error) (rendered, uint64, error) {
	r.m.applies.Inc()
	var (
		out  rendered
		from uint64
		err  error
	)
	out.config, out.parts, from, err = r.renderConfig(raw, name, readErr)
	if err == nil {
		var partsRaw map[string][]byte
		if partsRaw, err = r.readParts(out.parts); err == nil {
			var partsFrom uint64
			out.out, partsFrom, err = r.renderParts(partsRaw)
			from += partsFrom
		}
	}
	if err != nil {
		if !errors.Is(err, ErrPartsPending) {
			r.m.appliesFailed.Inc()
		}
		return rendered{}, from, err
	}
	return out, from, nil
}

func (r *Reloader) renderConfig(raw []byte, name string, readErr error) ([]byte, []part, uint64, error) {
	if readErr != nil {
		return nil, nil, 0, fmt.Errorf("read config: %w", readErr)
	}
	from := xxhash.Sum64(raw)
	// The bytes of the last good render render the same again: a change
	// in a watched directory does not gunzip and expand them once more (a
	// gzip reader alone is some 40 KB of garbage).
	if last := r.cache.last; last.config != nil && from == r.cache.from {
		return last.config, last.parts, from, nil
	}
	b, err := gunzip(name, raw, r.opts.MaxConfigSize)
	if err != nil {
		return nil, nil, from, fmt.Errorf("read config: %w", err)
	}
	if err := r.checkEmpty(name, b); err != nil {
		return nil, nil, from, err
	}
	parts, err := parseParts(b)
	if err != nil {
		return nil, nil, from, fmt.Errorf("read config %s: %w", name, err)
	}
	if r.opts.Expander != nil {
		var undefined int
		b, undefined, err = r.opts.Expander.Expand(b)
		r.m.expansionErrors.Set(float64(undefined))
		if err != nil {
			return nil, nil, from, fmt.Errorf("expand %s: %w", name, err)
		}
		r.cache.undefined = undefined
	}
	return b, parts, from, nil
}
