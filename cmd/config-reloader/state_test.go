package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStateSecretFlag: the init container, its state dir empty, reads
// --state-secret (a missing Secret: nothing to read, rendered as usual);
// a malformed name or no state dir is a usage error.
func TestStateSecretFlag(t *testing.T) {
	var (
		mu   sync.Mutex
		gets []string
	)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gets = append(gets, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","reason":"NotFound","code":404}`))
	}))
	t.Cleanup(api.Close)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "prometheus.yaml"), filepath.Join(dir, "out", "prometheus.env.yaml")
	require.NoError(t, os.WriteFile(in, []byte("a: 1\n"), 0o600))

	base := []string{"--config-file=" + in, "--watch-interval=0", "--api-server=" + api.URL, "--api-ca-file=", "--api-token-file="}
	var stderr bytes.Buffer
	require.Equal(t, 0, run(t.Context(), append(base, "--config-envsubst-file="+out, "--state-secret=ns/prom-0-reloader-state"), io.Discard, &stderr), stderr.String())
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "a: 1\n", string(b))
	mu.Lock()
	require.Equal(t, []string{"GET /api/v1/namespaces/ns/secrets/prom-0-reloader-state"}, gets)
	mu.Unlock()

	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"--config-envsubst-file=" + out, "--state-secret=ns/a/b"}, "config-reloader: --state-secret=ns/a/b: want NAMESPACE/NAME, or NAME in a pod\n"},
		{[]string{"--state-secret=ns/a"}, "config-reloader: --state-secret mirrors --state-dir: give --config-envsubst-file (the state dir is beside it by default) or --state-dir\n"},
	} {
		stderr.Reset()
		require.Equal(t, 2, run(t.Context(), append(base, tc.args...), io.Discard, &stderr))
		require.Equal(t, tc.stderr, stderr.String())
	}
}
