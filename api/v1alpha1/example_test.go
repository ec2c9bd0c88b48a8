package v1alpha1_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podreload/podreload/api/v1alpha1"
)

func ExampleAddToScheme() {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		fmt.Println(err)
		return
	}

	kinds, _, err := s.ObjectKinds(&v1alpha1.PrometheusServer{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(kinds)

	obj, err := s.New(v1alpha1.GroupVersion().WithKind(v1alpha1.Kind + "List"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%T\n", obj)
	// Output:
	// [podreload.dev/v1alpha1, Kind=PrometheusServer]
	// *v1alpha1.PrometheusServerList
}
