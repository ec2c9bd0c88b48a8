// Package alertmanager reconciles prometheus-operator's Alertmanager
// objects handed to the controller (operator.prometheus.io/controller-id,
// package takeover) in prometheus-operator's layout at v0.94.1 (its
// StatefulSet at v0.94.1 is v0.93.1's, which the tests run, but for the
// default version, zero durations and clusterPeerName): the
// StatefulSet alertmanager-<name> with its selector and claim template,
// the shared governing Service alertmanager-operated, the generated
// configuration Secret alertmanager-<name>-generated, the web config
// Secret, so that the pods roll once onto the same PVCs, with podreload's
// config-reloader beside Alertmanager (the API source; the volume source
// with automountServiceAccountToken false), and back.
//
// Where things are:
//   - render.go: pure, the Alertmanager and its inputs in, the objects out;
//   - pod.go: the pod template, Alertmanager's container and the reloaders;
//   - flags.go: Alertmanager's flags, each gated on the version as
//     prometheus-operator gates it, and the versions it renders;
//   - web.go: spec.web's configuration file and what it puts in the pods;
//   - clustertls.go: spec.clusterTLS's file, its Secret, and what it puts
//     in the pods;
//   - fields.go: every field of the spec, mapped, ignored or refused;
//   - inputs.go: the configuration's inputs (the configSecret or the
//     AlertmanagerConfig spec.alertmanagerConfiguration names, the
//     AlertmanagerConfigs selected, the Secrets they reference), built
//     with package amconfig;
//   - lifecycle.go: the kind as a variant of the takeover's lifecycle
//     (package takeover: gone, handed back, refused, paused, synced);
//   - reconcile.go: the reconciler, its sync and the order of the writes;
//   - status.go: the status as prometheus-operator writes it, and
//     ConfigApplied;
//   - bindings.go: the binding of each Alertmanager in the status of the
//     AlertmanagerConfigs it selects (Accepted, or left out and why);
//   - watches.go: what is watched, and which Alertmanager each event is for;
//   - check.go: what `controller takeover-check` says of an Alertmanager.
package alertmanager

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
)

// App is the value of kube.LabelName on the objects of the kind: the
// value prometheus-operator gives it on an Alertmanager's StatefulSet and
// pods (pkg/alertmanager/operator.go applicationNameLabelValue), so that
// the manager caches them.
const App = "alertmanager"

// AddToScheme adds the types the kind reconciles and watches.
func AddToScheme(s *runtime.Scheme) error {
	if err := monitoringv1.AddToScheme(s); err != nil {
		return err
	}
	return monitoringv1alpha1.AddToScheme(s)
}
