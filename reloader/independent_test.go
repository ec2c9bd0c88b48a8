package reloader

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// partsSource is a memSource that also supplies parts, or an error.
type partsSource struct {
	*memSource
	parts    map[string][]byte
	partsErr error
}

func (p *partsSource) Parts([]string) (map[string][]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.parts), p.partsErr
}

// TestRulesApplyWithoutConfig: the rule files and the configuration are
// independent inputs. While the configuration cannot be read (its Secret
// deleted, a part's Secret forbidden), rule changes still apply, with the
// last good configuration, which stays on disk; the configuration's
// trouble is logged naming the Secret and the cause.
func TestRulesApplyWithoutConfig(t *testing.T) {
	t.Run("config Secret missing", func(t *testing.T) {
		h, src := sourceHarness(t)
		src.set("v: 1\n", map[string]string{"cm/a.yaml": "a1"}, nil)
		h.start(t)
		h.reloaded(t, 1, "v: 1\n|cm/a.yaml=a1;")

		missing := errors.New("secret test/cfg not found: waiting for it")
		src.mu.Lock()
		src.snap = Snapshot{ConfigName: "secret test/cfg key prometheus.yaml.gz", ConfigErr: missing, Files: map[string]string{"cm/a.yaml": "a2"}}
		src.mu.Unlock()
		src.changed <- struct{}{}
		h.reloaded(t, 2, "v: 1\n|cm/a.yaml=a2;")
		h.logs.waitErr(t, regexp.QuoteMeta("read config: secret test/cfg not found: waiting for it (keeping the previous config)"))
		require.Positive(t, testutil.ToFloat64(h.r.m.appliesFailed))

		// The Secret back: applied as any change.
		src.set("v: 2\n", map[string]string{"cm/a.yaml": "a2"}, nil)
		h.reloaded(t, 3, "v: 2\n|cm/a.yaml=a2;")
	})

	t.Run("part Secret forbidden", func(t *testing.T) {
		h, mem := sourceHarness(t)
		src := &partsSource{memSource: mem, parts: map[string][]byte{"cfg-1": []byte("jobs: 1\n")}}
		h.opts.Source = src
		main := splitConfig("main: 1\n", [2]string{"cfg-1", "jobs: 1\n"})
		mem.set(main, map[string]string{"cm/a.yaml": "a1"}, nil)
		h.start(t)
		h.reloaded(t, 1, main+"|cm/a.yaml=a1;")

		// A new generation names a part the Role does not grant.
		forbidden := fmt.Errorf("secret test/cfg-2: %w: list secret test/cfg-2: API server answered 403: secrets \"cfg-2\" is forbidden", ErrNotRead)
		src.mu.Lock()
		src.partsErr = forbidden
		src.mu.Unlock()
		mem.set(splitConfig("main: 2\n", [2]string{"cfg-2", "jobs: 2\n"}), map[string]string{"cm/a.yaml": "a2"}, nil)
		h.reloaded(t, 2, main+"|cm/a.yaml=a2;")
		require.Equal(t, main, readFile(h.out), "the previous configuration stays")
		// Logged once the apply that reloaded returns: waited for.
		h.logs.waitErr(t, "(?s).*"+regexp.QuoteMeta(`secrets "cfg-2" is forbidden (keeping the previous config)`)+".*")
	})
}
