package reloader

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/podreload/podreload/contenthash"
)

// Applied is what the process runs, as Options.OnApplied reports it.
type Applied struct {
	// Hash is the content hash (package contenthash) of the configuration
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

// contentHash returns the content hash of st, what is about to be applied,
// when OnApplied wants it: from the Source's files, or from the watched
// directories as the volumes present them. A failure to read them is
// logged and leaves the hash empty: the reload goes on.
func (r *Reloader) contentHash(st state) string {
	if r.opts.OnApplied == nil {
		return ""
	}
	if r.opts.Source != nil {
		return contenthash.Sum(st.raw, st.files)
	}
	sum, err := volumeContentHash(st.raw, r.opts.WatchedDirs, r.opts.MaxConfigSize)
	if err != nil {
		r.logger.Warn("hash the content to apply: its hash is reported empty", "err", err)
	}
	return sum
}

// volumeContentHash returns the content hash (package contenthash) of a
// configuration read from a volume, raw as stored, and of the files in
// dirs, each a ConfigMap's volume: the files a reader of dir sees at its top
// level (symlinks followed, kubelet bookkeeping left out) named
// "<base name of dir>/<file>", as the API source names a ConfigMap's keys.
func volumeContentHash(raw []byte, dirs []string, limit int64) (string, error) {
	files := map[string]string{}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("hash watched dir: %w", err)
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
			b, err := readRegular(path, limit)
			if err != nil {
				return "", fmt.Errorf("hash watched dir: %w", err)
			}
			files[group+"/"+e.Name()] = string(b)
		}
	}
	return contenthash.Sum(raw, files), nil
}
