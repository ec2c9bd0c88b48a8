package reloader

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRenderOnce: from a Source, the init-container mode waits for the
// content it needs, saying what it waits for, and renders it without
// reloading; stopped before, it fails, naming what it waited for.
func TestRenderOnce(t *testing.T) {
	notRead := fmt.Errorf("secret test/cfg: %w", ErrNotRead)
	start := func(t *testing.T, ctx context.Context) (*harness, *memSource, <-chan error) {
		h, src := sourceHarness(t)
		var err error
		h.r, err = New(slog.New(slog.NewJSONHandler(&h.logs, nil)), h.reg, h.opts)
		require.NoError(t, err)
		src.set("", nil, notRead)
		done := make(chan error, 1)
		go func() { done <- h.r.RenderOnce(ctx) }()
		eventually(t, "the wait logged", func() bool { return len(h.logs.records("render config: waiting")) == 1 })
		return h, src, done
	}
	wait := func(t *testing.T, done <-chan error) error {
		t.Helper()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("RenderOnce has not returned after 10s")
			return nil
		}
	}

	t.Run("renders once the content is there", func(t *testing.T) {
		h, src, done := start(t, t.Context())
		src.set("v: 1\n", map[string]string{"cm/a.yaml": "a1"}, nil)
		require.NoError(t, wait(t, done))
		require.Equal(t, "v: 1\n", readFile(h.out))
		require.Equal(t, "cm/a.yaml=a1;", readTree(h.rulesDir))
		require.Empty(t, h.ep.reloads())
		require.Equal(t, []string{notRead.Error()}, h.logs.records("render config: waiting"))
		require.Len(t, h.logs.records("config rendered"), 1)
	})

	t.Run("stopped before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		h, _, done := start(t, ctx)
		cancel()
		require.ErrorIs(t, wait(t, done), context.Canceled)
		require.Equal(t, []string{""}, h.logs.records("render config: stopped before the configuration could be read"))
		require.Contains(t, h.logs.String(), `"waiting_for":"`+notRead.Error()+`"`)
		require.NoFileExists(t, h.out)
	})
}

// records returns the err of each record logged with msg.
func (l *logs) records(msg string) []string {
	var errs []string
	for line := range strings.SplitSeq(l.String(), "\n") {
		var rec struct{ Msg, Err string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == msg {
			errs = append(errs, rec.Err)
		}
	}
	return errs
}
