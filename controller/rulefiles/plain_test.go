package rulefiles

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// TestPackPlainShards checks that the rule files of prometheus-operator's
// layout are packed as it packs them (makeConfigMapsFromRules): in name
// order, into the last ConfigMap while its values stay within 512 KiB,
// never back into an earlier one, and one empty ConfigMap without files.
func TestPackPlainShards(t *testing.T) {
	server := Shards{Namespace: "monitoring", Prefix: "prometheus-main-rulefiles-", Plain: true}
	file := func(name string, kib int) ruleResult {
		return ruleResult{name: name, plain: strings.Repeat("x", kib<<10)}
	}
	sizes := func(shards []*corev1.ConfigMap) [][]string {
		var out [][]string
		for _, cm := range shards {
			var names []string
			for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
				names = append(names, k+"="+strconv.Itoa(len(cm.Data[k])>>10))
			}
			out = append(out, names)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		files []ruleResult
		want  [][]string
	}{
		{name: "none", want: [][]string{nil}},
		{name: "exactly full", files: []ruleResult{file("b", 256), file("a", 256)}, want: [][]string{{"a=256", "b=256"}}},
		{name: "one byte over", files: []ruleResult{file("a", 256), {name: "b", plain: strings.Repeat("x", 256<<10+1)}}, want: [][]string{{"a=256"}, {"b=256"}}},
		// First-fit would put c beside a.
		{name: "next fit", files: []ruleResult{file("c", 100), file("a", 400), file("b", 200)}, want: [][]string{{"a=400"}, {"b=200", "c=100"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shards := packPlainShards(server, tc.files)
			require.Equal(t, tc.want, sizes(shards))
			for i, cm := range shards {
				require.Equal(t, "prometheus-main-rulefiles-"+strconv.Itoa(i), cm.Name)
			}
		})
	}
}
