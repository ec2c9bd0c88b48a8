package controlplane

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NewerCRD makes the CRD crd (its name, "prometheuses.monitoring.coreos.com")
// a newer release's: its spec gets the boolean field name, which the Go
// types do not know, and which the API server then keeps. It returns once
// an object of kind (apiVersion), probed in namespace ns, keeps it.
func NewerCRD(t testing.TB, c client.Client, crd, apiVersion, kind, ns, name string) {
	t.Helper()
	Edit(t, c, newCRD(crd), func(u *unstructured.Unstructured) {
		versions, _, err := unstructured.NestedSlice(u.Object, "spec", "versions")
		require.NoError(t, err)
		for _, v := range versions {
			props, _, err := unstructured.NestedMap(v.(map[string]any), "schema", "openAPIV3Schema", "properties", "spec", "properties")
			require.NoError(t, err)
			props[name] = map[string]any{"type": "boolean"}
			require.NoError(t, unstructured.SetNestedMap(v.(map[string]any), props, "schema", "openAPIV3Schema", "properties", "spec", "properties"))
		}
		require.NoError(t, unstructured.SetNestedSlice(u.Object, versions, "spec", "versions"))
	})
	// The API server prunes with the schema it had until it serves the
	// new one: a probe object tells when it does.
	probe := &unstructured.Unstructured{}
	probe.SetAPIVersion(apiVersion)
	probe.SetKind(kind)
	probe.SetNamespace(ns)
	probe.SetName("newer-crd-probe")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		p := probe.DeepCopy()
		p.Object["spec"] = map[string]any{name: true}
		if !assert.NoError(ct, c.Create(t.Context(), p, client.DryRunAll)) {
			return
		}
		kept, _, _ := unstructured.NestedBool(p.Object, "spec", name)
		assert.True(ct, kept, "spec.%s kept", name)
	}, time.Minute, 50*time.Millisecond)
}

// newCRD is an empty CustomResourceDefinition named name.
func newCRD(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	u.SetName(name)
	return u
}
