package contract_test

import (
	"fmt"

	"github.com/podreload/podreload/contract"
)

func ExampleSum() {
	sum := contract.Sum([]byte("global: {}\n"), map[string]string{"main-rulefiles-0/default-r.yaml": "groups: []\n"})
	fmt.Println(sum[:12])
	// Output: fc09cba36e2c
}
