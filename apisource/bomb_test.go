package apisource

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/reloader"
)

// secretAPI answers a list with the Secret cfg, and a watch with its
// modification, then the end of the watch.
type secretAPI struct{ list, watch string }

func newSecretAPI(config []byte) secretAPI {
	secret := fmt.Sprintf(`{"metadata":{"name":"cfg","resourceVersion":"%%d"},"data":{"config":%q}}`, base64.StdEncoding.EncodeToString(config))
	return secretAPI{
		list:  `{"metadata":{"resourceVersion":"2"},"items":[` + fmt.Sprintf(secret, 2) + `]}`,
		watch: `{"type":"MODIFIED","object":` + fmt.Sprintf(secret, 3) + "}\n",
	}
}

func (a secretAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	body := a.list
	if req.URL.Query().Get("watch") != "" {
		body = a.watch
	}
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader(body)), Request: req, Header: http.Header{}}, nil
}

// allocated returns the bytes f allocates, the collector off: what the
// heap grows by at most while f runs.
func allocated(f func()) uint64 {
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestGzipBombHeap reads a gzip bomb, 256 MiB of zeros gzipped into
// 255 KiB, as the configuration Secret's key, from the API server's list
// through to its render, and from a file: both are refused as larger
// than --config-max-size (16 MiB), and neither path holds more than a few
// times the bomb's stored size, where gunzipping into a buffer up to the
// bound held 16 MiB, and the API source's decoding some 9 times the
// Secret's size (go test -v prints the figures).
func TestGzipBombHeap(t *testing.T) {
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zeros := make([]byte, 1<<20)
	for range 256 {
		_, err := zw.Write(zeros)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	stored := uint64(bomb.Len())
	dir := t.TempDir()

	// From a file.
	in := filepath.Join(dir, "prometheus.yaml.gz")
	require.NoError(t, os.WriteFile(in, bomb.Bytes(), 0o644))
	fromFile, err := reloader.New(nil, nil, reloader.Options{ConfigFile: in, ConfigOutput: filepath.Join(dir, "file.yaml")})
	require.NoError(t, err)
	var renderErr error
	fileBytes := allocated(func() { renderErr = fromFile.Render() })
	require.ErrorContains(t, renderErr, "larger than 16 MiB")

	// From the API server: a list holding the Secret, decoded, then rendered.
	s, err := New(nil, nil, Options{Config: Config{Server: "https://10.0.0.1"}, SecretNamespace: "ns", SecretName: "cfg", SecretKey: "config"})
	require.NoError(t, err)
	w := s.watchers[0]
	w.c.http.Transport = newSecretAPI(bomb.Bytes())
	fromAPI, err := reloader.New(nil, nil, reloader.Options{Source: s, ConfigOutput: filepath.Join(dir, "api.yaml")})
	require.NoError(t, err)
	var listErr error
	apiBytes := allocated(func() {
		listErr = w.list(t.Context())
		renderErr = fromAPI.Render()
	})
	require.NoError(t, listErr)
	require.ErrorContains(t, renderErr, "gunzip secret ns/cfg key config: larger than 16 MiB")
	// Then from a watch event.
	var events int
	watchBytes := allocated(func() {
		events, listErr = w.watch(t.Context())
		renderErr = fromAPI.Render()
	})
	require.NoError(t, listErr)
	require.Equal(t, 1, events)
	require.Equal(t, "3", s.secretRV)
	require.ErrorContains(t, renderErr, "gunzip secret ns/cfg key config: larger than 16 MiB")

	t.Logf("bomb of %.0f KiB gzipped: allocated %.2f MiB from a file, %.2f MiB through the API source's list, %.2f MiB through its watch",
		float64(stored)/(1<<10), float64(fileBytes)/(1<<20), float64(apiBytes)/(1<<20), float64(watchBytes)/(1<<20))
	require.Less(t, fileBytes, 2*stored+1<<20, "allocated from a file")
	require.Less(t, apiBytes, 8*stored+1<<20, "allocated through the API source's list")
	require.Less(t, watchBytes, 8*stored+1<<20, "allocated through the API source's watch")
}
