package takeover

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	kjson "sigs.k8s.io/json"
)

// unknownReason is what keeps an object setting a field its Go types do
// not know from being taken over: the API server keeps the field when the
// CRD installed is newer than the types, and what it asks for cannot be
// rendered.
const unknownReason = "a field of a newer prometheus-operator, not known to this release"

// Decoded is what decoding an object as the API server does found in it
// besides what its Go type holds.
type Decoded struct {
	// Unknown are the paths (from the object's root, "spec.x",
	// "spec.list[0].y") of the fields under spec that the type does not
	// know: fields of a newer prometheus-operator's CRD.
	Unknown []string
	// Dropped are the paths of the fields under spec that differ from one
	// of the type's by case alone ("spec.externalURL" for externalUrl):
	// no CRD has them, and the API server prunes them.
	Dropped []string
}

// Decode decodes data, an object's JSON, into obj (a pointer to its Go
// type) as the API server decodes a request's body: field names are
// case-sensitive and of duplicate keys the last wins (sigs.k8s.io/json, as
// k8s.io/apimachinery). What obj cannot hold under spec is in Decoded;
// what it cannot hold elsewhere (a newer status) is left out.
func Decode(data []byte, obj any) (Decoded, error) {
	strict, err := kjson.UnmarshalStrict(data, obj, kjson.DisallowUnknownFields)
	if err != nil {
		return Decoded{}, err
	}
	var out Decoded
	root := reflect.TypeOf(obj)
	for _, e := range strict {
		quoted, ok := strings.CutPrefix(e.Error(), `unknown field `)
		if !ok {
			continue
		}
		path, err := strconv.Unquote(quoted)
		if err != nil || !strings.HasPrefix(path, "spec.") {
			continue
		}
		if caseOnly(root, path) {
			out.Dropped = append(out.Dropped, path)
		} else {
			out.Unknown = append(out.Unknown, path)
		}
	}
	slices.Sort(out.Unknown)
	slices.Sort(out.Dropped)
	return out, nil
}

// UnknownFields are the reasons the unknown fields of d (Decoded.Unknown)
// keep an object from being taken over, for Check.Unsupported and
// Variant.Unsupported: each names the field by its path.
func UnknownFields(d Decoded) []string {
	out := make([]string, len(d.Unknown))
	for i, p := range d.Unknown {
		out[i] = fmt.Sprintf("%s: %s", p, unknownReason)
	}
	return out
}

// caseOnly reports whether the last name of path (a path of strict
// decoding, from the root of t) differs by case alone from a JSON name of
// the struct type the path leads to.
func caseOnly(t reflect.Type, path string) bool {
	segs := strings.Split(path, ".")
	for _, seg := range segs[:len(segs)-1] {
		name, _, _ := strings.Cut(seg, "[")
		ft, ok := fieldType(deref(t), name)
		if !ok {
			return false
		}
		t = ft
		if strings.Contains(seg, "[") {
			t = deref(t)
			if t.Kind() != reflect.Slice && t.Kind() != reflect.Map {
				return false
			}
			t = t.Elem()
		}
	}
	last := segs[len(segs)-1]
	if deref(t).Kind() != reflect.Struct {
		return false
	}
	for p := range specFields(deref(t), "") {
		if strings.EqualFold(p, last) {
			return true
		}
	}
	return false
}

// fieldType is the type of the field of the struct type t whose JSON name
// is name, inlined fields flattened.
func fieldType(t reflect.Type, name string) (reflect.Type, bool) {
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	ft, ok := specFields(t, "")[name]
	return ft, ok
}

// deref is t without pointers.
func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}
