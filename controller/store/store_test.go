package store

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func secretKey(name, key string) corev1.SecretKeySelector {
	return corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
}

func configMapKey(name, key string) corev1.ConfigMapKeySelector {
	return corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
}

// TestLookup checks the values and the messages of the one resolver, and
// that every object looked up is recorded, found or not.
func TestLookup(t *testing.T) {
	l := NewLookup(Objects{
		Secrets: map[string]*corev1.Secret{"ns/creds": {Data: map[string][]byte{"user": []byte("alice")}}},
		ConfigMaps: map[string]*corev1.ConfigMap{"ns/ca": {
			Data: map[string]string{"ca.crt": "PEM"}, BinaryData: map[string][]byte{"der": {1}},
		}},
	})
	v, err := l.Secret("ns", secretKey("creds", "user"))
	require.NoError(t, err)
	require.Equal(t, "alice", string(v))
	_, err = l.Secret("ns", secretKey("creds", "password"))
	require.EqualError(t, err, `secret "ns/creds" has no key "password"`)
	_, err = l.Secret("other", secretKey("missing", "user"))
	require.EqualError(t, err, `secret "other/missing" not found (looking for key "user")`)

	v, err = l.ConfigMap("ns", configMapKey("ca", "ca.crt"))
	require.NoError(t, err)
	require.Equal(t, "PEM", string(v))
	v, err = l.ConfigMap("ns", configMapKey("ca", "der"))
	require.NoError(t, err)
	require.Equal(t, []byte{1}, v)
	_, err = l.ConfigMap("ns", configMapKey("ca", "tls.crt"))
	require.EqualError(t, err, `configmap "ns/ca" has no key "tls.crt"`)
	_, err = l.ConfigMap("ns", configMapKey("gone", "ca.crt"))
	require.EqualError(t, err, `configmap "ns/gone" not found (looking for key "ca.crt")`)

	require.Nil(t, l.Peek(Ref{Kind: Secret, Namespace: "ns", Name: "peeked"}))
	require.NotNil(t, l.Peek(Ref{Kind: ConfigMap, Namespace: "ns", Name: "ca"}))
	require.Equal(t, []Ref{
		{Kind: Secret, Namespace: "ns", Name: "creds"},
		{Kind: Secret, Namespace: "other", Name: "missing"},
		{Kind: ConfigMap, Namespace: "ns", Name: "ca"},
		{Kind: ConfigMap, Namespace: "ns", Name: "gone"},
	}, l.Refs(), "sorted, each once, the peeked one not")
}

func TestUnionSubset(t *testing.T) {
	a := []Ref{{Kind: Secret, Namespace: "b", Name: "x"}, {Kind: ConfigMap, Namespace: "a", Name: "x"}}
	b := []Ref{{Kind: Secret, Namespace: "a", Name: "y"}, {Kind: Secret, Namespace: "b", Name: "x"}}
	u := Union(a, b)
	require.Equal(t, []Ref{
		{Kind: Secret, Namespace: "a", Name: "y"},
		{Kind: Secret, Namespace: "b", Name: "x"},
		{Kind: ConfigMap, Namespace: "a", Name: "x"},
	}, u)
	require.True(t, Subset(a, u))
	require.True(t, Subset(nil, nil))
	require.False(t, Subset(u, Union(b, nil)))
	require.Equal(t, "ConfigMap a/x", a[1].String())
	require.Equal(t, "Secret b/x", a[0].String())
}

func TestTracker(t *testing.T) {
	tr := NewTracker()
	one, two := types.NamespacedName{Namespace: "ns", Name: "one"}, types.NamespacedName{Namespace: "ns", Name: "two"}
	shared := Ref{Kind: Secret, Namespace: "ns", Name: "shared"}
	own := Ref{Kind: ConfigMap, Namespace: "ns", Name: "own"}
	tr.Remember(one, Union([]Ref{shared, own}, nil))
	tr.Remember(two, []Ref{shared})
	require.ElementsMatch(t, []types.NamespacedName{one, two}, tr.Owners(shared))
	require.Equal(t, []types.NamespacedName{one}, tr.Owners(own))
	require.Empty(t, tr.Owners(Ref{Kind: Secret, Namespace: "ns", Name: "own"}), "a Secret is not the ConfigMap of the same name")

	refs := tr.Refs(one)
	refs[0] = Ref{}
	require.ElementsMatch(t, []types.NamespacedName{one, two}, tr.Owners(shared), "Refs returns a copy")
	tr.Forget(one)
	require.Equal(t, []types.NamespacedName{two}, tr.Owners(shared))
	require.Empty(t, tr.Refs(one))
}
