package controlplane

import "go.uber.org/goleak"

// InformerLeaks are the goroutines controller-runtime's informers leave
// behind when a manager stops, for goleak.VerifyTestMain in the packages
// that run a controller in the test process:
//   - the metadata informers (Secrets' metadata are watched) wrap their
//     watches with apimachinery's watch.Filter, whose goroutine can stay
//     blocked sending an event nobody reads once the informer stopped;
//   - a cache over several namespaces waits, in a goroutine of its own, for
//     every namespace's event handler to sync, and a manager stopped before
//     that happens never wakes it (controller-runtime v0.25
//     newMultiNamespaceInformerHandlerRegistration).
func InformerLeaks() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop"),
		goleak.IgnoreTopFunction("sigs.k8s.io/controller-runtime/pkg/cache.newMultiNamespaceInformerHandlerRegistration.func1"),
		goleak.IgnoreTopFunction("sigs.k8s.io/controller-runtime/pkg/cache.newMultiNamespaceInformer.func1"),
	}
}
