package takeover

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Class is what a takeover does with a field of an upstream spec.
type Class int

const (
	// ClassMapped fields are rendered with prometheus-operator's meaning.
	ClassMapped Class = iota + 1
	// ClassIgnored fields change nothing podreload renders.
	ClassIgnored
	// ClassRefused fields, when set to a value they do not accept, keep
	// the object from being taken over.
	ClassRefused
	// ClassLimited fields are mapped but for some values they may hold:
	// those keep the object from being taken over, as a refused field's.
	ClassLimited
)

func (c Class) String() string {
	switch c {
	case ClassMapped:
		return "mapped"
	case ClassIgnored:
		return "ignored"
	case ClassRefused:
		return "refused"
	case ClassLimited:
		return "limited"
	}
	return "unknown"
}

// Field classifies one field of an upstream spec by its JSON path:
// dot-separated JSON names, "[]" after a list whose items are classified
// field by field. A row covers the field and everything under it.
type Field struct {
	// Path is the field's JSON path under spec.
	Path string
	// Class is what a takeover does with it.
	Class Class
	// Note says what a mapped field becomes (and how it differs), why an
	// ignored field changes nothing, why a refused field is refused and
	// which values it accepts.
	Note string
	// Accepts, for a refused or limited field, are the values set that
	// can be taken over all the same, because podreload renders what they
	// ask for; nil accepts only the zero value (a nil pointer, an empty
	// list, false).
	Accepts func(v reflect.Value) bool
}

// Mapped is a row of a field rendered as note says.
func Mapped(path, note string) Field { return Field{Path: path, Class: ClassMapped, Note: note} }

// Ignored is a row of a field that changes nothing, for the reason note.
func Ignored(path, note string) Field { return Field{Path: path, Class: ClassIgnored, Note: note} }

// Refuse is a row of a field refused when set, for the reason note.
func Refuse(path, note string) Field { return Field{Path: path, Class: ClassRefused, Note: note} }

// RefuseBut is a row of a field refused when set to a value accepts does
// not accept.
func RefuseBut(path, note string, accepts func(reflect.Value) bool) Field {
	return Field{Path: path, Class: ClassRefused, Note: note, Accepts: accepts}
}

// Limit is a row of a field mapped as note says, but for the values
// accepts does not accept, refused for the reason note gives.
func Limit(path, note string, accepts func(reflect.Value) bool) Field {
	return Field{Path: path, Class: ClassLimited, Note: note, Accepts: accepts}
}

// OnlyStrings accepts a string, or a pointer to one, equal to one of ok.
func OnlyStrings(ok ...string) func(reflect.Value) bool {
	return func(v reflect.Value) bool { return StringIn(v, ok...) }
}

// StringIn reports whether v, a string or a pointer to one (nil reads
// as ""), is one of ok.
func StringIn(v reflect.Value, ok ...string) bool {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return slices.Contains(ok, "")
		}
		v = v.Elem()
	}
	return slices.Contains(ok, v.String())
}

// OnlyBool accepts a bool, or a pointer to one, equal to ok.
func OnlyBool(ok bool) func(reflect.Value) bool {
	return func(v reflect.Value) bool { return reflect.Indirect(v).Bool() == ok }
}

// RefusedFields are the JSON paths of the refused fields of table that
// spec (an upstream spec struct) sets to a value they do not accept,
// sorted, each once.
func RefusedFields(spec any, table []Field) []string {
	var out []string
	root := reflect.ValueOf(spec)
	for _, f := range table {
		if f.Class != ClassRefused && f.Class != ClassLimited {
			continue
		}
		for _, v := range fieldValues(root, f.Path) {
			if isSet(v) && (f.Accepts == nil || !f.Accepts(v)) {
				out = append(out, f.Path)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// isSet reports whether v is set: not its zero value, nor an empty list
// or map.
func isSet(v reflect.Value) bool {
	if v.Kind() == reflect.Slice || v.Kind() == reflect.Map {
		return v.Len() > 0
	}
	return !v.IsZero()
}

// fieldValues are the values at path in v, a struct: one for each item of
// the lists marked "[]"; none where a pointer on the way is nil.
func fieldValues(v reflect.Value, path string) []reflect.Value {
	name, rest, more := strings.Cut(path, ".")
	list := strings.HasSuffix(name, "[]")
	f, ok := JSONField(v, strings.TrimSuffix(name, "[]"))
	if !ok {
		return nil
	}
	if !more {
		return []reflect.Value{f}
	}
	var items []reflect.Value
	if list {
		for i := range f.Len() {
			items = append(items, f.Index(i))
		}
	} else {
		items = []reflect.Value{f}
	}
	var out []reflect.Value
	for _, it := range items {
		if it.Kind() == reflect.Pointer {
			if it.IsNil() {
				continue
			}
			it = it.Elem()
		}
		out = append(out, fieldValues(it, rest)...)
	}
	return out
}

// JSONField is the field of the struct v whose JSON name is name, looking
// into inlined (embedded, unnamed) fields.
func JSONField(v reflect.Value, name string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		switch {
		case tag == "-" || !sf.IsExported():
		case tag == "" && sf.Anonymous:
			if f, ok := JSONField(v.Field(i), name); ok {
				return f, true
			}
		case tag == name:
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// CheckTable returns what is wrong with table as the field coverage of
// the spec type typ: two rows of one path, a row without a note or class,
// Accepts on a row neither refused nor limited, a limited row without
// Accepts, a field of typ without a row (an upgrade
// of the types added one), a row naming no field of typ (or under a row
// that covers it). The kinds' tests call it on their tables.
func CheckTable(typ reflect.Type, table []Field) error {
	var problems []string
	paths := map[string]bool{}
	for _, f := range table {
		switch {
		case paths[f.Path]:
			problems = append(problems, f.Path+": two rows")
		case f.Note == "":
			problems = append(problems, f.Path+": no note")
		case f.Class < ClassMapped || f.Class > ClassLimited:
			problems = append(problems, f.Path+": no class")
		case f.Accepts != nil && f.Class != ClassRefused && f.Class != ClassLimited:
			problems = append(problems, f.Path+": accepts on a row neither refused nor limited")
		case f.Accepts == nil && f.Class == ClassLimited:
			problems = append(problems, f.Path+": a limited row accepting nothing")
		}
		paths[f.Path] = true
	}
	missing, unknown := Uncovered(typ, table)
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("fields of %s without a row: %s", typ, strings.Join(missing, ", ")))
	}
	if len(unknown) > 0 {
		problems = append(problems, fmt.Sprintf("rows naming no field of %s (or under a row that covers them): %s", typ, strings.Join(unknown, ", ")))
	}
	if len(problems) > 0 {
		return fmt.Errorf("field table: %s", strings.Join(problems, "; "))
	}
	return nil
}

// specFields lists the fields of the struct type t by JSON path under
// prefix, inlined fields flattened, with their types.
func specFields(t reflect.Type, prefix string) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		switch {
		case tag == "-" || !sf.IsExported():
		case tag == "" && sf.Anonymous:
			for p, ft := range specFields(sf.Type, prefix) {
				out[p] = ft
			}
		default:
			out[prefix+tag] = sf.Type
		}
	}
	return out
}

// structOf is t without pointers, and the item type of a list: the
// struct whose fields rows below path classify.
func structOf(t reflect.Type) (reflect.Type, bool) {
	list := false
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		list = list || t.Kind() == reflect.Slice
		t = t.Elem()
	}
	return t, list
}

// Uncovered walks the struct type typ as table classifies it: missing are
// its fields without a row (nor rows under them that classify their
// sub-fields), unknown the rows naming no field of typ.
func Uncovered(typ reflect.Type, table []Field) (missing, unknown []string) {
	rows := map[string]bool{}
	for _, f := range table {
		rows[f.Path] = false
	}
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for p, ft := range specFields(t, prefix) {
			if _, ok := rows[p]; ok {
				rows[p] = true
				continue
			}
			st, list := structOf(ft)
			below := p + "."
			if list {
				below = p + "[]."
			}
			expanded := st.Kind() == reflect.Struct && slices.ContainsFunc(table, func(f Field) bool {
				return strings.HasPrefix(f.Path, below)
			})
			if !expanded {
				missing = append(missing, p)
				continue
			}
			walk(st, below)
		}
	}
	walk(typ, "")
	for p, seen := range rows {
		if !seen {
			unknown = append(unknown, p)
		}
	}
	slices.Sort(missing)
	slices.Sort(unknown)
	return missing, unknown
}

// ReasonKeyFile is why a web.tlsConfig.keyFile of prometheus-operator's
// kinds is refused in a takeover: prometheus-operator's pkg/webconfig
// mounts keySecret whatever keyFile says, so with keyFile alone it writes
// a volume of a Secret without a name, which the API server refuses.
const ReasonKeyFile = "prometheus-operator v0.93.1 writes no StatefulSet for it (it mounts keySecret's volume all the same, a Secret without a name, which the API server refuses), so a takeover could not hand it back: keySecret works in both"

// Legend explains the classes of Matrix's rows, for the docs.
const Legend = `- **mapped**: carried into the PrometheusServer the object is rendered as,
  with prometheus-operator's meaning and defaults;
- **limited**: mapped, but for the values the reason names: an object
  that sets one of those is refused as for a refused field;
- **ignored**: accepted, and changes nothing podreload renders;
- **refused**: an object that sets the field (to a value other than those
  the reason accepts) is not taken over; the paths of every such field,
  sorted, are the ` + "`UnsupportedFields`" + ` message (its condition and
  Event). A refused field is never silently dropped.
`

// Matrix renders table for the docs: the counts by class, then one row
// per field, sorted by path.
func Matrix(table []Field) string {
	var b strings.Builder
	counts := map[Class]int{}
	for _, f := range table {
		counts[f.Class]++
	}
	fmt.Fprintf(&b, "%d fields: %d mapped, %d limited, %d ignored, %d refused.\n\n", len(table), counts[ClassMapped], counts[ClassLimited], counts[ClassIgnored], counts[ClassRefused])
	b.WriteString("| field | class | maps to, or why |\n|---|---|---|\n")
	rows := slices.Clone(table)
	slices.SortStableFunc(rows, func(a, b Field) int { return strings.Compare(a.Path, b.Path) })
	for _, f := range rows {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", f.Path, f.Class, f.Note)
	}
	return b.String()
}

// SetPath sets the field at path in spec (a pointer to a spec struct) to
// value (JSON), or to a non-zero value of its type when value is empty; a
// list on the way gets one item. The kinds' tests set each refused field
// with it.
func SetPath(spec reflect.Value, path, value string) error {
	v := spec.Elem()
	segs := strings.Split(path, ".")
	for i, seg := range segs {
		f, ok := JSONField(v, strings.TrimSuffix(seg, "[]"))
		if !ok {
			return fmt.Errorf("%s: no field %s", path, seg)
		}
		if i == len(segs)-1 {
			if value == "" {
				fill(f)
				return nil
			}
			if err := json.Unmarshal([]byte(value), f.Addr().Interface()); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			return nil
		}
		if strings.HasSuffix(seg, "[]") {
			if f.Len() == 0 {
				f.Set(reflect.Append(f, reflect.New(f.Type().Elem()).Elem()))
			}
			f = f.Index(0)
		}
		if f.Kind() == reflect.Pointer {
			if f.IsNil() {
				f.Set(reflect.New(f.Type().Elem()))
			}
			f = f.Elem()
		}
		v = f
	}
	return nil
}

// fill sets v to a non-zero value of its type.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Slice:
		item := reflect.New(v.Type().Elem()).Elem()
		fill(item)
		v.Set(reflect.Append(reflect.MakeSlice(v.Type(), 0, 1), item))
	case reflect.Map:
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		v.Set(reflect.MakeMap(v.Type()))
		v.SetMapIndex(k, e)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
				return
			}
		}
	}
}
