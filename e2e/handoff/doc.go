// Package handoff runs the hand-off between prometheus-operator's operator
// (bin/prometheus-operator) and podreload's controller (bin/controller,
// as a process of its own, so that it can be killed) through faults,
// against one real kube-apiserver and etcd (issue 41, items 3 and 4): a
// controller killed in the middle of a takeover and of a hand-back, the
// operator killed in the middle of a hand-back (of a Prometheus and of an
// Alertmanager, each), the annotation flipped
// back and forth, the controller down while objects are annotated and
// their monitors change, an object deleted during its takeover, and the
// leader of two replicas cut off from the API server. No kubelet: the
// rolls are the writes of StatefulSets, Secrets and ConfigMaps; the
// end states are what the API server shows (docs/takeover.md, "Faults
// during a hand-off").
//
// And the upgrade (issue 41, item 2): the previous release's controller
// (bin/previous/, built from the git history at the commit CHANGELOG.md
// names) replaced by the current one, which must write nothing but
// statuses (TestHandoff's "upgraded from the previous release"), and the
// current CRDs applied over the previous release's, which must lose no
// field of the objects of its example and test cases (TestCRDUpgrade).
//
// Run it with `go test -race ./e2e/handoff/`, after `make build
// bin/previous/controller`;
// BenchmarkHandoff (`make bench`) times each fault to its end state into
// docs/benchmarks.md.
package handoff
