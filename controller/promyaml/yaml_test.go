package promyaml

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v2"
)

// TestConfigYAMLEncoding checks that yaml.v2, which Prometheus reads its
// configuration with, reads back the strings Encode writes, and that
// the usual ones are written plain.
func TestConfigYAMLEncoding(t *testing.T) {
	for _, tc := range []struct {
		s     string
		plain bool
	}{
		{"", false}, {" ", false}, {"a b", false}, {" lead", false}, {"trail ", false},
		{"yes", false}, {"No", false}, {"ON", false}, {"off", false}, {"y", false}, {"n", false},
		{"true", false}, {"False", false}, {"null", false}, {"~", false},
		{"0", false}, {"9093", false}, {"1e3", false}, {"0x1F", false}, {"0o17", false}, {"0b101", false},
		{"1_000", false}, {"+1", false}, {"-1", false}, {".5", false}, {".inf", false}, {".NaN", false},
		{"1:30", false}, {"2001-12-14", false}, {"12:30:00", false},
		{"a: b", false}, {"a:", false}, {"#x", false}, {"a #b", false}, {"- x", false}, {"-", false},
		{"--- x", false}, {"? x", false}, {":x", false}, {",x", false}, {"[x]", false}, {"{x}", false},
		{"*x", false}, {"&x", false}, {"!x", false}, {"|x", false}, {">x", false}, {"%x", false},
		{"@x", false}, {"`x", false}, {"'x", false}, {"\"x", false}, {"x'y", false}, {"x\"y", false},
		{"<<", false}, {"multi\nline\n", false}, {"tab\there", false}, {"\x00", false}, {"\x7f", false},
		{"\u2028", false}, {"\ufeff", false}, {"ünïcode", false},
		{"a:b", true}, {"a#b", false}, {"...", false}, {"..", true}, {"\\", false}, {"a\\b", true},
		{"$(POD_NAME)", true}, {"${1}", true}, {"(.+)", true}, {"(Failed|Succeeded)", true},
		{"(app);true", true}, {";", true}, {"/", true}, {"^a.*$", true}, {"go_gc_.*", true},
		{"__meta_kubernetes_pod_label_(.+)", true}, {"http://proxy:3128/a?b=c", true},
		{"30s", true}, {"1m30s", true}, {"metrics-0", true}, {"monitoring/main", true},
		{"serviceMonitor/default/app/0", true}, {"10.0.0.0/8,.svc", true}, {"TLS12", true},
	} {
		t.Run(fmt.Sprintf("%q", tc.s), func(t *testing.T) {
			require.Equal(t, tc.plain, plainYAML(tc.s))
			out, err := Encode(yaml.MapSlice{
				{Key: tc.s, Value: tc.s},
				{Key: "list", Value: []string{tc.s}},
				{Key: "maps", Value: []yaml.MapSlice{{{Key: tc.s, Value: tc.s}}}},
			}, 0)
			require.NoError(t, err)
			var got yaml.MapSlice
			require.NoError(t, yaml.UnmarshalStrict(out, &got), "%s", out)
			want := yaml.MapSlice{
				{Key: tc.s, Value: tc.s},
				{Key: "list", Value: []any{tc.s}},
				{Key: "maps", Value: []any{yaml.MapSlice{{Key: tc.s, Value: tc.s}}}},
			}
			require.Empty(t, cmp.Diff(want, got), "%s", out)
		})
	}
}

// TestConfigYAMLEncodingErrors covers values the configuration never
// holds.
func TestConfigYAMLEncodingErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  yaml.MapSlice
		want string
	}{
		{"key", yaml.MapSlice{{Key: 1, Value: "a"}}, "encode yaml: key 1 is not a string"},
		{"value", yaml.MapSlice{{Key: "a", Value: float32(1)}}, "encode yaml: unsupported value of type float32"},
		{"nested", yaml.MapSlice{{Key: "a", Value: []yaml.MapSlice{{{Key: "b", Value: []int{1}}}}}}, "encode yaml: unsupported value of type []int"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Encode(tc.cfg, 0)
			require.EqualError(t, err, tc.want)
		})
	}
}

// TestPlainByte checks the bit sets of plainByte against the list of the
// bytes they stand for.
func TestPlainByte(t *testing.T) {
	const safe = "_./$(){}[]|;+*?^-=@%~,<>\\"
	for c := range 256 {
		want := isAlnum(byte(c)) || strings.IndexByte(safe, byte(c)) >= 0
		require.Equal(t, want, plainByte(byte(c)), "%q", rune(c))
	}
}
