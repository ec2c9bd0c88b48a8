package contract

import (
	"crypto/sha256"
	"encoding/hex"
)

// A configuration too large for one Secret is split into parts: the main
// configuration names each part, and the SHA-256 of the part as stored
// (gzipped or not), on comment lines at its very start:
//
//	# podreload.dev/config-part: main-config-1 sha256:9f86d0...
//
// and loads the rendered parts with Prometheus' scrape_config_files, by
// the paths PartPath gives (relative to the rendered configuration's
// directory, which Prometheus resolves them against). The config-reloader
// renders each part into PartsOutDir, and applies nothing until every part
// has the hash the main configuration names.
const (
	// PartDirective starts the comment line naming a part.
	PartDirective = "# podreload.dev/config-part: "
	// PartsOutDir is the directory, next to the rendered configuration,
	// the rendered parts are written into; the reloader owns it.
	PartsOutDir = "parts"
)

// PartPath is where the rendered part name is, relative to the rendered
// configuration's directory: the path the main configuration's
// scrape_config_files name.
func PartPath(name string) string { return PartsOutDir + "/" + name + ".yaml" }

// AppendPartDirective appends the line naming the part name, whose
// content as stored is stored.
func AppendPartDirective(buf []byte, name string, stored []byte) []byte {
	sum := sha256.Sum256(stored)
	buf = append(buf, PartDirective...)
	buf = append(buf, name...)
	buf = append(buf, " sha256:"...)
	buf = hex.AppendEncode(buf, sum[:])
	return append(buf, '\n')
}
