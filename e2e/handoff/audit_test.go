package handoff

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/podreload/podreload/controller"
	"github.com/podreload/podreload/internal/testenv/audit"
	"github.com/podreload/podreload/internal/testenv/operator"
)

// auditEvent is an event of the API server's audit log.
type auditEvent struct{ audit.Event }

// succeeded reports whether the API server did what the request asked.
func (ev *auditEvent) succeeded() bool { return ev.Succeeded() }

// writer names who made the request: prometheus-operator (its field
// manager), the controller (controller.Name, by its user agent, or its
// ServiceAccount's user name when it runs with one), the test.
func (ev *auditEvent) writer() string {
	switch {
	case ev.User.Username == "system:serviceaccount:"+operator.Namespace+":"+operator.ServiceAccount:
		return operator.FieldManager
	case strings.HasPrefix(ev.User.Username, "system:serviceaccount:"):
		return ev.User.Username
	case strings.HasPrefix(ev.UserAgent, controller.Name+"/"):
		return controller.Name
	case ev.UserAgent == testAgent:
		return "test"
	}
	return ev.User.Username + " " + ev.UserAgent
}

// audit returns the events of the audit log of the writes in ns.
func (e *env) audit(t testing.TB, ns string) []auditEvent {
	t.Helper()
	var out []auditEvent
	for _, ev := range audit.Read(t, e.auditLog, ns) {
		out = append(out, auditEvent{ev})
	}
	return out
}

// stsWrite is a write that changed a StatefulSet: who made it, the
// resourceVersion and the StatefulSet it left.
type stsWrite struct {
	who string
	rv  int64
	sts *appsv1.StatefulSet
	ev  auditEvent
}

// stsWrites returns the writes that changed the StatefulSet name of ns,
// in the order of their resourceVersions (a write that changed nothing
// leaves the resourceVersion as it was: it is left out).
func (e *env) stsWrites(t testing.TB, ns, name string) []stsWrite {
	t.Helper()
	var out []stsWrite
	for _, ev := range e.audit(t, ns) {
		if ev.ObjectRef.Resource != "statefulsets" || ev.ObjectRef.Name != name || ev.ObjectRef.Subresource != "" ||
			!ev.succeeded() || ev.Verb == "delete" || len(ev.ResponseObject) == 0 {
			continue
		}
		var sts appsv1.StatefulSet
		require.NoError(t, json.Unmarshal(ev.ResponseObject, &sts))
		if sts.Kind != "StatefulSet" {
			continue
		}
		rv, err := strconv.ParseInt(sts.ResourceVersion, 10, 64)
		require.NoError(t, err)
		out = append(out, stsWrite{who: ev.writer(), rv: rv, sts: &sts, ev: ev})
	}
	slices.SortStableFunc(out, func(a, b stsWrite) int { return int(a.rv - b.rv) })
	return slices.CompactFunc(out, func(a, b stsWrite) bool { return a.rv == b.rv })
}
