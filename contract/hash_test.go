package contract

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSum(t *testing.T) {
	base := Sum([]byte("cfg"), map[string]string{"cm-0/a.yaml": "a", "cm-1/b.yaml": "b"})
	require.Len(t, base, 64)
	require.Equal(t, base, Sum([]byte("cfg"), map[string]string{"cm-1/b.yaml": "b", "cm-0/a.yaml": "a"}), "map order")
	require.Equal(t, Sum(nil, nil), Sum([]byte{}, map[string]string{}))

	for name, other := range map[string]string{
		"config changed":         Sum([]byte("cfg2"), map[string]string{"cm-0/a.yaml": "a", "cm-1/b.yaml": "b"}),
		"file changed":           Sum([]byte("cfg"), map[string]string{"cm-0/a.yaml": "a2", "cm-1/b.yaml": "b"}),
		"file renamed":           Sum([]byte("cfg"), map[string]string{"cm-0/a.yaml": "a", "cm-2/b.yaml": "b"}),
		"file removed":           Sum([]byte("cfg"), map[string]string{"cm-0/a.yaml": "a"}),
		"empty file added":       Sum([]byte("cfg"), map[string]string{"cm-0/a.yaml": "a", "cm-1/b.yaml": "b", "cm-1/c.yaml": ""}),
		"bytes moved to a name":  Sum([]byte("cfg"), map[string]string{"cm-0/a.yamla": "", "cm-1/b.yaml": "b"}),
		"config moved to a file": Sum(nil, map[string]string{"cfg": "", "cm-0/a.yaml": "a", "cm-1/b.yaml": "b"}),
	} {
		require.NotEqual(t, base, other, name)
	}
}

// The hash is part of the interface between the controller and the sidecars
// of other versions: it must not change by accident. (The value is
// sha256 of the version string and the length-prefixed fields, computed
// independently of this package.)
func TestSumStable(t *testing.T) {
	require.Equal(t, "fc09cba36e2cb532fd626686ec1144ec5b82258633f8abfd690e2a23b24f9e04", Sum([]byte("global: {}\n"), map[string]string{"main-rulefiles-0/default-r.yaml": "groups: []\n"}))
}
