// Package handoff runs the hand-off between prometheus-operator's operator
// (bin/prometheus-operator) and podreload's controller (bin/controller,
// as a process of its own, so that it can be killed) through faults,
// against one real kube-apiserver and etcd (issue 41, items 3 and 4): a
// controller killed in the middle of a takeover and of a hand-back, the
// operator killed in the middle of a hand-back, the annotation flipped
// back and forth, the controller down while objects are annotated and
// their monitors change, an object deleted during its takeover, and the
// leader of two replicas cut off from the API server. No kubelet: the
// rolls are the writes of StatefulSets, Secrets and ConfigMaps; the
// end states are what the API server shows (docs/takeover.md, "Faults
// during a hand-off").
//
// Run it with `go test -race -run TestHandoff ./e2e/handoff/`, after
// `go build -o bin/controller ./cmd/controller` (`make build`);
// BenchmarkHandoff (`make bench`) times each fault to its end state into
// docs/benchmarks.md.
package handoff
