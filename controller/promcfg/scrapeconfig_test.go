package promcfg

import (
	"reflect"
	"strings"
	"testing"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/stretchr/testify/require"
)

// TestUnsupportedSD sets each service discovery field of a ScrapeConfig
// in turn: those supportedSD names are rendered, every other one (consul,
// EC2, Azure... and any a newer prometheus-operator adds) is refused with
// its field named.
func TestUnsupportedSD(t *testing.T) {
	typ := reflect.TypeFor[monitoringv1alpha1.ScrapeConfigSpec]()
	supported, unsupported := 0, 0
	for _, f := range reflect.VisibleFields(typ) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Type.Kind() != reflect.Slice || !strings.HasSuffix(name, "Configs") || name == "relabelings" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			var spec monitoringv1alpha1.ScrapeConfigSpec
			v := reflect.ValueOf(&spec).Elem().FieldByIndex(f.Index)
			v.Set(reflect.MakeSlice(f.Type, 1, 1))
			err := unsupportedSD(&spec)
			if supportedSD()[name] {
				supported++
				require.NoError(t, err)
				return
			}
			unsupported++
			require.EqualError(t, err, "unsupported service discovery "+name+
				": only staticConfigs, fileSDConfigs, httpSDConfigs, kubernetesSDConfigs and dnsSDConfigs are rendered")
		})
	}
	require.Equal(t, len(supportedSD()), supported, "a supported discovery is not a field of ScrapeConfigSpec")
	require.GreaterOrEqual(t, unsupported, 18, "consul, EC2, Azure, GCE, OpenStack...")
}
