package reloader

import (
	"errors"
	"fmt"
	"time"
)

// degradation is what Degraded reports besides the files left out, owned
// by Run: each error says what is wrong and what is served meanwhile.
type degradation struct {
	config   error // the configuration could not be rendered, or was held back
	files    error // rule files that could not be rendered, or were held back
	write    error // an output that could not be written
	rejected error // the process rejected the current content
}

// noteHeld records err, the outcome of the render of the configuration
// (told: the Source's Err says it already), and counts the inputs held
// back as empty. A configuration that cannot
// be rendered at start, over an output that has content (written by an
// earlier run or an init container, which the process runs), makes the
// Reloader ready: what the process runs is known, and Degraded says it.
func (r *Reloader) noteHeld(err error, told bool) {
	held := r.fileRenderer.held
	if errors.As(err, new(emptyConfigError)) {
		held++
	}
	r.m.heldBack.WithLabelValues(reasonEmpty).Set(float64(held))
	r.deg.config = nil
	if err == nil || errors.Is(err, ErrNotRead) && !errors.Is(err, ErrPartsPending) {
		return
	}
	atStart := r.cache.last.config == nil && r.startOutput
	if atStart {
		r.ready.Store(true)
	}
	switch {
	case told:
	case r.cache.last.config != nil:
		r.deg.config = fmt.Errorf("%w: the configuration last rendered is served", err)
	case atStart:
		r.deg.config = fmt.Errorf("%w: the configuration %s held at start is served", err, r.opts.ConfigOutput)
	default:
		r.deg.config = err
	}
}

// noteRejection records whether the content the last apply read is the
// one the process rejected.
func (r *Reloader) noteRejection() {
	r.deg.rejected = nil
	rej := r.report.Rejection
	if r.rejected == 0 || r.current != r.rejected || rej == nil {
		return
	}
	served := "the last accepted state is served, written back"
	if !r.hasAccepted {
		served = "no accepted state is known to write back"
	}
	r.deg.rejected = fmt.Errorf("the process rejected the current content at %s: %s; %s", rej.Time.UTC().Format(time.RFC3339), rej.Message, served)
}

// setDegraded publishes what Degraded and Ready report, from the state
// Run owns.
func (r *Reloader) setDegraded() {
	err := errors.Join(r.leftOutError(), r.deg.config, r.deg.files, r.deg.write, r.deg.rejected)
	if err == nil {
		r.degraded.Store(nil)
	} else {
		r.degraded.Store(&err)
	}
	if rej := r.deg.rejected; rej != nil {
		r.unready.Store(&rej)
	} else {
		r.unready.Store(nil)
	}
}

// Degraded returns why the process runs, but not quite on what was given,
// and what it runs meanwhile: input files left out, a configuration that
// cannot be rendered or is held back as empty, rule files that cannot be
// rendered or are held back, an output that cannot be written, content
// the process rejected; nil when nothing is amiss. The sidecars' /-/ready
// says it, and stays 200.
func (r *Reloader) Degraded() error {
	if err := r.degraded.Load(); err != nil {
		return *err
	}
	return nil
}
