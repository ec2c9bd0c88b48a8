package promserver

import (
	"strconv"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/controller/configsecret"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/sidecar"
)

// AccessName is the name of the Role, and of its RoleBinding, that let the
// reloaders of server report what Prometheus runs in their pods and, with
// the API source, read its config Secret and rule ConfigMaps.
func AccessName(server Target) string {
	if server.Layout.Operator() {
		// Nothing prometheus-operator writes has this name.
		return operatorName(server) + "-podreload"
	}
	return server.Name + "-config-reloader"
}

// RenderAccess renders what the reloaders of server need (sidecar.Role,
// which says why each grant is by name): a Role, in the server's
// namespace, and its RoleBinding to the pods' service account. It grants
// patch on the StatefulSets' pods, <name>-0 to <name>-(replicas-1) for
// every shard (on every pod in DaemonSet mode), the state Secrets of those
// pods without a claim (statesecrets.go) and, with the API source, the
// config Secret and configsecret.PartSlots of its part Secrets (so that
// the Role changes less often than the count of parts) and the
// namespace's ConfigMaps. Owner references are not set.
func RenderAccess(server Target, parts int) (*rbacv1.Role, *rbacv1.RoleBinding) {
	l := SelectorLabels(server)
	if server.Layout.Operator() {
		// Ours, not prometheus-operator's: no managed-by label.
		l = map[string]string{kube.LabelName: App, LabelInstance: server.Name}
	}
	a := sidecar.Access{
		Name: AccessName(server), Namespace: server.Namespace, Labels: l,
		ServiceAccount: server.Spec.ServiceAccountName,
		Pods:           podNames(server),
		EveryPod:       server.Layout.DaemonSet(), // Its pods' names are their own.

		StateSecrets: sidecar.StateSecretNames(statePods(server)),
	}
	if APISource(server) {
		a.Secrets = append([]string{ConfigSecretOf(server)}, configsecret.PartNames(ConfigSecretOf(server), configsecret.PartSlots(parts, RuleVolumeStep))...)
		a.ConfigMaps = true
	}
	return sidecar.Role(a)
}

// podNames are the names of the pods of server's StatefulSets, every
// shard's.
func podNames(server Target) []string {
	replicas := int(ptr.Deref(server.Spec.Replicas, 1))
	names := make([]string, 0, replicas*ShardCount(server))
	for shard := range ShardCount(server) {
		for i := range replicas {
			names = append(names, ShardName(server, shard)+"-"+strconv.Itoa(i))
		}
	}
	return names
}
