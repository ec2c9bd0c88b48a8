// Package envsubst expands $(VAR) references in configuration files exactly as
// prometheus-config-reloader does.
//
// A reference is "$(" followed by one or more ASCII letters, digits or
// underscores and a closing ")": the regular expression \$\(([a-zA-Z_0-9]+)\)
// used by the Thanos reloader. Every match is replaced by the variable's value,
// inserted verbatim and never expanded again. Anything else, including ${VAR},
// $VAR, $1, $$ and $( followed by an invalid name, is copied unchanged; there is
// no escape, so $$(VAR) becomes "$" followed by the value of VAR.
//
// An Expander can also define STATEFULSET_ORDINAL_NUMBER from the trailing
// digits of another variable, as prometheus-config-reloader's
// --statefulset-ordinal-from-envvar flag does.
package envsubst

import (
	"bytes"
	"errors"
	"fmt"
	"os"
)

// OrdinalVar is the variable that Options.OrdinalFromEnv defines.
const OrdinalVar = "STATEFULSET_ORDINAL_NUMBER"

// Options configures an Expander.
type Options struct {
	// Strict makes a reference to an undefined variable an error; otherwise it is left verbatim.
	Strict bool
	// OrdinalFromEnv names the variable whose trailing digits give STATEFULSET_ORDINAL_NUMBER
	// (prometheus-config-reloader's --statefulset-ordinal-from-envvar). Empty disables it.
	OrdinalFromEnv string
	// Lookup returns a variable's value; nil means os.LookupEnv.
	Lookup func(name string) (string, bool)
	// Undefined, when set and the Expander is not strict, is called once by
	// each Expand that leaves references to undefined variables verbatim,
	// with every such reference in order.
	Undefined func(refs []Reference)
}

// Reference is a $(VAR) reference in an input.
type Reference struct {
	// Name is the variable's name.
	Name string
	// Line is the 1-based line the reference is on.
	Line int
}

// Expander expands $(VAR) references. It keeps no state between calls, so it
// is safe for concurrent use when its Lookup is.
type Expander struct {
	strict      bool
	ordinalFrom string
	lookup      func(name string) (string, bool)
	undefinedFn func(refs []Reference)
}

// New returns an Expander configured by opts.
func New(opts Options) *Expander {
	lookup := opts.Lookup
	if lookup == nil {
		lookup = os.LookupEnv
	}
	return &Expander{
		strict:      opts.Strict,
		ordinalFrom: opts.OrdinalFromEnv,
		lookup:      lookup,
		undefinedFn: opts.Undefined,
	}
}

// Expand returns in with every $(VAR) replaced, and the number of references to undefined variables.
//
// A reference to an undefined variable is left verbatim, and reported to
// Options.Undefined, unless the Expander is strict: then out is nil and err names the first such variable and its
// 1-based line; undefined still counts every such reference. When nothing is
// replaced, out is in itself rather than a copy.
func (e *Expander) Expand(in []byte) (out []byte, undefined int, err error) {
	var (
		copied    int // in[:copied] is already in out
		firstAt   int // offset of the first undefined reference
		firstName []byte
		refs      []Reference // undefined references, for undefinedFn
		line      = 1         // line of in[lineAt]
		lineAt    int
	)
	report := !e.strict && e.undefinedFn != nil
	for i := 0; ; {
		j := bytes.Index(in[i:], []byte("$("))
		if j < 0 {
			break
		}
		start := i + j
		end := start + 2
		for end < len(in) && isNameByte(in[end]) {
			end++
		}
		if end == start+2 || end == len(in) || in[end] != ')' {
			// in[start+2:end] holds no '$', so the next reference cannot begin before end.
			i = end
			continue
		}
		name := in[start+2 : end]
		i = end + 1
		v, ok := e.value(name)
		if !ok {
			if undefined == 0 {
				firstAt, firstName = start, name
			}
			undefined++
			if report {
				line += bytes.Count(in[lineAt:start], []byte("\n"))
				lineAt = start
				refs = append(refs, Reference{Name: string(name), Line: line})
			}
			continue
		}
		if e.strict && undefined > 0 {
			continue // The output is discarded; keep scanning only to count.
		}
		if out == nil {
			out = make([]byte, 0, len(in)+len(v)+64)
		}
		out = append(out, in[copied:start]...)
		out = append(out, v...)
		copied = i
	}

	if e.strict && undefined > 0 {
		line := bytes.Count(in[:firstAt], []byte("\n")) + 1
		msg := fmt.Sprintf("line %d: environment variable %q is not set", line, firstName)
		if undefined > 1 {
			msg = fmt.Sprintf("%s, and %d more", msg, undefined-1)
		}
		return nil, undefined, errors.New(msg)
	}
	if len(refs) > 0 {
		e.undefinedFn(refs)
	}
	if out == nil {
		return in, undefined, nil
	}
	return append(out, in[copied:]...), undefined, nil
}

// value returns the value of the variable name, deriving OrdinalVar when configured to.
func (e *Expander) value(name []byte) (string, bool) {
	if e.ordinalFrom != "" && string(name) == OrdinalVar {
		src, _ := e.lookup(e.ordinalFrom)
		return trailingDigits(src), true
	}
	return e.lookup(string(name))
}

// trailingDigits returns the ASCII digits at the end of s, as the regular
// expression \d+$ finds them; it is empty when s does not end in a digit.
func trailingDigits(s string) string {
	i := len(s)
	for i > 0 && '0' <= s[i-1] && s[i-1] <= '9' {
		i--
	}
	return s[i:]
}

// isNameByte reports whether c may appear in a variable name: [a-zA-Z_0-9].
func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}
