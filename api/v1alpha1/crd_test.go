package v1alpha1_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

const (
	// repoRoot is the repository root, relative to this package.
	repoRoot = "../.."
	// crdDir holds the generated CRDs, relative to repoRoot.
	crdDir = "deploy/crds"
	// deepcopyFile is the generated deepcopy code of this package.
	deepcopyFile = "zz_generated.deepcopy.go"
	// upstreamTypes are the packages the monitoring.coreos.com CRDs come
	// from: v1 and, for ScrapeConfig, v1alpha1.
	upstreamTypes      = "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	upstreamAlphaTypes = "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
)

// upstreamCRDs are the monitoring.coreos.com kinds the controller reads; the
// other kinds of upstreamTypes are not deployed.
func upstreamCRDs() []string {
	return []string{
		"monitoring.coreos.com_alertmanagerconfigs.yaml",
		"monitoring.coreos.com_alertmanagers.yaml",
		"monitoring.coreos.com_podmonitors.yaml",
		"monitoring.coreos.com_probes.yaml",
		"monitoring.coreos.com_prometheuses.yaml",
		"monitoring.coreos.com_prometheusagents.yaml",
		"monitoring.coreos.com_prometheusrules.yaml",
		"monitoring.coreos.com_scrapeconfigs.yaml",
		"monitoring.coreos.com_servicemonitors.yaml",
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestGeneratedFilesAreCurrent runs controller-gen as "make generate" does,
// into a temporary directory, and compares the result with the committed
// files.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	controllerGen, err := toolbin.Path("controller-gen")
	require.NoError(t, err)

	out := t.TempDir()
	ours := filepath.Join(out, "ours")
	upstream := filepath.Join(out, "upstream")
	runControllerGen(t, controllerGen, "object", "crd", "paths=.",
		"output:object:dir="+ours, "output:crd:dir="+ours)
	runControllerGen(t, controllerGen, "crd", "paths="+upstreamTypes, "paths="+upstreamAlphaTypes, "output:crd:dir="+upstream)

	// want maps each committed file, relative to the repository root, to
	// the file generated from it.
	want := map[string]string{"api/v1alpha1/" + deepcopyFile: filepath.Join(ours, deepcopyFile)}
	generated, err := filepath.Glob(filepath.Join(ours, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, generated, "controller-gen wrote no CRD for this package")
	for _, g := range generated {
		want[path.Join(crdDir, filepath.Base(g))] = g
	}
	for _, name := range upstreamCRDs() {
		want[path.Join(crdDir, name)] = filepath.Join(upstream, name)
	}

	committed, err := filepath.Glob(filepath.Join(repoRoot, crdDir, "*.yaml"))
	require.NoError(t, err)
	for _, c := range committed {
		name := path.Join(crdDir, filepath.Base(c))
		_, ok := want[name]
		require.True(t, ok, "%s is not generated any more: run make generate", name)
	}
	for name, g := range want {
		t.Run(name, func(t *testing.T) {
			gotData, err := os.ReadFile(filepath.Join(repoRoot, name))
			require.NoError(t, err, "run make generate")
			wantData, err := os.ReadFile(g)
			require.NoError(t, err)
			if diff := firstDifference(wantData, gotData); diff != "" {
				require.Fail(t, name+" is stale: run make generate", diff)
			}
		})
	}
}

// runControllerGen runs controller-gen in this package's directory.
func runControllerGen(t *testing.T, bin string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), "controller-gen %s: %s", strings.Join(args, " "), stderr.String())
}

// firstDifference describes the first line that differs between want and
// got, or returns "" when they are equal.
func firstDifference(want, got []byte) string {
	if bytes.Equal(want, got) {
		return ""
	}
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := range min(len(w), len(g)) {
		if w[i] != g[i] {
			return fmt.Sprintf("line %d: generated %q, committed %q", i+1, w[i], g[i])
		}
	}
	return fmt.Sprintf("generated %d lines, committed %d", len(w), len(g))
}

func TestCRDs(t *testing.T) {
	for _, tc := range []struct {
		file       string
		group      string
		kind       string
		plural     string
		shortNames []string
		version    string
		// fields are the Go types whose JSON fields must appear at the
		// schema paths that key them.
		fields map[string]reflect.Type
	}{
		{
			file:       "podreload.dev_prometheusservers.yaml",
			group:      v1alpha1.Group,
			kind:       v1alpha1.Kind,
			plural:     "prometheusservers",
			shortNames: []string{"promsrv"},
			version:    v1alpha1.Version,
			fields: map[string]reflect.Type{
				"spec":   reflect.TypeFor[v1alpha1.PrometheusServerSpec](),
				"status": reflect.TypeFor[v1alpha1.PrometheusServerStatus](),
			},
		},
		{
			file:       "monitoring.coreos.com_servicemonitors.yaml",
			group:      "monitoring.coreos.com",
			kind:       "ServiceMonitor",
			plural:     "servicemonitors",
			shortNames: []string{"smon"},
			version:    "v1",
		},
		{
			file:       "monitoring.coreos.com_podmonitors.yaml",
			group:      "monitoring.coreos.com",
			kind:       "PodMonitor",
			plural:     "podmonitors",
			shortNames: []string{"pmon"},
			version:    "v1",
		},
		{
			file:       "monitoring.coreos.com_probes.yaml",
			group:      "monitoring.coreos.com",
			kind:       "Probe",
			plural:     "probes",
			shortNames: []string{"prb"},
			version:    "v1",
		},
		{
			file:       "monitoring.coreos.com_scrapeconfigs.yaml",
			group:      "monitoring.coreos.com",
			kind:       "ScrapeConfig",
			plural:     "scrapeconfigs",
			shortNames: []string{"scfg"},
			version:    "v1alpha1",
		},
		{
			file:       "monitoring.coreos.com_prometheuses.yaml",
			group:      "monitoring.coreos.com",
			kind:       "Prometheus",
			plural:     "prometheuses",
			shortNames: []string{"prom"},
			version:    "v1",
		},
		{
			file:       "monitoring.coreos.com_alertmanagers.yaml",
			group:      "monitoring.coreos.com",
			kind:       "Alertmanager",
			plural:     "alertmanagers",
			shortNames: []string{"am"},
			version:    "v1",
		},
		{
			file:       "monitoring.coreos.com_alertmanagerconfigs.yaml",
			group:      "monitoring.coreos.com",
			kind:       "AlertmanagerConfig",
			plural:     "alertmanagerconfigs",
			shortNames: []string{"amcfg"},
			version:    "v1alpha1",
		},
		{
			file:       "monitoring.coreos.com_prometheusrules.yaml",
			group:      "monitoring.coreos.com",
			kind:       "PrometheusRule",
			plural:     "prometheusrules",
			shortNames: []string{"promrule"},
			version:    "v1",
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(repoRoot, crdDir, tc.file))
			require.NoError(t, err, "run make generate")
			var crd apiextensionsv1.CustomResourceDefinition
			require.NoError(t, yaml.UnmarshalStrict(data, &crd))

			require.Equal(t, "CustomResourceDefinition", crd.Kind)
			require.Equal(t, tc.plural+"."+tc.group, crd.Name)
			require.Equal(t, tc.group, crd.Spec.Group)
			require.Equal(t, tc.kind, crd.Spec.Names.Kind)
			require.Equal(t, tc.kind+"List", crd.Spec.Names.ListKind)
			require.Equal(t, tc.plural, crd.Spec.Names.Plural)
			require.Equal(t, tc.shortNames, crd.Spec.Names.ShortNames)
			require.Equal(t, apiextensionsv1.NamespaceScoped, crd.Spec.Scope)

			i := slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
				return v.Name == tc.version
			})
			require.NotEqual(t, -1, i, "no version %s", tc.version)
			v := crd.Spec.Versions[i]
			require.True(t, v.Served)
			require.True(t, v.Storage)
			require.NotNil(t, v.Subresources, "no status subresource")
			require.NotNil(t, v.Subresources.Status, "no status subresource")
			require.NotNil(t, v.Schema)
			require.NotNil(t, v.Schema.OpenAPIV3Schema)

			for path, typ := range tc.fields {
				props := v.Schema.OpenAPIV3Schema.Properties[path].Properties
				names := jsonFields(typ)
				require.NotEmpty(t, names)
				for _, name := range names {
					_, ok := props[name]
					require.True(t, ok, "%s.%s is missing from the schema", path, name)
				}
			}
		})
	}
}

// jsonFields returns the JSON names of the fields of the struct type typ.
func jsonFields(typ reflect.Type) []string {
	var names []string
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}
