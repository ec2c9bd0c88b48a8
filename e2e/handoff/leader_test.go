package handoff

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/controller"
	"github.com/podreload/podreload/internal/testenv/operator"
)

const (
	// The leader election of the replicas: short, so that the test takes
	// seconds; renew deadline plus retry period below the lease duration,
	// with 2 s to spare on a loaded machine. A leader that also waited
	// for the release of its Lease (half the renew deadline, the timeout
	// of a request of the leader election) would stop after the other
	// took it.
	leaseDuration = 10 * time.Second
	renewDeadline = 7 * time.Second
	retryPeriod   = time.Second
)

// testLeaderPartitioned runs two replicas of the controller with leader
// election, each with a ServiceAccount of its own (the audit log tells
// their writes apart); the leader reaches the API server through a proxy,
// which then stops forwarding without closing anything, as a network
// partition would. The other replica takes the Lease once it has seen no
// renewal for the lease duration and renders the change made after the
// partition; the partitioned one stops leading (it exits) before that,
// and none of its writes reaches the API server after the partition.
func testLeaderPartitioned(t testing.TB, e *env, fig figure) {
	ns := e.namespace(t, "leader")
	createMonitors(t, e.c, ns)
	s := e.newPrometheus(t, ns, "k8s", "")
	operator.Start(t, e.cp.Kubeconfig, "", "--namespaces="+ns)
	s.waitOperatorWrote(t)
	s.annotate(t, controllerID)

	flags := []string{
		"--leader-election", "--leader-election-namespace=" + ns,
		"--leader-election-lease-duration=" + leaseDuration.String(),
		"--leader-election-renew-deadline=" + renewDeadline.String(),
		"--leader-election-retry-period=" + retryPeriod.String(),
	}
	px := e.newProxy(t)
	a := e.startController(t, e.kubeconfig(t, px.URL(), e.adminToken(t, ns, "replica-a")), ns, flags...)
	var lease coordinationv1.Lease
	eventually(t, "replica a leading", func() error {
		if err := e.c.Get(t.Context(), s.key(controller.Name), &lease); err != nil {
			return err
		}
		if ptr.Deref(lease.Spec.HolderIdentity, "") == "" {
			return errors.New("no holder")
		}
		return nil
	})
	first := *lease.Spec.HolderIdentity
	e.startController(t, e.kubeconfig(t, "", e.adminToken(t, ns, "replica-b")), ns, flags...)
	s.waitTakenOver(t, 0)
	userA, userB := "system:serviceaccount:"+ns+":replica-a", "system:serviceaccount:"+ns+":replica-b"
	before := writesBy(e.audit(t, ns), time.Time{})
	require.Positive(t, before[userA], "replica a, the leader, took the Prometheus over")
	require.Zero(t, before[userB], "replica b wrote while a led")

	px.blackhole()
	cut := time.Now()
	s.edit(t, 1)
	// The last renewal of replica a: its Lease expires a lease duration
	// after it.
	var renewed time.Time
	eventually(t, "replica b leading", func() error {
		if err := e.c.Get(t.Context(), s.key(controller.Name), &lease); err != nil {
			return err
		}
		if h := ptr.Deref(lease.Spec.HolderIdentity, ""); h == first {
			renewed = lease.Spec.RenewTime.Time
			return fmt.Errorf("the Lease still held by %s", h)
		}
		return nil
	})
	acquired := lease.Spec.AcquireTime.Time
	expired := renewed.Add(leaseDuration)
	eventually(t, "replica a stopped", func() error {
		if !a.exited() {
			return errors.New("replica a still runs")
		}
		return nil
	})
	t.Logf("partitioned at %s, %s after replica a's last renewal; replica a exited %s after the renewal (%v), replica b took the Lease %s after it",
		cut.Format(time.RFC3339Nano), cut.Sub(renewed), a.exitedAt.Sub(renewed), a.exit, acquired.Sub(renewed))
	require.True(t, a.exitedAt.Before(expired), "replica a exited at %s, after its Lease expired at %s", a.exitedAt, expired)
	require.True(t, a.exitedAt.Before(acquired), "replica a exited at %s, after replica b took the Lease at %s", a.exitedAt, acquired)
	require.Contains(t, a.logs.String(), "leader election lost", "replica a stopped for losing the Lease")
	s.waitTakenOver(t, 1)
	fig("the leader partitioned: its last renewal → it exits", a.exitedAt.Sub(renewed))
	fig("the leader partitioned: its last renewal → the other replica leads", acquired.Sub(renewed))
	fig("the leader partitioned: partition → a change made after it rendered by the other replica", time.Since(cut))
	after := writesBy(e.audit(t, ns), cut)
	require.Zero(t, after[userA], "replica a wrote after the partition")
	require.Positive(t, after[userB], "replica b rendered the change")
}

// writesBy counts the writes that succeeded after since, by user name,
// but those of the Lease and Events.
func writesBy(events []auditEvent, since time.Time) map[string]int {
	counts := map[string]int{}
	for _, ev := range events {
		if !ev.succeeded() || ev.StageTimestamp.Time.Before(since) || ev.ObjectRef.Resource == "leases" || strings.HasPrefix(ev.ObjectRef.Resource, "events") {
			continue
		}
		counts[ev.User.Username]++
	}
	return counts
}
