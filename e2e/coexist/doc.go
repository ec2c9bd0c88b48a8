// Package coexist runs prometheus-operator's operator
// (bin/prometheus-operator) and podreload's controller side by side against
// one real kube-apiserver and etcd, for minutes of edits, and checks by
// field manager and the API server's audit log that neither writes the
// other's objects (issue 26). No kubelet: both only talk to the API
// server. A package of its own, so that `make test` runs it in parallel
// with the others.
//
// Run it with `go test -race -run TestCoexist ./e2e/coexist/`.
package coexist
