package promserver

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

	"github.com/podreload/podreload/api/v1alpha1"
)

// A PrometheusServer is rendered in one of two layouts: podreload's own,
// or, for a prometheus-operator Prometheus object taken over
// (docs/takeover.md), prometheus-operator's names, labels, selectors,
// claim templates and plain rule files, so that its pods, PVCs and data
// carry over in both directions. The layout is decided once, where the
// server comes from: the reconciler of PrometheusServers renders each in
// podreload's layout, the takeover converts a Prometheus object into an
// in-memory PrometheusServer (fromPrometheus), never written, in
// prometheus-operator's. The render and the writes get it with the
// server (target), like prometheus-operator's resource namer, a value
// passed down; nothing reads it back from the object.

// layout is the layout a server's objects are rendered in.
type layout uint8

const (
	// PodreloadLayout is podreload's own layout, the zero value.
	PodreloadLayout layout = iota
	// OperatorsLayout is prometheus-operator's layout.
	OperatorsLayout
	// OperatorsAgentLayout is prometheus-operator's layout of a
	// PrometheusAgent (layout_agent.go): its names and labels, the agent's
	// flags, no rules.
	OperatorsAgentLayout
	// OperatorsAgentDaemonSetLayout is prometheus-operator's layout of a
	// PrometheusAgent in DaemonSet mode (layout_daemonset.go): an agent's,
	// its pods those of one DaemonSet, an agent per node.
	OperatorsAgentDaemonSetLayout
)

// Operator reports whether l is one of prometheus-operator's layouts.
func (l layout) Operator() bool { return l != PodreloadLayout }

// Agent reports whether l is prometheus-operator's layout of an agent,
// in either mode.
func (l layout) Agent() bool { return l == OperatorsAgentLayout || l == OperatorsAgentDaemonSetLayout }

// DaemonSet reports whether l is prometheus-operator's layout of an agent
// in DaemonSet mode.
func (l layout) DaemonSet() bool { return l == OperatorsAgentDaemonSetLayout }

// Target is a PrometheusServer with the layout its objects are rendered
// in. The embedded server is read as is: a target is never written, nor
// handed to the API as an object (its PrometheusServer is).
type Target struct {
	*v1alpha1.PrometheusServer
	Layout layout
	// UserConfig tells that the configuration Secret is the user's
	// (UserConfigured), decided where the server comes from.
	UserConfig bool
	// ShardRetention is what becomes of the StatefulSets of the shards
	// scaled away (takeover.RetainShards): a Prometheus object's
	// spec.shardRetentionPolicy; nil deletes them.
	ShardRetention *monitoringv1.ShardRetentionPolicy
}

// OwnTarget is server, a PrometheusServer object, in podreload's layout.
func OwnTarget(server *v1alpha1.PrometheusServer) Target {
	return Target{PrometheusServer: server}
}

// AnnotationLayout is the annotation that once told the layout, on the
// in-memory PrometheusServer; nothing reads it now, nor was it ever
// written to the API. The StatefulSets of prometheus-operator's layout,
// which carry the Prometheus object's annotations, still leave it out,
// as they always did (operatorStatefulSet), and the fixtures of
// testdata/layout still mark with it a server that stands for a
// Prometheus object converted (loadInputs).
const AnnotationLayout = "podreload.dev/layout"
