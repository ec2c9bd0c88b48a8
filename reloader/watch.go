package reloader

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fsnotify/fsnotify"
)

// targets returns the directories whose entries matter: the config file's
// directory and every watched directory.
func targets(opts Options) []string {
	var dirs []string
	if opts.ConfigFile != "" {
		dirs = append(dirs, filepath.Dir(filepath.Clean(opts.ConfigFile)))
	}
	for _, d := range slices.Concat(opts.WatchedDirs, opts.RulesInputDirs) {
		dirs = append(dirs, filepath.Clean(d))
	}
	if opts.PartsDir != "" {
		dirs = append(dirs, filepath.Clean(opts.PartsDir))
	}
	slices.Sort(dirs)
	return slices.Compact(dirs)
}

// syncWatches watches every target directory, or, while one is missing, its
// nearest existing ancestor so that its creation is seen.
func (r *Reloader) syncWatches() {
	for _, dir := range r.targets {
		for d := dir; ; d = filepath.Dir(d) {
			err := r.watcher.Add(d)
			if err == nil {
				switch {
				case d != dir && !r.missing[dir]:
					r.missing[dir] = true
					r.logger.Warn("watched dir is missing, waiting for it", "dir", dir, "watching", d)
				case d == dir && r.missing[dir]:
					delete(r.missing, dir)
					r.logger.Info("watched dir appeared", "dir", dir)
				}
				break
			}
			if !errors.Is(err, fs.ErrNotExist) {
				r.watchError()
				r.logger.Warn("watch dir", "dir", d, "err", err)
			}
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	r.m.watches.Set(float64(len(r.watcher.WatchList())))
}

// relevant reports whether an event may change what the process reads.
// Kubelet bookkeeping (..<timestamp> dirs, ..data_tmp) is not.
func (r *Reloader) relevant(ev fsnotify.Event) bool {
	name := filepath.Clean(ev.Name)
	for _, t := range r.targets {
		if t == name || strings.HasPrefix(t, name+string(filepath.Separator)) {
			// A target or one of its ancestors appeared or vanished.
			r.syncWatches()
			return true
		}
	}
	dir, base := filepath.Dir(name), filepath.Base(name)
	if hidden(base) && base != dataDir {
		return false
	}
	for _, d := range slices.Concat(r.opts.WatchedDirs, r.opts.RulesInputDirs) {
		if filepath.Clean(d) == dir {
			return true
		}
	}
	if r.opts.PartsDir != "" && filepath.Clean(r.opts.PartsDir) == dir {
		return true
	}
	cfg := filepath.Clean(r.opts.ConfigFile)
	return r.opts.ConfigFile != "" && dir == filepath.Dir(cfg) && (base == filepath.Base(cfg) || base == dataDir)
}

func (r *Reloader) watchError() {
	r.m.watchErrors.Inc()
	r.watchErrs.Add(1)
}

// WatchErrors returns how many errors the file system watcher reported.
func (r *Reloader) WatchErrors() uint64 { return r.watchErrs.Load() }

// closeWatcher closes w while draining its channels, so its goroutine never
// blocks on a send.
func closeWatcher(w *fsnotify.Watcher) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range w.Events {
		}
	}()
	go func() {
		for range w.Errors {
		}
	}()
	_ = w.Close()
	<-done
}
