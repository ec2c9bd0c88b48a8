package reloader

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/internal/testenv/projector"
)

// hostileEndpoint is a reload endpoint that, while hostile, answers each
// request at random: 200, 500, 503, no answer until the client gives up,
// or a closed connection. It records what the process would read at each
// 200.
type hostileEndpoint struct {
	*httptest.Server
	snapshot func() string

	mu      sync.Mutex
	rng     *rand.Rand
	hostile bool
	seen    []string
}

func newHostileEndpoint(t *testing.T, seed uint64, snapshot func() string) *hostileEndpoint {
	e := &hostileEndpoint{snapshot: snapshot, rng: rand.New(rand.NewPCG(seed, seed)), hostile: true}
	e.Server = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.Close)
	return e
}

func (e *hostileEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	answer := 0
	if e.hostile {
		answer = e.rng.IntN(5)
	}
	if answer == 0 {
		e.seen = append(e.seen, e.snapshot())
	}
	e.mu.Unlock()
	switch answer {
	case 0:
		_, _ = io.WriteString(w, "ok")
	case 1:
		http.Error(w, "rejected", http.StatusInternalServerError)
	case 2:
		http.Error(w, "starting", http.StatusServiceUnavailable)
	case 3:
		<-r.Context().Done() // Hang until the reloader's timeout.
	case 4:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}
}

// calm makes the endpoint answer 200 from now on.
func (e *hostileEndpoint) calm() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.hostile = false
}

func (e *hostileEndpoint) last() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.seen) == 0 {
		return ""
	}
	return e.seen[len(e.seen)-1]
}

// TestRandomAttack mixes, at random for each seed, kubelet swaps of the
// rules (a ConfigMap's volume rendered into the rules dir, with now and
// then a key the rules dir cannot hold, such as .hidden) and of the
// configuration, configurations that cannot be rendered (an undefined
// variable, strict), restarts of the reloader (of its container, or of
// the pod: outputs lost, the state dir kept), and a reload endpoint that
// answers 200, 500 (a rejection: the last accepted state is written back)
// or 503, hangs or closes the connection. Once the endpoint is calm again,
// the last state accepted must be the last good configuration the reloader
// read with the last rules, within a bound: the retries' backoff started
// again at the last change, so it is short.
func TestRandomAttack(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 0))
			s := newSetup(t)
			ep := newHostileEndpoint(t, seed, func() string { return readFile(s.out) + "|" + readTree(s.rulesDir) })
			u, err := url.Parse(ep.URL + "/-/reload")
			require.NoError(t, err)
			input := filepath.Join(filepath.Dir(s.cfgDir), "in", "cm")
			s.opts.Trigger = &HTTPTrigger{URL: u, Timeout: 100 * time.Millisecond}
			s.opts.WatchedDirs, s.opts.RulesInputDirs, s.opts.RulesDir = nil, []string{input}, s.rulesDir
			s.opts.KeepAccepted, s.opts.StateDir = true, filepath.Join(filepath.Dir(s.cfgDir), "data", "reloader")
			cfg, rules := projector.Open(t, s.cfgDir), projector.Open(t, input)

			lastRules := "cm/a.yaml=r0;"
			cfg.Set(t, map[string]string{"prometheus.yaml.gz": gz(t, "replica: $(POD_NAME)\nv: 0\n")})
			rules.Set(t, map[string]string{"a.yaml": "r0"})
			stop := s.startStoppable(t)
			restarts := 0

			for i := 1; i <= 40; i++ {
				switch rng.IntN(5) {
				case 0, 1:
					// A file changed, and one added or removed; now and
					// then a key the rules dir cannot hold.
					files := map[string]string{"a.yaml": fmt.Sprint("r", i)}
					lastRules = fmt.Sprintf("cm/a.yaml=r%d;", i)
					if i%2 == 0 {
						files["b.yaml"] = fmt.Sprint("b", i)
						lastRules += fmt.Sprintf("cm/b.yaml=b%d;", i)
					}
					if i%3 == 0 {
						files[".hidden"] = fmt.Sprint("h", i)
					}
					rules.Set(t, files)
				case 2:
					cfg.Set(t, map[string]string{"prometheus.yaml.gz": gz(t, fmt.Sprintf("replica: $(POD_NAME)\nv: %d\n", i))})
				case 3:
					cfg.Set(t, map[string]string{"prometheus.yaml.gz": gz(t, fmt.Sprintf("v: $(UNDEFINED_%d)\n", i))})
				case 4:
					stop()
					if rng.IntN(2) == 0 {
						// The pod's: its emptyDirs are new.
						require.NoError(t, os.RemoveAll(filepath.Dir(s.out)))
						require.NoError(t, os.RemoveAll(s.rulesDir))
					}
					s.reg = prometheus.NewRegistry()
					stop = s.startStoppable(t)
					restarts++
				}
				// The pace of the attack, not a wait: real time, since the
				// reloader it races runs on real inotify watches, HTTP
				// timeouts and projector processes, outside any synctest bubble.
				time.Sleep(time.Duration(rng.IntN(60)) * time.Millisecond)
			}
			// A good configuration swapped out before the reloader read it
			// cannot be applied: the attack ends on one it has read, then
			// on half the seeds on an invalid one.
			const good = 41
			cfg.Set(t, map[string]string{"prometheus.yaml.gz": gz(t, "replica: $(POD_NAME)\nv: 41\n")})
			eventually(t, "the last good configuration rendered", func() bool { return readFile(s.out) == "replica: prom-3\nv: 41\n" })
			if seed%2 == 0 {
				cfg.Set(t, map[string]string{"prometheus.yaml.gz": gz(t, "v: $(UNDEFINED_42)\n")})
			}
			ep.calm()

			want := fmt.Sprintf("replica: prom-3\nv: %d\n|%s", good, lastRules)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("last state accepted: %q (%d restarts)", ep.last(), restarts)
				}
			})
			t.Logf("%d restarts", restarts)
			eventually(t, fmt.Sprintf("%q accepted", want), func() bool { return ep.last() == want })
			require.Equal(t, "replica: prom-3\nv: "+fmt.Sprint(good)+"\n", readFile(s.out))
			require.Equal(t, lastRules, readTree(s.rulesDir))
		})
	}
}
