package apisource

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sync"

	"github.com/podreload/podreload/reloader"
)

// The parts of a split configuration (contract.PartDirective) are Secrets
// of the configuration Secret's namespace, read by name, each with a
// watch of its own: a list or watch by name is what a Role can grant on
// named Secrets alone (resourceNames), where a label selector would need
// every Secret of the namespace. The set of parts is not known before
// the configuration is read: Parts tells Run which Secrets to watch, and
// Run starts and stops their watchers, so that any number of parts needs
// no change of the pod.

// partState is what is known of a part's Secret.
type partState struct {
	synced bool              // listed once
	data   map[string][]byte // decoded; nil while the Secret does not exist
	rv     string
}

// Parts returns the configuration key of the Secrets names, as stored, by
// name, and reads these Secrets from now on, and no others. A Secret not
// listed yet is an error wrapping reloader.ErrNotRead; one that does not
// exist, or lacks the key, an error saying so.
func (s *Source) Parts(names []string) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for name := range s.parts {
		if !slices.Contains(names, name) {
			delete(s.parts, name)
			changed = true
		}
	}
	out := make(map[string][]byte, len(names))
	var first error
	for _, name := range names {
		p, ok := s.parts[name]
		if !ok {
			p = &partState{}
			s.parts[name] = p
			changed = true
		}
		err := s.partErr(name, p)
		if err == nil {
			out[name] = p.data[s.opts.SecretKey]
		}
		if first == nil {
			first = err
		}
	}
	if changed {
		select {
		case s.partsWanted <- struct{}{}:
		default:
		}
	}
	return out, first
}

// runParts runs a watcher for each part Parts last asked for, until ctx
// is done.
func (s *Source) runParts(ctx context.Context) {
	type run struct {
		state  *partState
		cancel context.CancelFunc
		done   chan struct{}
	}
	var wg sync.WaitGroup
	running := map[string]run{}
	defer func() {
		for _, r := range running {
			r.cancel()
		}
		wg.Wait()
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.partsWanted:
		}
		// A part forgotten and named again since has a new state: its
		// watcher starts again, and lists it again.
		s.mu.Lock()
		wanted := maps.Clone(s.parts)
		s.mu.Unlock()
		for name, r := range running {
			if wanted[name] != r.state {
				r.cancel()
				<-r.done // Then its health is its last word.
				delete(running, name)
				s.health.ok(partHealth(name))
			}
		}
		for _, name := range slices.Sorted(maps.Keys(wanted)) {
			if _, ok := running[name]; ok {
				continue
			}
			pctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			running[name] = run{state: wanted[name], cancel: cancel, done: done}
			id, state := s.opts.SecretNamespace+"/"+name, wanted[name]
			st := secretStore{s: s, name: id, set: func(data map[string][]byte, rv string) { s.setPart(name, state, data, rv) }}
			w := s.newWatcher("secrets", s.opts.SecretNamespace, "secret "+id,
				url.Values{"fieldSelector": {"metadata.name=" + name}}, st)
			w.healthKey = partHealth(name)
			wg.Go(func() {
				defer close(done)
				w.run(pctx)
			})
		}
	}
}

func partHealth(name string) string { return "secret " + name }

// partErr says why the part name, in state p, has no content: not read
// yet (and, if its watcher fails, why), missing, or without the key. s.mu
// is held.
func (s *Source) partErr(name string, p *partState) error {
	what := "secret " + s.opts.SecretNamespace + "/" + name
	_, ok := p.data[s.opts.SecretKey]
	switch {
	case !p.synced:
		if cause := s.health.errOf(partHealth(name)); cause != nil {
			return fmt.Errorf("%s: %w: %w", what, reloader.ErrNotRead, cause)
		}
		return fmt.Errorf("%s: %w", what, reloader.ErrNotRead)
	case p.data == nil:
		return fmt.Errorf("%s not found: waiting for it", what)
	case !ok:
		return fmt.Errorf("%s has no key %q (it has %s): waiting for it", what, s.opts.SecretKey, keys(p.data))
	}
	return nil
}

// setPart keeps the Secret of the part name, while p is its state.
func (s *Source) setPart(name string, p *partState, data map[string][]byte, rv string) {
	s.mu.Lock()
	wanted := s.parts[name] == p
	changed := wanted && (!p.synced || rv != p.rv)
	if wanted {
		p.synced, p.data, p.rv = true, data, rv
	}
	s.mu.Unlock()
	if changed {
		s.notify()
	}
}
