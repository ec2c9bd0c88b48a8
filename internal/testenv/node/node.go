// Package node starts, for tests, a real single-machine Kubernetes node.
package node
