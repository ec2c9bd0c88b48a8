// Package reloader makes a running process converge on the files mounted
// next to it. It watches a configuration file and directories (through their
// parent directories, so the kubelet's atomic ..data swaps of Secret and
// ConfigMap volumes are always seen), renders the configuration (gunzip,
// $(VAR) expansion, atomic write), and asks the process to reload through a
// Trigger when, and only when, the content it would read has changed.
//
// The first change after a quiet period is applied at once; further changes
// within Options.QuietWindow are coalesced into one trailing reload, which
// waits for a quiet window but no longer than ten windows (1 s by default)
// after the first change it holds: a steady stream of changes cannot starve
// reloads. Failed reloads are retried with exponential backoff and jitter; a
// newer change supersedes a pending retry, and the backoff starts again from
// its first interval when the content changes or a reload succeeds.
package reloader

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/fsnotify/fsnotify"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/podreload/podreload/envsubst"
)

const (
	// DefaultQuietWindow is the coalescing window used when Options.QuietWindow is 0.
	DefaultQuietWindow = 100 * time.Millisecond
	// settleTimeout bounds how long a kubelet volume may look half-updated
	// before its content is taken as it is.
	settleTimeout = time.Second
	// stuckAfter is how long an apply may run before Ready reports it
	// stuck: longer than reading files takes, and than a trigger's
	// timeout at the sidecars' defaults.
	stuckAfter = 5 * time.Minute
	// maxRetryInterval caps the exponential backoff.
	maxRetryInterval = 2 * time.Minute
	// DefaultMaxConfigSize is the bound on the configuration used when
	// Options.MaxConfigSize is 0. Prometheus configurations of thousands
	// of scrape jobs stay under a few MiB; the sidecar holds the last good
	// configuration and a new one, each up to this size, when it renders.
	DefaultMaxConfigSize = 16 << 20
)

// Options configures a Reloader.
type Options struct {
	// ConfigFile is the configuration to render, plain or gzipped. Optional.
	ConfigFile string
	// ConfigOutput receives ConfigFile gunzipped and with $(VAR) expanded.
	// Empty means ConfigFile is only watched, not rendered.
	ConfigOutput string
	// WatchedDirs are directories whose top-level files the process reads.
	WatchedDirs []string
	// PartsDir holds the parts a split configuration names (see
	// PartDirective), each a file of the part's name, when they are not
	// read from a PartSource. It is watched as the config file's
	// directory is. Optional.
	PartsDir string
	// MaxConfigSize bounds ConfigFile, plain or gunzipped: a larger one (a
	// gzip bomb, a runaway file) is refused and the previous output kept.
	// 0 means DefaultMaxConfigSize.
	MaxConfigSize int64
	// Expander expands $(VAR) references in the configuration; nil copies it verbatim.
	Expander *envsubst.Expander
	// Trigger reloads the process. Required by Run.
	Trigger Trigger
	// DelayInterval, when positive, delays every reload until no change has
	// been seen for this long (prometheus-config-reloader's --delay-interval),
	// but never more than twice as long (or ten QuietWindows, if that is
	// longer) after the first change not yet applied. Zero applies the first
	// change at once and coalesces the rest.
	DelayInterval time.Duration
	// QuietWindow is how long after a reload further changes are coalesced
	// into one trailing reload, which waits for QuietWindow without a
	// change, but at most ten QuietWindows after the first change it
	// holds; 0 means DefaultQuietWindow.
	QuietWindow time.Duration
	// WatchInterval re-hashes everything periodically as a safety net; 0 disables it.
	WatchInterval time.Duration
	// RetryInterval is the first backoff step after a failed reload; 0 means 5s.
	RetryInterval time.Duration
	// Retries bounds how often a failed apply is retried before waiting for
	// the next change or the next WatchInterval; negative means no bound.
	Retries int
	// AfterApply, when set, is called by Run after each apply, whatever its
	// outcome. It must not block.
	AfterApply func()
	// Source, when set, supplies the configuration (instead of ConfigFile)
	// and files written into RulesDir; Run applies after each of its changes.
	Source Source
	// RulesDir receives the files of the Source or of RulesInputDirs,
	// each file X.gz gunzipped into X (see GzipSuffix), at most
	// MaxConfigSize bytes. It belongs to the Reloader: files it does not
	// hold are removed from it. A gzipped file that cannot be gunzipped
	// is an apply failure, the file's last good version staying.
	RulesDir string
	// RulesInputDirs are directories of rule files, each a ConfigMap's
	// volume, written into RulesDir as a Source's files are: the file F of
	// the directory D is "<base name of D>/F". They are watched as
	// WatchedDirs are. Not with a Source.
	RulesInputDirs []string
	// KeepAccepted handles a reload the process rejects (RejectedError):
	// the last accepted configuration and rule files are written back
	// (the process still runs them, and reads them again if it restarts),
	// and the rejected content is sent again only with the retries'
	// backoff (the process may have refused it for something not there
	// yet), a change being applied at once. Without it, a rejected reload
	// is retried as any failed one, its content staying on disk.
	KeepAccepted bool
	// StateDir, with KeepAccepted, keeps the last state the process
	// accepted (the rendered configuration, its parts, the files of
	// RulesDir) and the content it rejected after it, so that no restart
	// starts the process on content it rejected while it accepted other:
	// at start, content recorded as rejected is not rendered, the accepted
	// state is written instead and reported with the rejection. Empty
	// means DefaultStateDir beside ConfigOutput, which outlives a restart
	// of the Reloader's container; a directory on a disk that outlives
	// the pod (the process' data volume) also outlives a restart of the
	// pod.
	StateDir string
	// AllowEmptyConfig applies an empty configuration (nothing but
	// whitespace, plain or gunzipped) where the last one rendered, or the
	// output, has content, and an empty file of RulesDir where its last
	// version had content. By default each is held back (Degraded says
	// so, reloader_inputs_held_back counts it) and the previous version
	// kept: a writer that truncates before it writes, or a Secret emptied
	// by mistake, would make the process drop everything.
	AllowEmptyConfig bool
	// OnApplied, when set, is called by Run with what the process runs
	// each time that changes: after each reload it accepted, after each
	// one it rejected, and when the content goes back to what it runs
	// after a rejection (a rejection is reported with KeepAccepted only).
	// It must not block.
	OnApplied func(Applied)
	// StateMirror, with StateDir, keeps a copy of StateDir outside the
	// pod (a Secret), for a restart that loses StateDir with the pod's
	// emptyDir: each time StateDir's files change, Run hands them to it;
	// when Run or RenderOnce starts and StateDir holds neither file, they
	// are read from it first. Optional.
	StateMirror StateMirror
}

// Reloader watches files and reloads a process when their content changes.
type Reloader struct {
	logger    *slog.Logger
	opts      Options
	targets   []string
	m         metrics
	ready     atomic.Bool
	degraded  atomic.Pointer[error] // see Degraded
	unready   atomic.Pointer[error] // the rejection Ready reports before a reload succeeded
	watchErrs atomic.Uint64
	applying  atomic.Int64  // when the apply in progress started (Unix ns), 0 between applies
	stuck     time.Duration // see stuckAfter

	// Owned by Run.
	watcher       *fsnotify.Watcher
	missing       map[string]bool // target dirs seen missing
	applied       uint64          // hash of the state the process last accepted
	synced        bool            // applied is valid and nothing failed since
	accepted      state           // what the process last accepted, when KeepAccepted
	hasAccepted   bool            // whether accepted holds a state
	disk          written         // what the outputs hold
	state         *stateStore     // the accepted state kept in StateDir, nil without one
	startRejected *savedRejection // the rejection StateDir recorded, until the first apply that reads a state
	leftOut       leftOut         // input files left out
	deg           degradation     // what Degraded reports
	startOutput   bool            // whether ConfigOutput had content when Run started
	current       uint64          // hash of the state the last apply read
	adopted       bool            // accepted holds what the outputs held at start, not saved in StateDir
	rejected      uint64          // hash of the state the process last rejected, 0 if none since
	files         filesWriter     // RulesDir
	fileRenderer  fileRenderer    // the files written into RulesDir
	cache         renderCache     // what the last renders left
	report        Applied         // what OnApplied was last given
}

// state is what the process reads after an apply.
type state struct {
	config []byte            // the rendered configuration, nil without one
	dirs   []uint64          // the content of the watched directories
	files  map[string]string // the files written into RulesDir
	stored map[string]string // the files as stored (the Source's, or RulesInputDirs') that files are rendered from
	parts  map[string][]byte // the rendered parts of the configuration, by name
	raw    []byte            // the configuration as stored that config was rendered from, when OnApplied is set
}

// New returns a Reloader. A nil logger discards logs.
func New(logger *slog.Logger, reg prometheus.Registerer, opts Options) (*Reloader, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case opts.ConfigFile == "" && len(opts.WatchedDirs) == 0 && len(opts.RulesInputDirs) == 0 && opts.Source == nil:
		return nil, errors.New("nothing to watch: give a config file, a watched directory, a rules input directory or a source")
	case opts.ConfigFile != "" && opts.Source != nil:
		return nil, errors.New("give a config file or a source, not both")
	case opts.ConfigOutput != "" && opts.ConfigFile == "" && opts.Source == nil:
		return nil, errors.New("a config output needs a config file or a source")
	case opts.Source != nil && opts.ConfigOutput == "":
		return nil, errors.New("a source needs a config output")
	case opts.RulesDir != "" && opts.Source == nil && len(opts.RulesInputDirs) == 0:
		return nil, errors.New("a rules dir is written from a source or from rules input dirs")
	case len(opts.RulesInputDirs) > 0 && opts.Source != nil:
		return nil, errors.New("give a source or rules input dirs, not both")
	case len(opts.RulesInputDirs) > 0 && opts.RulesDir == "":
		return nil, errors.New("rules input dirs are written into a rules dir")
	case opts.PartsDir != "" && opts.ConfigFile == "":
		return nil, errors.New("a parts dir goes with a config file")
	case opts.PartsDir != "" && opts.ConfigOutput == "":
		return nil, errors.New("a parts dir needs a config output")
	}
	if opts.QuietWindow <= 0 {
		opts.QuietWindow = DefaultQuietWindow
	}
	if opts.RetryInterval <= 0 {
		opts.RetryInterval = 5 * time.Second
	}
	if opts.MaxConfigSize <= 0 {
		opts.MaxConfigSize = DefaultMaxConfigSize
	}
	if err := checkInputDirs(opts.RulesInputDirs); err != nil {
		return nil, err
	}
	r := &Reloader{logger: logger, opts: opts, targets: targets(opts), m: newMetrics(reg), stuck: stuckAfter,
		files: filesWriter{dir: opts.RulesDir}, fileRenderer: fileRenderer{limit: opts.MaxConfigSize, allowEmpty: opts.AllowEmptyConfig}}
	for _, reason := range []string{reasonUnreadable, reasonInvalidName} {
		r.m.leftOut.WithLabelValues(reason)
	}
	r.m.heldBack.WithLabelValues(reasonEmpty)
	if opts.KeepAccepted && opts.StateDir == "" && opts.ConfigOutput != "" {
		opts.StateDir = filepath.Join(filepath.Dir(opts.ConfigOutput), DefaultStateDir)
	}
	if opts.KeepAccepted && opts.StateDir != "" {
		r.state = &stateStore{dir: opts.StateDir, limit: opts.MaxConfigSize}
	}
	if opts.StateMirror != nil && r.state == nil {
		return nil, errors.New("a state mirror needs a state dir (KeepAccepted, and StateDir or ConfigOutput)")
	}
	return r, nil
}

// Ready returns nil once the process has accepted the current state once,
// and an error while no reload has succeeded yet or when an apply has been
// running for too long (a stuck reload endpoint or file system).
func (r *Reloader) Ready() error {
	if start := r.applying.Load(); start != 0 && time.Since(time.Unix(0, start)) > r.stuck {
		return fmt.Errorf("not ready: an apply has been running for more than %s", r.stuck)
	}
	if !r.ready.Load() {
		if rej := r.unready.Load(); rej != nil {
			return fmt.Errorf("not ready: no reload has succeeded yet; %w", *rej)
		}
		return errors.New("not ready: no reload has succeeded yet")
	}
	return nil
}

// Run watches until ctx is done. Watches are in place before the first
// apply, so nothing changed during start-up is missed.
func (r *Reloader) Run(ctx context.Context) error {
	if r.opts.Trigger == nil {
		return errors.New("run: no trigger")
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("create watcher: %w", err)
	}
	r.watcher, r.missing = w, map[string]bool{}
	defer closeWatcher(w)
	r.removeTemps()
	r.restoreMirrored(ctx)
	r.loadState()
	r.adoptOutputs()
	r.syncWatches()
	r.logger.Info("watching", "config", r.opts.ConfigFile, "output", r.opts.ConfigOutput,
		"dirs", strings.Join(r.opts.WatchedDirs, ","), "rules_input_dirs", strings.Join(r.opts.RulesInputDirs, ","), "rules_dir", r.opts.RulesDir, "trigger", r.opts.Trigger.String())
	var sourceChanged <-chan struct{}
	if r.opts.Source != nil {
		sourceChanged = r.opts.Source.Changed()
	}

	s := newSchedule(r.opts)
	defer s.stop()
	var safetyTick <-chan time.Time
	if r.opts.WatchInterval > 0 {
		t := time.NewTicker(r.opts.WatchInterval)
		defer t.Stop()
		safetyTick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-w.Errors:
			r.watchError()
			r.logger.Warn("watch error", "err", err)
		case ev := <-w.Events:
			r.m.events.Inc()
			if !r.relevant(ev) {
				continue
			}
			r.logger.Debug("change seen", "path", ev.Name, "op", ev.Op.String())
			s.changeSeen()
		case <-sourceChanged:
			s.changeSeen()
		case <-safetyTick:
			s.tick()
		case <-s.C():
			consistent, retry := s.applying()
			r.applying.Store(time.Now().UnixNano())
			res, input, err := r.apply(ctx, consistent, retry)
			r.applying.Store(0)
			if r.opts.AfterApply != nil {
				r.opts.AfterApply()
			}
			r.afterApply(ctx, s, res, input, err)
			r.noteRejection()
			r.setDegraded()
		}
	}
}

// afterApply tells s how the apply that read input ended, and logs it.
func (r *Reloader) afterApply(ctx context.Context, s *schedule, res result, input uint64, err error) {
	switch {
	case res == resultSettling:
		s.unsettled()
	case errors.Is(err, ErrNotRead) && !errors.Is(err, ErrPartsPending):
		// The source announces its first content.
		s.applied(input, res)
		r.logger.Debug("waiting for the source's first content", "err", err)
	case errors.Is(err, ErrPartsPending):
		// The source or the volume announces the parts: what
		// the process runs stays until they are all there.
		s.applied(input, res)
		r.logger.Info("waiting for the configuration's parts", "err", err)
	case res == resultHeld:
		// The rejected content again: its retry stays when it was.
		s.held()
	case res == resultRejected || res == resultRestored:
		// Tried again, slowly: the process may have refused it for
		// something not there yet (a file from a Secret mounted later).
		attempt, wait := s.applyFailed(input, res)
		switch {
		case res == resultRestored && attempt == 0:
			r.logger.Error("the current content was rejected before this start: the last accepted state is written instead, waiting for the next change", "err", err)
		case res == resultRestored:
			r.logger.Error("the current content was rejected before this start: the last accepted state is written instead, trying again later", "err", err, "attempt", attempt, "retry_in", wait.Round(time.Millisecond))
		case attempt == 0:
			r.logger.Error("reload rejected: the last accepted state is kept, waiting for the next change", "err", err)
		default:
			r.logger.Error("reload rejected: the last accepted state is kept, trying again later", "err", err, "attempt", attempt, "retry_in", wait.Round(time.Millisecond))
		}
	case err == nil:
		s.applied(input, res)
	default:
		attempt, wait := s.applyFailed(input, res)
		if attempt == 0 {
			r.logger.Error("apply failed, waiting for the next change", "err", err, "retries", r.opts.Retries)
			break
		}
		level := slog.LevelError
		if !r.ready.Load() {
			level = slog.LevelWarn // The process may still be starting.
		}
		r.logger.Log(ctx, level, "apply failed", "err", err, "attempt", attempt, "retry_in", wait.Round(time.Millisecond))
	}
}

type result int

const (
	resultUnchanged result = iota
	resultSettling
	resultReloaded
	resultRejected // reloaded, and the process refused the new content
	resultFailed   // a reload requested, and not answered, or refused otherwise
	resultHeld     // the content the process rejected, not sent again before its retry
	resultRestored // the content the process rejected before a restart: the accepted state written instead
)

// requested reports whether the apply sent the process a reload request.
func (res result) requested() bool {
	return res == resultReloaded || res == resultRejected || res == resultFailed
}

// apply renders the configuration, hashes what the process would read and,
// when that differs from what it last accepted, writes the outputs and
// reloads it. Content the process rejected is sent again only when retry
// says its retry is due. apply also returns a hash of its input, what it
// read, whatever its fate.
func (r *Reloader) apply(ctx context.Context, consistent, retry bool) (result, uint64, error) {
	rd, err := r.read(consistent)
	switch {
	case rd.settling:
		return resultSettling, 0, nil
	case err != nil:
		return resultUnchanged, rd.input, err
	}
	st, input, kept := rd.st, rd.input, rd.kept
	sum := r.sum(st)
	r.current = sum
	if res, err, ok := r.resumeRejected(st, sum); ok {
		return res, input, errors.Join(kept, err)
	}
	switch {
	case r.synced && sum == r.applied:
		r.reportUnchanged(st)
		return resultUnchanged, input, errors.Join(kept, r.write(st))
	case r.opts.KeepAccepted && r.rejected != 0 && sum == r.rejected && !retry:
		// Rejected as it is, its retry not due: what the process runs
		// stays on disk.
		return resultHeld, input, errors.Join(kept, r.restore())
	}
	content := r.contentHash(st)
	if err := r.write(st); err != nil {
		// Each output is written on its own: the process is reloaded
		// with what they hold, if that is new to it.
		r.m.appliesFailed.Inc()
		kept = errors.Join(kept, err)
		st, content = r.onDisk(st), ""
		sum = r.sum(st)
		if r.current = sum; r.synced && sum == r.applied {
			return resultUnchanged, input, kept
		}
	}
	start := time.Now()
	err = r.opts.Trigger.Reload(ctx)
	r.m.duration.Observe(time.Since(start).Seconds())
	r.m.reloads.Inc()
	if err != nil {
		r.m.reloadsFailed.Inc()
		r.m.lastSuccess.Set(0)
		var rejected *RejectedError
		if r.opts.KeepAccepted && errors.As(err, &rejected) {
			// What the process runs goes back on disk at once, before
			// anything tells of the rejection.
			r.loadAccepted()
			restoreErr := r.restore()
			r.m.rejected.Inc()
			r.rejected = sum
			r.rejectedNow(st, rejected)
			return resultRejected, input, errors.Join(kept, err, restoreErr)
		}
		r.synced = false
		if r.opts.KeepAccepted && r.rejected != 0 && sum == r.rejected {
			// The retry of content the process rejected, not answered:
			// what it accepted goes back on disk until the next try.
			return resultFailed, input, errors.Join(kept, err, r.restore())
		}
		return resultFailed, input, errors.Join(kept, err)
	}
	r.m.lastSuccess.Set(1)
	r.m.lastSuccessSeconds.SetToCurrentTime()
	r.applied, r.synced, r.rejected = sum, true, 0
	r.ready.Store(true)
	r.reportApplied(content, time.Now(), nil)
	if r.opts.KeepAccepted {
		r.accepted, r.hasAccepted, r.adopted = st, true, false
		r.saveAccepted()
	}
	r.logger.Info("reloaded", "trigger", r.opts.Trigger.String(), "duration", time.Since(start).Round(time.Microsecond))
	return resultReloaded, input, kept
}

// restore writes back what the process last accepted, after it rejected
// newer content; nothing before it accepted anything.
func (r *Reloader) restore() error {
	if !r.hasAccepted {
		return nil
	}
	if err := r.write(r.accepted); err != nil {
		return fmt.Errorf("restore the last accepted state: %w", err)
	}
	return nil
}

// sum hashes what the process reads in st.
func (r *Reloader) sum(st state) uint64 {
	h := xxhash.New()
	_, _ = h.Write(st.config)
	for _, name := range slices.Sorted(maps.Keys(st.parts)) {
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(st.parts[name]))
		_, _ = h.Write(st.parts[name])
	}
	for i, dir := range r.opts.WatchedDirs {
		fmt.Fprintf(h, "%s\x00%d\x00", dir, st.dirs[i])
	}
	var files uint64
	for name, content := range st.files {
		files += fileHash(name, content)
	}
	writeUint64(h, files)
	return h.Sum64()
}

func writeUint64(d *xxhash.Digest, v uint64) {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], v)
	_, _ = d.Write(b[:])
}
