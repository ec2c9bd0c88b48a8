package envsubst

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// referenceRe is the expression thanos pkg/reloader's expandEnv uses.
var referenceRe = regexp.MustCompile(`\$\(([a-zA-Z_0-9]+)\)`)

// referenceOrdinalRe is the expression prometheus-config-reloader uses to
// derive STATEFULSET_ORDINAL_NUMBER.
var referenceOrdinalRe = regexp.MustCompile(`\d+$`)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// referenceExpand expands in as thanos' expandEnv does, but leaves references
// to undefined variables verbatim and counts them instead of stopping.
func referenceExpand(in []byte, env map[string]string) (out []byte, undefined int) {
	out = referenceRe.ReplaceAllFunc(in, func(m []byte) []byte {
		v, ok := env[string(m[2:len(m)-1])]
		if !ok {
			undefined++
			return m
		}
		return []byte(v)
	})
	return out, undefined
}

func mapLookup(env map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	}
}

func TestExpand(t *testing.T) {
	env := map[string]string{
		"A":           "1",
		"B":           "two",
		"_A_1":        "underscored",
		"123":         "digits",
		"lower":       "lowercase",
		"EMPTY":       "",
		"NESTED":      "$(B)",
		"POD_NAME":    "prometheus-k8s-12",
		"NO_DIGITS":   "prometheus-k8s",
		"INNER":       "web-3-a",
		"MIXED":       "a1b22",
		"MULTI":       "line1\nline2",
		OrdinalVar:    "99",
		"UNICODE_VAL": "héllo ✓",
	}
	for _, tc := range []struct {
		name        string
		in          string
		strict      bool
		ordinalFrom string
		want        string
		undefined   int
		err         string
	}{
		{name: "empty input", in: "", want: ""},
		{name: "plain text", in: "global:\n  scrape_interval: 30s\n", want: "global:\n  scrape_interval: 30s\n"},
		{name: "one variable", in: "replica: $(A)", want: "replica: 1"},
		{name: "whole input is a reference", in: "$(A)", want: "1"},
		{name: "many variables", in: "$(A) and $(B), $(A) again", want: "1 and two, 1 again"},
		{name: "adjacent references", in: "$(A)$(B)", want: "1two"},
		{name: "braces untouched", in: "${A} ${B}", want: "${A} ${B}"},
		{name: "bare dollar untouched", in: "$A $B", want: "$A $B"},
		{name: "positional untouched", in: "replacement: $1 ${1}", want: "replacement: $1 ${1}"},
		{name: "double dollar untouched", in: "$$ $$A", want: "$$ $$A"},
		{name: "double dollar is not an escape", in: "$$(A)", want: "$1"},
		{name: "dollar paren without name", in: "$()", want: "$()"},
		{name: "invalid name", in: "$(A-B)", want: "$(A-B)"},
		{name: "space in name", in: "$(A )", want: "$(A )"},
		{name: "unterminated", in: "$(A", want: "$(A"},
		{name: "unterminated then reference", in: "$(A $(B)", want: "$(A two"},
		{name: "dollar paren at end", in: "x $(", want: "x $("},
		{name: "lone dollar at end", in: "x $", want: "x $"},
		{name: "reference inside invalid parentheses", in: "$($(A))", want: "$(1)"},
		{name: "nested parentheses", in: "$((A))", want: "$((A))"},
		{name: "underscore and digits", in: "$(_A_1)", want: "underscored"},
		{name: "all digits", in: "$(123)", want: "digits"},
		{name: "lowercase", in: "$(lower)", want: "lowercase"},
		{name: "case sensitive", in: "$(a)", want: "$(a)", undefined: 1},
		{name: "non-ASCII name untouched", in: "$(é)", want: "$(é)"},
		{name: "UTF-8 around references", in: "héllo $(A) ✓", want: "héllo 1 ✓"},
		{name: "UTF-8 value", in: "$(UNICODE_VAL)", want: "héllo ✓"},
		{name: "empty value", in: "a$(EMPTY)b", want: "ab"},
		{name: "value with newline", in: "$(MULTI)", want: "line1\nline2"},
		{name: "value not expanded again", in: "$(NESTED)", want: "$(B)"},
		{name: "undefined left verbatim", in: "x: $(UNDEFINED)", want: "x: $(UNDEFINED)", undefined: 1},
		{
			name:      "undefined counted per reference",
			in:        "$(U1) $(A) $(U2) $(U1)",
			want:      "$(U1) 1 $(U2) $(U1)",
			undefined: 3,
		},
		{name: "strict all defined", in: "$(A)\n$(B)", strict: true, want: "1\ntwo"},
		{name: "strict without references", in: "a: b\n", strict: true, want: "a: b\n"},
		{name: "strict ignores invalid references", in: "$(A-B) ${U} $U", strict: true, want: "$(A-B) ${U} $U"},
		{
			name:      "strict undefined",
			in:        "$(FOO)",
			strict:    true,
			undefined: 1,
			err:       `line 1: environment variable "FOO" is not set`,
		},
		{
			name:      "strict undefined on third line",
			in:        "a: $(A)\nb: $(B)\nc: $(FOO)\n",
			strict:    true,
			undefined: 1,
			err:       `line 3: environment variable "FOO" is not set`,
		},
		{
			name:      "strict counts CRLF lines by LF",
			in:        "a\r\nb\r\n\r\n$(FOO)",
			strict:    true,
			undefined: 1,
			err:       `line 4: environment variable "FOO" is not set`,
		},
		{
			name:      "strict several undefined",
			in:        "a: $(A)\n\nc: $(FOO) $(BAR)\nd: $(FOO)\n",
			strict:    true,
			undefined: 3,
			err:       `line 3: environment variable "FOO" is not set, and 2 more`,
		},
		{
			name:      "strict undefined before defined",
			in:        "$(FOO)\n$(A)\n$(BAR)",
			strict:    true,
			undefined: 2,
			err:       `line 1: environment variable "FOO" is not set, and 1 more`,
		},
		{
			name:        "ordinal from trailing digits",
			in:          "shard: $(STATEFULSET_ORDINAL_NUMBER) pod: $(POD_NAME)",
			ordinalFrom: "POD_NAME",
			want:        "shard: 12 pod: prometheus-k8s-12",
		},
		{
			name:        "ordinal overrides a real variable",
			in:          "$(STATEFULSET_ORDINAL_NUMBER)",
			ordinalFrom: "POD_NAME",
			want:        "12",
		},
		{
			name:        "ordinal without trailing digits is empty",
			in:          "[$(STATEFULSET_ORDINAL_NUMBER)]",
			ordinalFrom: "NO_DIGITS",
			want:        "[]",
		},
		{
			name:        "ordinal ignores digits not at the end",
			in:          "[$(STATEFULSET_ORDINAL_NUMBER)]",
			ordinalFrom: "INNER",
			want:        "[]",
		},
		{
			name:        "ordinal takes only the last run of digits",
			in:          "$(STATEFULSET_ORDINAL_NUMBER)",
			ordinalFrom: "MIXED",
			want:        "22",
		},
		{
			name:        "ordinal from unset variable is empty",
			in:          "[$(STATEFULSET_ORDINAL_NUMBER)]",
			ordinalFrom: "UNSET_POD_NAME",
			want:        "[]",
		},
		{
			name:        "ordinal from unset variable is defined in strict mode",
			in:          "[$(STATEFULSET_ORDINAL_NUMBER)]",
			strict:      true,
			ordinalFrom: "UNSET_POD_NAME",
			want:        "[]",
		},
		{
			name: "ordinal disabled uses the real variable",
			in:   "$(STATEFULSET_ORDINAL_NUMBER)",
			want: "99",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Options{Strict: tc.strict, OrdinalFromEnv: tc.ordinalFrom, Lookup: mapLookup(env)})
			out, undefined, err := e.Expand([]byte(tc.in))
			require.Equal(t, tc.undefined, undefined)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				require.Nil(t, out)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, string(out))
		})
	}
}

func TestExpandOrdinalDisabledLeavesVariableUndefined(t *testing.T) {
	for _, tc := range []struct {
		name      string
		strict    bool
		want      string
		undefined int
		err       string
	}{
		{name: "tolerant", want: "$(STATEFULSET_ORDINAL_NUMBER)", undefined: 1},
		{
			name:      "strict",
			strict:    true,
			undefined: 1,
			err:       `line 1: environment variable "STATEFULSET_ORDINAL_NUMBER" is not set`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"POD_NAME": "prometheus-k8s-3"}
			e := New(Options{Strict: tc.strict, Lookup: mapLookup(env)})
			out, undefined, err := e.Expand([]byte("$(STATEFULSET_ORDINAL_NUMBER)"))
			require.Equal(t, tc.undefined, undefined)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				require.Nil(t, out)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, string(out))
		})
	}
}

// TestExpandReportsUndefined checks that a tolerant Expander reports every
// undefined reference with its line, once per Expand, and a strict one none.
func TestExpandReportsUndefined(t *testing.T) {
	env := map[string]string{"A": "1\n2\n"} // A value's newlines do not shift lines.
	for _, tc := range []struct {
		name   string
		in     string
		strict bool
		want   [][]Reference
	}{
		{name: "none undefined", in: "a: $(A)\n"},
		{name: "one", in: "a: $(NOPE)\n", want: [][]Reference{{{"NOPE", 1}}}},
		{
			name: "several lines",
			in:   "a: $(A)\nb: $(X) $(Y)\n\n$(A)\nc: $(X)",
			want: [][]Reference{{{"X", 2}, {"Y", 2}, {"X", 5}}},
		},
		{name: "invalid references are not variables", in: "${X} $(Y-Z) $()\n$(W)", want: [][]Reference{{{"W", 2}}}},
		{name: "strict reports through its error", in: "a: $(NOPE)\n", strict: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [][]Reference
			e := New(Options{Strict: tc.strict, Lookup: mapLookup(env), Undefined: func(refs []Reference) {
				got = append(got, refs)
			}})
			_, _, _ = e.Expand([]byte(tc.in))
			require.Equal(t, tc.want, got)
		})
	}
}

func TestExpandLookupDefaultsToEnvironment(t *testing.T) {
	t.Setenv("PODRELOAD_ENVSUBST_SET", "from-env")
	t.Setenv("PODRELOAD_ENVSUBST_EMPTY", "")
	t.Setenv("PODRELOAD_ENVSUBST_POD", "prometheus-k8s-7")
	// Setenv first so that the variable is restored after the test.
	t.Setenv("PODRELOAD_ENVSUBST_UNSET", "")
	require.NoError(t, os.Unsetenv("PODRELOAD_ENVSUBST_UNSET"))

	for _, tc := range []struct {
		name        string
		in          string
		strict      bool
		ordinalFrom string
		want        string
		undefined   int
		err         string
	}{
		{name: "set", in: "$(PODRELOAD_ENVSUBST_SET)", want: "from-env"},
		{name: "set but empty", in: "[$(PODRELOAD_ENVSUBST_EMPTY)]", want: "[]"},
		{name: "unset", in: "$(PODRELOAD_ENVSUBST_UNSET)", want: "$(PODRELOAD_ENVSUBST_UNSET)", undefined: 1},
		{
			name:      "unset strict",
			in:        "$(PODRELOAD_ENVSUBST_UNSET)",
			strict:    true,
			undefined: 1,
			err:       `line 1: environment variable "PODRELOAD_ENVSUBST_UNSET" is not set`,
		},
		{
			name:        "ordinal",
			in:          "$(STATEFULSET_ORDINAL_NUMBER)",
			ordinalFrom: "PODRELOAD_ENVSUBST_POD",
			want:        "7",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Options{Strict: tc.strict, OrdinalFromEnv: tc.ordinalFrom})
			out, undefined, err := e.Expand([]byte(tc.in))
			require.Equal(t, tc.undefined, undefined)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, string(out))
		})
	}
}

func TestExpandOutputSharing(t *testing.T) {
	env := map[string]string{"A": "1"}
	for _, tc := range []struct {
		name   string
		in     string
		shared bool
	}{
		{name: "no reference", in: "a: b", shared: true},
		{name: "only undefined references", in: "a: $(U)", shared: true},
		{name: "invalid references", in: "a: $(A-B) ${A}", shared: true},
		{name: "replaced", in: "a: $(A)", shared: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.in)
			out, _, err := New(Options{Lookup: mapLookup(env)}).Expand(in)
			require.NoError(t, err)
			require.Equal(t, tc.shared, &out[0] == &in[0])
		})
	}
}

func TestExpandConcurrent(t *testing.T) {
	env := map[string]string{"A": "1", "POD_NAME": "p-4"}
	e := New(Options{OrdinalFromEnv: "POD_NAME", Lookup: mapLookup(env)})
	in := []byte("$(A) $(STATEFULSET_ORDINAL_NUMBER) $(U)")
	var (
		wg   sync.WaitGroup
		outs [8]string
		errs [8]error
	)
	for i := range outs {
		wg.Go(func() {
			out, _, err := e.Expand(in)
			outs[i], errs[i] = string(out), err
		})
	}
	wg.Wait()
	for i := range outs {
		require.NoError(t, errs[i])
		require.Equal(t, "1 4 $(U)", outs[i])
	}
}

func TestTrailingDigits(t *testing.T) {
	for _, s := range []string{"", "0", "12", "prometheus-k8s-12", "prometheus", "a1b22", "web-3-a", "x-٣", "x-1\n", "007"} {
		t.Run(fmt.Sprintf("%q", s), func(t *testing.T) {
			require.Equal(t, referenceOrdinalRe.FindString(s), trailingDigits(s))
		})
	}
}

// fuzzEnv is the fixed environment FuzzExpand expands against; POD_NAME is set per input.
func fuzzEnv(podName string) map[string]string {
	return map[string]string{
		"A":        "1",
		"B":        "two",
		"_x9":      "lower_",
		"EMPTY":    "",
		"NESTED":   "$(A)",
		"DOLLAR":   "$",
		"OPEN":     "$(",
		"POD_NAME": podName,
		OrdinalVar: "99",
	}
}

func FuzzExpand(f *testing.F) {
	for _, seed := range []struct {
		in      string
		podName string
	}{
		{"", ""},
		{"plain text\n", ""},
		{"$(A)$(B)", ""},
		{"${A} $A $1 $$ $$(A)", ""},
		{"$(A-B) $() $(A $(", ""},
		{"$($(A)) $(NESTED) $(OPEN)A)", ""},
		{"$(DOLLAR)(A) $(EMPTY)$(UNDEFINED)", ""},
		{"a: $(U)\nb: $(A)\nc: $(V)\n", ""},
		{"shard: $(STATEFULSET_ORDINAL_NUMBER)", "prometheus-k8s-12"},
		{"shard: $(STATEFULSET_ORDINAL_NUMBER)", "prometheus"},
		{"héllo $(é) $(_x9) ✓", "a1b22"},
	} {
		f.Add([]byte(seed.in), seed.podName)
	}
	f.Fuzz(func(t *testing.T, in []byte, podName string) {
		env := fuzzEnv(podName)
		withOrdinal := maps.Clone(env)
		withOrdinal[OrdinalVar] = referenceOrdinalRe.FindString(podName)
		for _, tc := range []struct {
			ordinalFrom string
			env         map[string]string
		}{
			{"", env},
			{"POD_NAME", withOrdinal},
		} {
			original := bytes.Clone(in)
			want, wantUndefined := referenceExpand(in, tc.env)

			out, undefined, err := New(Options{OrdinalFromEnv: tc.ordinalFrom, Lookup: mapLookup(env)}).Expand(in)
			require.NoError(t, err)
			require.Equal(t, wantUndefined, undefined)
			require.Equal(t, string(want), string(out))

			out, undefined, err = New(Options{Strict: true, OrdinalFromEnv: tc.ordinalFrom, Lookup: mapLookup(env)}).Expand(in)
			require.Equal(t, wantUndefined, undefined)
			require.Equal(t, undefined > 0, err != nil, "err: %v", err)
			if err != nil {
				require.Nil(t, out)
				require.True(t, strings.HasPrefix(err.Error(), "line "), err.Error())
			} else {
				require.Equal(t, string(want), string(out))
			}
			require.Equal(t, original, in, "Expand modified its input")
		}
	})
}

// prometheusConfig returns a Prometheus configuration of about size bytes with
// a few $(VAR) references, and many $1 and ${1} that must stay untouched.
func prometheusConfig(size int) []byte {
	var b strings.Builder
	b.WriteString(`global:
  scrape_interval: 30s
  evaluation_interval: 30s
  external_labels:
    prometheus: monitoring/k8s
    prometheus_replica: $(POD_NAME)
    shard: $(STATEFULSET_ORDINAL_NUMBER)
    cluster: $(CLUSTER)
scrape_configs:
`)
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, `- job_name: serviceMonitor/monitoring/app-%d/0
  honor_labels: false
  kubernetes_sd_configs:
  - role: endpoints
    namespaces:
      names:
      - monitoring
  scrape_interval: 30s
  relabel_configs:
  - source_labels: [job]
    target_label: __tmp_prometheus_job_name
  - action: keep
    source_labels: [__meta_kubernetes_service_label_app]
    regex: (app-%d);true
  - source_labels: [__meta_kubernetes_endpoint_address_target_kind, __meta_kubernetes_endpoint_address_target_name]
    separator: ;
    regex: Pod;(.*)
    replacement: ${1}
    target_label: pod
  - source_labels: [__address__]
    modulus: 2
    target_label: __tmp_hash
    action: hashmod
  - source_labels: [__meta_kubernetes_pod_container_port_number]
    regex: (.+)
    replacement: $1
    target_label: port
`, i, i)
	}
	b.WriteString("remote_write:\n- url: http://$(REMOTE_HOST)/api/v1/write\n")
	return []byte(b.String())
}

func BenchmarkExpand(b *testing.B) {
	env := map[string]string{
		"POD_NAME":    "prometheus-k8s-12",
		"CLUSTER":     "eu-west-1",
		"REMOTE_HOST": "thanos-receive.monitoring.svc:19291",
	}
	withOrdinal := maps.Clone(env)
	withOrdinal[OrdinalVar] = "12"
	in := prometheusConfig(50 << 10)
	plain := referenceRe.ReplaceAllLiteral(in, []byte("x"))

	e := New(Options{Strict: true, OrdinalFromEnv: "POD_NAME", Lookup: mapLookup(env)})
	b.Run("references", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := e.Expand(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("no_references", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := e.Expand(plain); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("regexp_reference", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		for b.Loop() {
			referenceExpand(in, withOrdinal)
		}
	})
}
