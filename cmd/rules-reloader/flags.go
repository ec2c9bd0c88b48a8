package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/kingpin/v2"
)

// goStyleArgs rewrites args as Go's flag package reads them, which is how
// configmap-reload reads its flags and how its manifests spell them
// (-volume-dir=/etc/config, -webhook-url URL), into kingpin's spelling:
//   - a long flag takes one dash or two: -name and --name;
//   - a flag with a value takes it after = or as the next argument, whatever
//     that argument looks like (-webhook-method -x sets -x);
//   - a boolean flag takes no argument, or a value after = that
//     strconv.ParseBool reads (-version=true, -help=0);
//   - a flag that is not repeatable keeps the last value given;
//   - parsing stops at -- or at the first argument that is not a flag, and the
//     rest is left to kingpin (which rejects it: rules-reloader has none).
//
// A single dash before one letter stays a short flag (-h). Any other flag
// kingpin does not know is given two dashes, so that its error names it.
func goStyleArgs(flags []*kingpin.FlagModel, args []string) ([]string, error) {
	known := make(map[string]*kingpin.FlagModel, len(flags))
	for _, f := range flags {
		known[f.Name] = f
	}
	var out []string
	last := map[string]int{} // Index in out of a flag's last occurrence.
	overridden := map[int]bool{}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" || arg == "-" || !strings.HasPrefix(arg, "-") {
			out = append(out, args[i:]...)
			break
		}
		body := strings.TrimPrefix(arg[1:], "-")
		name, value, hasValue := strings.Cut(body, "=")
		f, ok := known[name]
		switch {
		case !ok && !strings.HasPrefix(arg, "--") && utf8.RuneCountInString(body) == 1:
			out = append(out, arg)
			continue
		case !ok:
			out = append(out, "--"+body)
			continue
		case f.IsBoolFlag() && hasValue:
			b, err := strconv.ParseBool(value)
			if err != nil {
				return nil, fmt.Errorf("--%s: parse %q as a boolean: %w", name, value, errors.Unwrap(err))
			}
			switch {
			case b:
				arg = "--" + name
			case isTrue(f.Default):
				arg = "--no-" + name
			default:
				continue // Its default.
			}
		case f.IsBoolFlag():
			arg = "--" + name
		case hasValue:
			arg = "--" + name + "=" + value
		case i+1 < len(args):
			i++
			arg = "--" + name + "=" + args[i]
		default:
			arg = "--" + name // kingpin reports the missing value.
		}
		if j, seen := last[name]; seen && !cumulative(f) {
			overridden[j] = true // The last value wins.
		}
		last[name] = len(out)
		out = append(out, arg)
	}
	kept := make([]string, 0, len(out))
	for i, arg := range out {
		if !overridden[i] {
			kept = append(kept, arg)
		}
	}
	return kept, nil
}

func isTrue(defaults []string) bool {
	return len(defaults) == 1 && defaults[0] == "true"
}

// cumulative tells whether a flag is repeatable (kingpin's Strings and the like).
func cumulative(f *kingpin.FlagModel) bool {
	c, ok := f.Value.(interface{ IsCumulative() bool })
	return ok && c.IsCumulative()
}

// goInt is an int flag value read as Go's flag package reads one, with
// strconv.ParseInt in base 0: 0x1f, 0o17, 017 and 1_000 are numbers, 1.5 is
// not (kingpin's Int would take it as 1).
type goInt struct {
	name string
	p    *int
}

// Set parses s.
func (v goInt) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, strconv.IntSize)
	if err != nil {
		return fmt.Errorf("--%s: parse %q as an integer: %w", v.name, s, errors.Unwrap(err))
	}
	*v.p = int(n)
	return nil
}

// String returns the value.
func (v goInt) String() string { return strconv.Itoa(*v.p) }
