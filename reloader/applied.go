package reloader

import (
	"fmt"
	"maps"
	"time"

	"github.com/podreload/podreload/contract"
)

// Applied is what the process runs, as Options.OnApplied reports it.
type Applied struct {
	// Hash is the content hash (package contract) of the configuration
	// as stored and the rule files the process last accepted; empty before
	// it accepted any, or when they could not be read to hash them.
	Hash string
	// Time is when the process accepted them.
	Time time.Time
	// Rejection is the process' refusal of newer content, nil when it
	// runs the current content.
	Rejection *Rejection
}

// Rejection is a reload the process refused (a RejectedError).
type Rejection struct {
	// Message is the process' explanation.
	Message string
	// Time is when it refused.
	Time time.Time
}

// reportApplied records what the process runs and gives it to OnApplied.
func (r *Reloader) reportApplied(hash string, at time.Time, rejection *Rejection) {
	r.report = Applied{Hash: hash, Time: at, Rejection: rejection}
	if r.opts.OnApplied != nil {
		r.opts.OnApplied(r.report)
	}
}

// reportUnchanged reports, after an apply that found what the process
// runs, the content hash of st when it is not the one reported: back to
// what the process runs after a rejection, or the same content stored
// otherwise (rule files now gzipped, as a newer controller stores them).
func (r *Reloader) reportUnchanged(st state) {
	if r.opts.OnApplied == nil {
		return
	}
	if hash := r.contentHash(st); hash != r.report.Hash || r.report.Rejection != nil {
		r.reportApplied(hash, r.report.Time, nil)
	}
}

// contentHash returns the content hash of st, what is about to be applied,
// when OnApplied wants it: from the files as stored, the Source's or those
// of RulesInputDirs, and those of the watched directories as the volumes
// present them. A failure to read them is logged and leaves the hash
// empty: the reload goes on.
func (r *Reloader) contentHash(st state) string {
	if r.opts.OnApplied == nil {
		return ""
	}
	if r.opts.Source != nil {
		return contract.Sum(st.raw, st.stored)
	}
	sum, err := volumeContentHash(st.raw, st.stored, r.opts.WatchedDirs, r.opts.MaxConfigSize)
	if err != nil {
		r.logger.Warn("hash the content to apply: its hash is reported empty", "err", err)
	}
	return sum
}

// volumeContentHash returns the content hash (package contract) of a
// configuration read from a volume, raw as stored, of stored, the files
// of RulesInputDirs as stored, and of the files in dirs, each a
// ConfigMap's volume, named as readInputDirs names them, as the API
// source names a ConfigMap's keys.
func volumeContentHash(raw []byte, stored map[string]string, dirs []string, limit int64) (string, error) {
	files, _, err := readInputDirs(dirs, limit)
	if err != nil {
		return "", fmt.Errorf("hash watched dir: %w", err)
	}
	maps.Copy(files, stored)
	return contract.Sum(raw, files), nil
}
