package reloader

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Why an input file is left out, the reason label of reloader_files_left_out.
const (
	reasonUnreadable  = "unreadable"   // not a regular file, or not readable
	reasonInvalidName = "invalid_name" // a name RulesDir cannot hold
)

// maxDegradedNamed bounds how many files /-/ready names.
const maxDegradedNamed = 5

// skipped is an input file left out, the rest applying without it.
type skipped struct {
	name   string // the path, or the ConfigMap and key
	reason string // reasonUnreadable or reasonInvalidName
	err    error
}

// leftOut follows the input files left out from one apply to the next, so
// that each is logged once when it appears and once when it is gone.
type leftOut struct {
	current map[string]skipped // by name
}

// noteLeftOut records the files the apply that just read its input left
// out: it logs those that appeared and those gone, and sets the gauge.
func (r *Reloader) noteLeftOut(files []skipped) {
	now := make(map[string]skipped, len(files))
	for _, f := range files {
		now[f.name] = f
	}
	for _, name := range slices.Sorted(maps.Keys(now)) {
		f := now[name]
		if old, ok := r.leftOut.current[name]; !ok || old.err.Error() != f.err.Error() {
			r.logger.Warn("input file left out, the rest applies without it", "file", name, "reason", f.reason, "err", f.err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.leftOut.current)) {
		if _, ok := now[name]; !ok {
			r.logger.Info("input file no longer left out", "file", name)
		}
	}
	r.leftOut.current = now
	counts := map[string]int{reasonUnreadable: 0, reasonInvalidName: 0}
	for _, f := range files {
		counts[f.reason]++
	}
	for reason, n := range counts {
		r.m.leftOut.WithLabelValues(reason).Set(float64(n))
	}
	r.setDegraded()
}

// leftOutError describes the files left out, nil without any.
func (r *Reloader) leftOutError() error {
	if len(r.leftOut.current) == 0 {
		return nil
	}
	names := slices.Sorted(maps.Keys(r.leftOut.current))
	var b strings.Builder
	fmt.Fprintf(&b, "%d input files left out: ", len(names))
	for i, name := range names {
		if i == maxDegradedNamed {
			fmt.Fprintf(&b, " and %d more", len(names)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %v", name, r.leftOut.current[name].err)
	}
	b.WriteString("; the rest is applied")
	return errors.New(b.String())
}
