// Package contract is what the controller and the config-reloader agree
// on, the one package both import (the controller links neither the
// reloader engine nor fsnotify): the content hash (hash.go), the report
// of what Prometheus runs in the pod's annotation (applied.go), the
// lines that name the parts of a split configuration (parts.go), and the
// gzip both sides write (gzip.go).
package contract

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"maps"
	"slices"
)

// The content hash names the content a Prometheus server is given: its
// configuration as stored and its rule files. A configuration split into
// parts names each with its SHA-256 (PartDirective), so the hash
// of the configuration as stored covers its parts. The controller computes it
// from what it writes into the config Secret and the rule ConfigMaps; the
// config-reloader computes it from what Prometheus accepted, read from the
// API server or from the kubelet's volumes. Both compute it here, so equal
// hashes mean the same content, whatever the path it took.

// version starts every hash: a change in what is hashed changes it.
const version = "podreload.dev/content-hash/v1\x00"

// Sum returns the hash of config, the configuration exactly as stored (the
// Secret key's bytes, gzipped or not), and of files, the rule files as
// stored by "<configmap>/<key>" name and content (a key X.yaml.gz with its
// gzipped bytes, not the file X.yaml the reloader writes), as 64 lowercase
// hex digits. The
// order of files' keys does not matter; an absent configuration and an
// empty one are the same.
func Sum(config []byte, files map[string]string) string {
	h := sha256.New()
	_, _ = h.Write([]byte(version))
	field(h, config)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		field(h, []byte(name))
		field(h, []byte(files[name]))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// field writes b prefixed by its length, so that no two sequences of
// fields write the same bytes.
func field(h hash.Hash, b []byte) {
	_, _ = h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
	_, _ = h.Write(b)
}
