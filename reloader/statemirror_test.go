package reloader

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/contract"
)

// memMirror is a StateMirror in memory.
type memMirror struct {
	mu      sync.Mutex
	files   map[string][]byte
	stores  [][]string // the names of the files of each Store
	loads   int
	loadErr error
}

func (m *memMirror) Load(context.Context) (map[string][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.loads++
	return maps.Clone(m.files), m.loadErr
}

func (m *memMirror) Store(files map[string][]byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files = maps.Clone(files)
	m.stores = append(m.stores, slices.Sorted(maps.Keys(files)))
}

func (m *memMirror) stored() [][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.stores)
}

// TestStateMirror: the state dir beside the output (an emptyDir) goes
// with the pod; its mirror keeps it. A new pod's sidecar, and its init
// container, read it back: the last accepted state is written, not the
// content rejected, and Rejected is reported with Prometheus' message.
func TestStateMirror(t *testing.T) {
	freshPod := func(t *testing.T, h *harness) func() {
		return func() {
			require.NoError(t, os.RemoveAll(filepath.Dir(h.out)))
			require.NoError(t, os.RemoveAll(h.rulesDir))
		}
	}
	t.Run("sidecar", func(t *testing.T) {
		h, src := sourceHarness(t)
		m := &memMirror{}
		h.opts.StateMirror = m
		r, l, log := rejectThenRestart(t, h, src, freshPod(t, h))

		l.waitErr(t, regexp.QuoteMeta(`rejected at `)+`.*`+regexp.QuoteMeta(`: status 500: `+prometheusRejects))
		require.Equal(t, "v: 1\n|cm/a.yaml=a1;", readFile(h.out)+"|"+readTree(h.rulesDir))
		report := log.wait(t, 1)
		require.Equal(t, contract.Sum([]byte("v: 1\n"), map[string]string{"cm/a.yaml": "a1"}), report.Hash)
		require.NotNil(t, report.Rejection)
		require.Equal(t, "status 500: "+prometheusRejects, report.Rejection.Message)
		require.Zero(t, testutil.ToFloat64(r.m.reloads))
		require.Contains(t, l.String(), `"msg":"state dir empty: the state mirrored written into it"`)
		// Stored once when accepted, once when rejected; read at each
		// start on an empty state dir: the first pod's (nothing there),
		// the new pod's.
		require.Equal(t, [][]string{{acceptedFile}, {acceptedFile, rejectedFile}}, m.stored())
		require.Equal(t, 2, m.loads)
	})

	t.Run("init container", func(t *testing.T) {
		h, src := sourceHarness(t)
		m := &memMirror{}
		h.opts.StateMirror = m
		h.opts.RetryInterval = 1 << 40
		src.set("v: 1\n", map[string]string{"cm/a.yaml": "a1"}, nil)
		first, err := New(nil, h.reg, h.opts)
		require.NoError(t, err)
		stop := runUntilStopped(t, first)
		h.reloaded(t, 1, "v: 1\n|cm/a.yaml=a1;")
		h.ep.answer(500, prometheusRejects)
		src.set("v: [\n", map[string]string{"cm/a.yaml": "bad"}, nil)
		eventually(t, "rejected", func() bool { return testutil.ToFloat64(first.m.rejected) == 1 })
		stop()
		freshPod(t, h)()

		var l logs
		init, err := New(jsonLogger(&l), prometheus.NewRegistry(), h.opts)
		require.NoError(t, err)
		// The new pod's source reads the same content.
		src.set("v: [\n", map[string]string{"cm/a.yaml": "bad"}, nil)
		require.NoError(t, init.RenderOnce(t.Context()))
		require.Equal(t, "v: 1\n|cm/a.yaml=a1;", readFile(h.out)+"|"+readTree(h.rulesDir))
		require.Contains(t, l.String(), `"msg":"the current content was rejected: writing the last accepted state instead"`)
	})

	t.Run("a local state wins", func(t *testing.T) {
		h, src := sourceHarness(t)
		m := &memMirror{}
		h.opts.StateMirror = m
		// A container restart: the state dir stays, the mirror is read
		// by the first start only.
		rejectThenRestart(t, h, src, func() {})
		require.Equal(t, "v: 1\n|cm/a.yaml=a1;", readFile(h.out)+"|"+readTree(h.rulesDir))
		require.Equal(t, 1, m.loads)
	})

	t.Run("mirror unreadable: logged, counted, the content rendered as without one", func(t *testing.T) {
		h, src := sourceHarness(t)
		m := &memMirror{loadErr: errors.New("API server answered 403: forbidden")}
		h.opts.StateMirror = m
		src.set("v: 1\n", map[string]string{"cm/a.yaml": "a1"}, nil)
		var l logs
		init, err := New(jsonLogger(&l), h.reg, h.opts)
		require.NoError(t, err)
		require.NoError(t, init.RenderOnce(t.Context()))
		require.Equal(t, "v: 1\n|cm/a.yaml=a1;", readFile(h.out)+"|"+readTree(h.rulesDir))
		require.Equal(t, 1.0, testutil.ToFloat64(init.m.stateErrors))
		require.Contains(t, l.String(), `"msg":"state dir","action":"read the state mirrored"`)
		require.Contains(t, l.String(), `"err":"API server answered 403: forbidden"`)
	})

	t.Run("no state dir", func(t *testing.T) {
		h, _ := sourceHarness(t)
		h.opts.StateMirror, h.opts.KeepAccepted = &memMirror{}, false
		_, err := New(nil, h.reg, h.opts)
		require.EqualError(t, err, "a state mirror needs a state dir (KeepAccepted, and StateDir or ConfigOutput)")
	})
}
