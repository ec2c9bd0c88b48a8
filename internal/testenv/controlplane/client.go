package controlplane

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NewClient returns a client of the API server cfg reaches that knows the
// built-in kinds and those addToScheme add.
func NewClient(t testing.TB, cfg *rest.Config, addToScheme ...func(*runtime.Scheme) error) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	for _, add := range addToScheme {
		require.NoError(t, add(scheme))
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return c
}

// Edit reads obj again, changes it with fn and writes it back, again when
// another writer (the controller under test) wrote it in between.
func Edit[T client.Object](t testing.TB, c client.Client, obj T, fn func(T)) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		fn(obj)
		return c.Update(t.Context(), obj)
	}))
}
