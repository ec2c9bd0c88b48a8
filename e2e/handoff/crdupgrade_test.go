package handoff

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/deploy/crds"
	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// TestCRDUpgrade installs the previous release's CRDs (bin/previous/crds,
// from the git history), creates every custom resource of that release's
// example and configuration test cases (bin/previous/objects) on them,
// applies the current release's CRDs over them with server-side apply (as
// docs/install.md says to upgrade them), and reads each object back:
// its spec, labels and annotations are the same, no field lost to the new
// schemas' pruning.
func TestCRDUpgrade(t *testing.T) {
	previousCRDs, err := toolbin.Path("previous/crds")
	require.NoError(t, err, "`make bin/previous/controller` extracts them")
	previousObjects, err := toolbin.Path("previous/objects")
	require.NoError(t, err, "`make bin/previous/controller` extracts them")
	cp := controlplane.Start(t, previousCRDs)
	c := newClient(t, cp.Config)

	files, err := filepath.Glob(filepath.Join(previousObjects, "*.yaml"))
	require.NoError(t, err)
	var objs []*unstructured.Unstructured
	namespaces := map[string]bool{}
	for i, f := range files {
		for _, u := range customResources(t, f) {
			// Each file in namespaces of its own: the cases reuse names.
			ns := fmt.Sprintf("f%d-%s", i, u.GetNamespace())
			if !namespaces[ns] {
				require.NoError(t, c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
				namespaces[ns] = true
			}
			u.SetNamespace(ns)
			if err := c.Create(t.Context(), u); err != nil {
				require.True(t, apierrors.IsInvalid(err), "create %s %s/%s: %v", u.GetKind(), ns, u.GetName(), err)
				t.Logf("%s: the previous CRDs refuse %s %s: %v", filepath.Base(f), u.GetKind(), u.GetName(), err)
				continue
			}
			objs = append(objs, u)
		}
	}
	require.Greater(t, len(objs), 50, "custom resources created on the previous CRDs")
	before := readBack(t, c, objs)

	entries, err := fs.Glob(crds.FS, "*.yaml")
	require.NoError(t, err)
	for _, name := range entries {
		data, err := crds.FS.ReadFile(name)
		require.NoError(t, err)
		crd := &unstructured.Unstructured{}
		require.NoError(t, utilyaml.Unmarshal(data, &crd.Object))
		require.NoError(t, c.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(crd), client.FieldOwner("crd-upgrade-test"), client.ForceOwnership), "apply %s", name)
	}
	var after map[string]map[string]any
	eventually(t, "every object read on the current CRDs", func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		after = readBack(t, c, objs)
		return nil
	})
	require.Equal(t, len(before), len(after))
	for key, want := range before {
		require.Equal(t, want, after[key], "%s: fields lost or changed by the current CRDs", key)
	}
}

// customResources returns the custom resources (monitoring.coreos.com's
// and podreload.dev's) of the YAML documents of path.
func customResources(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var out []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err, path)
		u := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(doc, &u.Object); err != nil || u.Object == nil {
			continue
		}
		if g := u.GroupVersionKind().Group; g == "monitoring.coreos.com" || g == "podreload.dev" {
			out = append(out, u)
		}
	}
}

// readBack reads each of objs and returns what an upgrade must keep of
// it (spec, labels, annotations), by kind, namespace and name; it panics
// on a read that fails, for eventually's retries.
func readBack(t *testing.T, c client.Client, objs []*unstructured.Unstructured) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, o := range objs {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(o.GroupVersionKind())
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(o), u); err != nil {
			panic(fmt.Sprintf("get %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err))
		}
		out[strings.Join([]string{o.GetKind(), o.GetNamespace(), o.GetName()}, "/")] = map[string]any{
			"spec": u.Object["spec"], "labels": u.GetLabels(), "annotations": u.GetAnnotations(),
		}
	}
	return out
}
