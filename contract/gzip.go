package contract

import (
	"bytes"
	"compress/gzip"
)

// Gzip returns b gzipped at the best compression, the same bytes for the
// same b (the header holds no name and no time): how the controller stores
// Alertmanager's configuration and the config-reloader its state Secret,
// both read back by the gzip magic bytes.
func Gzip(b []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(b)/4 + 64)
	// The level is valid, and writes to a bytes.Buffer do not fail: no
	// error can come back.
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}
