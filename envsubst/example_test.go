package envsubst_test

import (
	"fmt"

	"github.com/podreload/podreload/envsubst"
)

func Example() {
	env := map[string]string{"POD_NAME": "prometheus-k8s-1"}
	lookup := func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	}
	config := []byte(`global:
  external_labels:
    replica: $(POD_NAME)
    shard: $(STATEFULSET_ORDINAL_NUMBER)
    cluster: $(CLUSTER)
scrape_configs:
- job_name: node
  relabel_configs:
  - replacement: ${1}
`)

	tolerant := envsubst.New(envsubst.Options{OrdinalFromEnv: "POD_NAME", Lookup: lookup})
	out, undefined, err := tolerant.Expand(config)
	fmt.Printf("tolerant: undefined=%d err=%v\n%s", undefined, err, out)

	strict := envsubst.New(envsubst.Options{Strict: true, OrdinalFromEnv: "POD_NAME", Lookup: lookup})
	out, undefined, err = strict.Expand(config)
	fmt.Printf("strict: undefined=%d out=%q err=%v\n", undefined, out, err)
	// Output:
	// tolerant: undefined=1 err=<nil>
	// global:
	//   external_labels:
	//     replica: prometheus-k8s-1
	//     shard: 1
	//     cluster: $(CLUSTER)
	// scrape_configs:
	// - job_name: node
	//   relabel_configs:
	//   - replacement: ${1}
	// strict: undefined=1 out="" err=line 5: environment variable "CLUSTER" is not set
}
