package apisource

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podreload/podreload/reloader"
)

// partsAre waits until Parts(names) renders as want ("name=content;..."
// in name order) or its error says want.
func partsAre(t *testing.T, s *Source, names []string, want string) {
	t.Helper()
	var got string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		parts, err := s.Parts(names)
		if err != nil {
			got = err.Error()
		} else {
			var b strings.Builder
			for _, name := range slices.Sorted(maps.Keys(parts)) {
				b.WriteString(name + "=" + string(parts[name]) + ";")
			}
			got = b.String()
		}
		if got == want {
			return
		}
		select {
		case <-s.Changed():
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("parts: got %q, want %q", got, want)
}

// TestParts reads the parts of a split configuration: Secrets named by
// Parts, each watched by name under a Role that names them, and no
// longer read once Parts stops naming them.
func TestParts(t *testing.T) {
	e := newEnv(t)
	ns := e.namespace(t)
	e.token, e.ca = e.cp.ServiceAccount(t, ns, "parts", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"cfg", "cfg-1", "cfg-2"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}},
	})
	e.secret(t, ns, map[string][]byte{"config": []byte("main")})
	s, reg := e.source(t, ns, nil)
	var _ reloader.PartSource = s

	_, err := s.Parts([]string{"cfg-1"})
	require.ErrorIs(t, err, reloader.ErrNotRead)
	partsAre(t, s, []string{"cfg-1"}, "secret "+ns+"/cfg-1 not found: waiting for it")
	create := func(name string, data map[string][]byte) {
		_, err := e.kube.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: data}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	create("cfg-1", map[string][]byte{"other": []byte("x")})
	partsAre(t, s, []string{"cfg-1"}, "secret "+ns+`/cfg-1 has no key "config" (it has other): waiting for it`)
	_, err = e.kube.CoreV1().Secrets(ns).Update(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cfg-1", Namespace: ns},
		Data: map[string][]byte{"config": []byte("one")}}, metav1.UpdateOptions{})
	require.NoError(t, err)
	partsAre(t, s, []string{"cfg-1"}, "cfg-1=one;")

	create("cfg-2", map[string][]byte{"config": []byte("two")})
	partsAre(t, s, []string{"cfg-1", "cfg-2"}, "cfg-1=one;cfg-2=two;")
	require.Equal(t, 1.0, metricValue(t, reg, "reloader_api_watch_connected", "secrets"))

	// cfg-1 no longer named: forgotten, and read again from the start
	// when it is named again.
	partsAre(t, s, []string{"cfg-2"}, "cfg-2=two;")
	_, err = s.Parts([]string{"cfg-1", "cfg-2"})
	require.ErrorIs(t, err, reloader.ErrNotRead)
	partsAre(t, s, []string{"cfg-1", "cfg-2"}, "cfg-1=one;cfg-2=two;")
	require.NoError(t, s.Err())

	// A part the Role does not name is an error of the source, and a
	// part not read.
	partsAre(t, s, []string{"cfg-9"}, "secret "+ns+"/cfg-9: "+reloader.ErrNotRead.Error())
	deadline := time.Now().Add(20 * time.Second)
	for s.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	require.ErrorContains(t, s.Err(), "API server refuses secret cfg-9 since")
	require.Equal(t, 1.0, metricValue(t, reg, "reloader_api_config_secrets_unavailable", ""))
	// The part's error says why it is not read.
	_, err = s.Parts([]string{"cfg-9"})
	require.ErrorIs(t, err, reloader.ErrNotRead)
	require.ErrorContains(t, err, "secret "+ns+"/cfg-9: not read yet from the API server: list secret "+ns+`/cfg-9: API server answered 403: secrets "cfg-9" is forbidden`)
	partsAre(t, s, nil, "")
	deadline = time.Now().Add(20 * time.Second)
	for s.Err() != nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, s.Err(), "a part no longer read is no error")
}
