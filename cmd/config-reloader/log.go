package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/prometheus/common/promslog"

	"github.com/podreload/podreload/envsubst"
)

// logLevel is --log-level: promslog's levels and prometheus-config-reloader's
// other two, "all" (its name for debug) and "none" (nothing is logged).
type logLevel struct {
	level *promslog.Level
	none  bool
}

// Set parses a level.
func (l *logLevel) Set(s string) error {
	switch strings.ToLower(s) {
	case "all":
		l.none = false
		return l.level.Set("debug")
	case "none":
		l.none = true
		return nil
	}
	if err := l.level.Set(s); err != nil {
		return err
	}
	l.none = false
	return nil
}

// String returns the level.
func (l *logLevel) String() string {
	if l.none {
		return "none"
	}
	return l.level.String()
}

// newLogger returns the logger the log flags select.
func newLogger(cfg *promslog.Config, level *logLevel) *slog.Logger {
	if level.none {
		return slog.New(slog.DiscardHandler)
	}
	return promslog.New(cfg)
}

// maxDescribed bounds how many undefined references a warning names.
const maxDescribed = 10

// describe names undefined references and their lines: "A (line 3), B (line 7)".
func describe(refs []envsubst.Reference) string {
	var b strings.Builder
	for i, r := range refs {
		if i == maxDescribed {
			fmt.Fprintf(&b, " and %d more", len(refs)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (line %d)", r.Name, r.Line)
	}
	return b.String()
}
