// Package takeover is what every kind taken over from prometheus-operator
// (Prometheus, Alertmanager) shares: one lifecycle of an object taken
// over, which each kind configures as a Variant (what it refuses, how it
// syncs, its status, its pods), the hand-off by prometheus-operator's
// controller id, the hand-back, and the table of the upstream spec's
// fields, each mapped, ignored or refused. It knows no kind: a kind gives
// its object, its field table, its spec.
//
// Where things are:
//
//	lifecycle.go  Lifecycle and Variant: gone, deleted, handed back, refused,
//	              paused, synced, then the status; the status-only path
//	takeover.go   the controller id (HandedTo), the refusal's message, the
//	              status applied by the controller's field manager
//	              (ApplyStatus), the status-cleanup finalizer (DropFinalizer)
//	handback.go   the reloaders' Role and RoleBinding released (ReleaseAccess)
//	setup.go      whether the kind's CRD is served, the events acted on
//	status.go     prometheus-operator's conditions: find, set, pick
//	check.go      Options, and what `controller takeover-check` tells (Checker)
//	fields.go     the field tables of the upstream specs and their checks
//	image.go      the image prometheus-operator composes, its version gates,
//	              the default version never older than the one running
//	pod.go        the pod settings every kind renders alike
//	statefulset.go the live StatefulSet's immutable fields kept (KeepImmutable),
//	              the user's governing Service checked (CheckGoverningService)
//	containers.go a spec's containers merged into the rendered ones, as
//	              prometheus-operator merges them (MergeContainers)
//	decode.go     an object decoded as the API server decodes it: duplicate
//	              keys, case, the fields its Go type does not know (Decode)
//	unknown.go    those fields, read as the object is stored (Stored, once per
//	              generation), refused by path
//	retain.go     the StatefulSets of shards scaled away, retained until their
//	              deadline (a Prometheus's shardRetentionPolicy)
package takeover
