package reloader

import (
	"fmt"
	"os"
)

// emptyConfigError is an empty configuration held back (see
// Options.AllowEmptyConfig).
type emptyConfigError struct {
	name string
	last int64 // the size of the configuration it would replace
}

func (e emptyConfigError) Error() string {
	return fmt.Sprintf("read config: %s is empty where the last configuration rendered had %s: held back as a truncated or emptied input", e.name, formatSize(e.last))
}

// checkEmpty returns an emptyConfigError when b, the configuration read
// from name gunzipped, is empty and the last one rendered is not, unless
// AllowEmptyConfig.
func (r *Reloader) checkEmpty(name string, b []byte) error {
	if len(b) > 0 || r.opts.AllowEmptyConfig {
		return nil
	}
	if last := r.lastRenderedSize(); last > 0 {
		return emptyConfigError{name: name, last: last}
	}
	return nil
}

// lastRenderedSize is the size of the configuration last rendered: in this
// run, else in the output (written by an earlier run or an init
// container), else in the last accepted state kept.
func (r *Reloader) lastRenderedSize() int64 {
	switch {
	case r.cache.last.config != nil:
		return int64(len(r.cache.last.config))
	case r.opts.ConfigOutput != "":
		if fi, err := os.Stat(r.opts.ConfigOutput); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
			return fi.Size()
		}
	}
	if r.hasAccepted {
		return int64(len(r.accepted.config))
	}
	return 0
}
