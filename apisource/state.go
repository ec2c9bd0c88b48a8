package apisource

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/podreload/podreload/contract"
)

const (
	// maxSecretBytes is what the API server lets a Secret's data hold,
	// keys and values together.
	maxSecretBytes = 1 << 20
	// stateSuffix ends each key of the state Secret: a file of the state
	// directory, gzipped.
	stateSuffix = ".gz"
	// maxStateFile bounds each file of the state Secret, gunzipped.
	maxStateFile = 64 << 20
	// stateLoadTimeout bounds the read of the state Secret at start,
	// retries included: the init container waits for it.
	stateLoadTimeout = 30 * time.Second
	// stateWriteTimeout bounds one write of the state Secret.
	stateWriteTimeout = 30 * time.Second
)

// The reasons of reloader_state_secret_errors_total.
const (
	reasonRead     = "read"
	reasonWrite    = "write"
	reasonTooLarge = "too_large"
)

// StateSecretOptions says which Secret a StateSecret writes.
type StateSecretOptions struct {
	// Config reaches the API server.
	Config Config
	// Namespace and Name name the Secret, which must exist (the
	// controller creates it: a Role cannot grant create by name).
	// Required.
	Namespace, Name string
}

// StateSecret mirrors the config-reloader's state directory (the last
// accepted state, the rejection recorded after it) in a Secret, one key
// per file, gzipped, so that a new pod whose emptyDir went with the last
// one starts from it (a reloader.StateMirror). Store never blocks: only
// the latest state waits to be written, with one JSON merge patch, when it
// differs from what the Secret holds; a failed write is retried with
// backoff until it succeeds or a newer state replaces it. A state too
// large for a Secret is kept locally only: the Secret is emptied, so that
// it never holds a state older than the local one.
type StateSecret struct {
	c      *client
	logger *slog.Logger
	path   string
	secret string
	errors *prometheus.CounterVec
	writes prometheus.Counter
	w      *latestWriter[map[string][]byte]

	mu      sync.Mutex
	written uint64 // hash of the files the Secret holds
	known   bool   // whether written is known
}

// NewStateSecret returns a StateSecret; Run writes. A nil logger discards
// logs.
func NewStateSecret(logger *slog.Logger, reg prometheus.Registerer, opts StateSecretOptions) (*StateSecret, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.Namespace == "" || opts.Name == "" {
		return nil, errors.New("the state Secret needs a namespace and a name")
	}
	c, err := newClient(opts.Config)
	if err != nil {
		return nil, err
	}
	f := promauto.With(reg)
	s := &StateSecret{
		c: c, logger: logger,
		path:   "/api/v1/namespaces/" + url.PathEscape(opts.Namespace) + "/secrets/" + url.PathEscape(opts.Name),
		secret: opts.Namespace + "/" + opts.Name,
		errors: f.NewCounterVec(prometheus.CounterOpts{
			Name: "reloader_state_secret_errors_total",
			Help: "Total number of failed reads (read) and writes (write) of the Secret mirroring the state directory, and of states too large for it, kept locally only (too_large).",
		}, []string{"reason"}),
		writes: f.NewCounter(prometheus.CounterOpts{
			Name: "reloader_state_secret_writes_total",
			Help: "Total number of writes of the Secret mirroring the state directory.",
		}),
	}
	for _, reason := range []string{reasonRead, reasonWrite, reasonTooLarge} {
		s.errors.WithLabelValues(reason)
	}
	s.w = newLatestWriter(s.write, s.writeFailed)
	return s, nil
}

// Load reads the files the Secret holds, by name; none when it holds none
// or does not exist. A failure to reach the API server is retried for up
// to stateLoadTimeout; one the API server answers (403, say) is not.
func (s *StateSecret) Load(ctx context.Context) (map[string][]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, stateLoadTimeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		files, err := s.fetch(ctx)
		if err == nil {
			s.mu.Lock()
			if !s.known {
				s.written, s.known = hashFiles(files), true
			}
			s.mu.Unlock()
			if len(files) > 0 {
				s.logger.Info("state read from its Secret", "secret", s.secret, "files", slices.Sorted(maps.Keys(files)))
			}
			return files, nil
		}
		s.errors.WithLabelValues(reasonRead).Inc()
		var se *StatusError
		if errors.As(err, &se) && se.Code < http.StatusInternalServerError && se.Code != http.StatusTooManyRequests {
			return nil, err
		}
		wait := backoff(attempt)
		s.logger.Warn("read the state Secret", "secret", s.secret, "err", err, "attempt", attempt, "retry_in", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (gave up after %s)", err, stateLoadTimeout)
		case <-time.After(wait):
		}
	}
}

// fetch reads the files of the Secret; none when it does not exist.
func (s *StateSecret) fetch(ctx context.Context) (map[string][]byte, error) {
	resp, err := s.c.get(ctx, s.path, nil)
	var se *StatusError
	if errors.As(err, &se) && se.Code == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get Secret %s: %w", s.secret, err)
	}
	defer resp.Body.Close()
	var secret struct {
		Data map[string][]byte `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4*maxSecretBytes)).Decode(&secret); err != nil {
		return nil, fmt.Errorf("get Secret %s: %w", s.secret, err)
	}
	files := map[string][]byte{}
	for key, gz := range secret.Data {
		name, ok := strings.CutSuffix(key, stateSuffix)
		if !ok {
			continue
		}
		b, err := gunzip(gz)
		if err != nil {
			return nil, fmt.Errorf("gunzip key %s of Secret %s: %w", key, s.secret, err)
		}
		files[name] = b
	}
	return files, nil
}

func gunzip(gz []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(zr, maxStateFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxStateFile {
		return nil, fmt.Errorf("more than %d MiB gunzipped", maxStateFile>>20)
	}
	return b, nil
}

// Store replaces the state waiting to be written with files. It does not
// block: a reloader.StateMirror.
func (s *StateSecret) Store(files map[string][]byte) {
	s.w.set(maps.Clone(files))
}

// Run writes the states stored until ctx is done.
func (s *StateSecret) Run(ctx context.Context) error {
	return s.w.run(ctx)
}

// write makes the Secret hold files, unless it does: one merge patch that
// sets each file's key and removes the others'. A state too large for the
// Secret empties it. Before its first write, a StateSecret that never read
// the Secret reads it, to write nothing if it holds files already.
func (s *StateSecret) write(ctx context.Context, files map[string][]byte) error {
	ctx, cancel := context.WithTimeout(ctx, stateWriteTimeout)
	defer cancel()
	s.mu.Lock()
	known, written := s.known, s.written
	s.mu.Unlock()
	if !known {
		held, err := s.fetch(ctx)
		if err != nil {
			return err
		}
		written = hashFiles(held)
	}
	sum := hashFiles(files)
	if sum == written {
		s.setWritten(sum)
		return nil
	}
	data := map[string]any{}
	size := 0
	for _, name := range slices.Sorted(maps.Keys(files)) {
		gz := contract.Gzip(files[name])
		data[name+stateSuffix] = gz
		size += len(name) + len(stateSuffix) + len(gz)
	}
	if size > maxSecretBytes {
		s.errors.WithLabelValues(reasonTooLarge).Inc()
		s.logger.Warn("state too large for its Secret: kept in the state dir only, the Secret emptied; a new pod starts without it",
			"secret", s.secret, "bytes_gzipped", size, "limit", maxSecretBytes)
		files, data = nil, map[string]any{}
		if sum = hashFiles(nil); sum == written {
			s.setWritten(sum)
			return nil
		}
	}
	// The keys of the files no longer there go.
	for _, name := range []string{"accepted.tar", "rejected.json"} {
		if _, ok := files[name]; !ok {
			data[name+stateSuffix] = nil
		}
	}
	patch, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		return err
	}
	s.writes.Inc()
	if err := s.c.mergePatch(ctx, s.path, patch); err != nil {
		return fmt.Errorf("patch Secret %s: %w", s.secret, err)
	}
	s.setWritten(sum)
	s.logger.Debug("state written to its Secret", "secret", s.secret, "bytes_gzipped", size)
	return nil
}

// writeFailed logs and counts a failed write of the Secret.
func (s *StateSecret) writeFailed(err error, attempt int, wait time.Duration) {
	s.errors.WithLabelValues(reasonWrite).Inc()
	s.logger.Warn("write the state Secret", "secret", s.secret, "err", err, "attempt", attempt, "retry_in", wait.Round(time.Millisecond))
}

func (s *StateSecret) setWritten(sum uint64) {
	s.mu.Lock()
	s.written, s.known = sum, true
	s.mu.Unlock()
}

// hashFiles hashes files, by name.
func hashFiles(files map[string][]byte) uint64 {
	h := xxhash.New()
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(files[name]))
		_, _ = h.Write(files[name])
	}
	return h.Sum64()
}
