package takeover

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type item struct {
	A string `json:"a"`
	B string `json:"b,omitempty"`
}

type spec struct {
	Inlined `json:",inline"`
	Items   []item `json:"items,omitempty"`
	Flag    *bool  `json:"flag,omitempty"`
	Mode    string `json:"mode,omitempty"`
}

type Inlined struct {
	Name string `json:"name,omitempty"`
}

func table() []Field {
	return []Field{
		Mapped("name", "x"),
		Mapped("items[].a", "x"),
		Refuse("items[].b", "x"),
		RefuseBut("flag", "x", OnlyBool(false)),
		Limit("mode", "x", OnlyStrings("", "A")),
	}
}

// TestUncovered: the walk reports a field the table lacks, at the top and
// under a list classified item by item, and a row naming no field.
func TestUncovered(t *testing.T) {
	fields := []Field{Mapped("items[].a", "x"), Mapped("gone", "x")}
	missing, unknown := Uncovered(reflect.TypeFor[spec](), fields)
	require.Equal(t, []string{"flag", "items[].b", "mode", "name"}, missing)
	require.Equal(t, []string{"gone"}, unknown)
	require.NoError(t, CheckTable(reflect.TypeFor[spec](), table()))
	require.EqualError(t, CheckTable(reflect.TypeFor[spec](), append(table(), Mapped("name", "y"), Ignored("flag2", ""), Limit("flag3", "x", nil))),
		"field table: name: two rows; flag2: no note; flag3: a limited row accepting nothing; rows naming no field of takeover.spec (or under a row that covers them): flag2, flag3")
	require.Contains(t, Matrix(table()), "5 fields: 2 mapped, 1 limited, 0 ignored, 2 refused.")
}

// TestRefusedFields: a refused or limited field set to a value it does not
// accept is listed once, sorted; an accepted value or the zero value is
// not.
func TestRefusedFields(t *testing.T) {
	require.Empty(t, RefusedFields(spec{Flag: new(false), Mode: "A", Items: []item{{A: "a"}}}, table()))
	got := RefusedFields(spec{Flag: new(true), Mode: "B", Items: []item{{B: "b"}, {B: "c"}}}, table())
	require.Equal(t, []string{"flag", "items[].b", "mode"}, got)
	require.Equal(t, "spec.flag; spec.items[].b; a reason: not a field", UnsupportedMessage([]string{"flag", "items[].b", "a reason: not a field"}))

	var s spec
	require.NoError(t, SetPath(reflect.ValueOf(&s), "items[].b", ""))
	require.NoError(t, SetPath(reflect.ValueOf(&s), "flag", "true"))
	require.Equal(t, []string{"flag", "items[].b"}, RefusedFields(s, table()))
	require.EqualError(t, SetPath(reflect.ValueOf(&s), "nope", ""), "nope: no field nope")
}
