package reloader

import (
	"bytes"
	"fmt"
	"strings"
)

// reasonEmpty is the reason label of reloader_inputs_held_back for an
// input held back because it is empty (see Options.AllowEmptyConfig).
const reasonEmpty = "empty"

// emptyConfigError is an empty configuration held back (see
// Options.AllowEmptyConfig).
type emptyConfigError struct {
	name string
	size int64 // its size: whitespace only when positive
	last int64 // the size of the configuration it would replace
}

func (e emptyConfigError) Error() string {
	return fmt.Sprintf("read config: %s %s where the last configuration rendered had %s: held back as a truncated or emptied input", e.name, describeEmpty(e.size), formatSize(e.last))
}

// describeEmpty says how an input of size bytes, with nothing but
// whitespace in them, is empty.
func describeEmpty(size int64) string {
	if size == 0 {
		return "is empty"
	}
	return fmt.Sprintf("holds nothing but whitespace (%s)", formatSize(size))
}

// blank reports whether b holds nothing but whitespace.
func blank(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }

// blankString reports whether s holds nothing but whitespace.
func blankString(s string) bool { return strings.TrimSpace(s) == "" }

// checkEmpty returns an emptyConfigError when b, the configuration read
// from name gunzipped, holds nothing but whitespace and the last one
// rendered had content, unless AllowEmptyConfig.
func (r *Reloader) checkEmpty(name string, b []byte) error {
	if !blank(b) || r.opts.AllowEmptyConfig {
		return nil
	}
	if last := r.lastRenderedSize(); last > 0 {
		return emptyConfigError{name: name, size: int64(len(b)), last: last}
	}
	return nil
}

// lastRenderedSize is the size of the configuration last rendered, if it
// has content: in this run, else in the output (written by an earlier run
// or an init container), else in the last accepted state kept.
func (r *Reloader) lastRenderedSize() int64 {
	switch {
	case r.cache.last.config != nil:
		if blank(r.cache.last.config) {
			return 0
		}
		return int64(len(r.cache.last.config))
	case r.opts.ConfigOutput != "":
		if b, err := readRegular(r.opts.ConfigOutput, r.opts.MaxConfigSize); err == nil && !blank(b) {
			return int64(len(b))
		}
	}
	if r.hasAccepted && !blank(r.accepted.config) {
		return int64(len(r.accepted.config))
	}
	return 0
}

// emptyFileError is a rule file held back: it holds nothing but
// whitespace where its last version had content.
type emptyFileError struct{ size int64 }

func (e emptyFileError) Error() string {
	return describeEmpty(e.size) + " where its last version had content: held back as a truncated or emptied input"
}
