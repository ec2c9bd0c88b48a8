package handoff

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/podreload/podreload/controller"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/operator"
)

// controllerKilled is testControllerKilled of an object of kind k.
func controllerKilled(k *kind) func(testing.TB, *env, figure) {
	return func(t testing.TB, e *env, fig figure) { testControllerKilled(t, e, fig, k) }
}

// operatorKilled is testOperatorKilled of an object of kind k.
func operatorKilled(k *kind) func(testing.TB, *env, figure) {
	return func(t testing.TB, e *env, fig figure) { testOperatorKilled(t, e, fig, k) }
}

// testControllerKilled kills the controller (SIGKILL) in the middle of
// the takeover of an object of kind k (a Prometheus, an Alertmanager)
// prometheus-operator runs, then in the middle of its hand-back; a
// change is made while it is down each time.
// Its requests go through a proxy that slows them while a roll is to be
// cut: the kill follows its first write, and each time the test checks
// that the roll had not reached the StatefulSet (or, handing back, the
// Role) yet. After its restart the end state is reached, with the change
// made meanwhile.
func testControllerKilled(t testing.TB, e *env, fig figure, k *kind) {
	ns := e.namespace(t, "controller-killed-"+strings.ToLower(k.name))
	createInputs(t, e.c, ns, k)
	s := e.newScene(t, k, ns, "k8s", "")
	operator.Start(t, e.cp.Kubeconfig, "", "--namespaces="+ns)
	s.waitOperatorWrote(t)
	px := e.newProxy(t)
	kubeconfig := e.kubeconfig(t, px.URL(), "")
	ctl := e.startController(t, kubeconfig, ns)

	// Taking over.
	px.setDelay(slow)
	since := time.Now()
	s.annotate(t, controllerID)
	what := s.waitWrite(t, controller.Name, since)
	ctl.kill(t)
	sts := s.statefulSet(t)
	who, err := side(&sts.Spec.Template)
	require.NoError(t, err, "killed after its write of %s", what)
	require.Equal(t, operator.FieldManager, who, "killed after its write of %s: the roll had reached the StatefulSet (make slow longer)", what)
	t.Logf("killed taking over, after its write of %s", what)
	px.setDelay(0)
	s.edit(t, 1)
	restarted := time.Now()
	ctl = e.startController(t, kubeconfig, ns)
	s.waitTakenOver(t, 1)
	fig(k.name+", the controller killed taking over: its start → taken over, a change made meanwhile rendered", time.Since(restarted))

	// Handing back: the controller's writes are its status, then the
	// reloaders' RoleBinding and Role; killed after the first.
	px.setDelay(slow)
	s.annotate(t, "")
	eventually(t, "the controller's status removed", func() error {
		if conds, _ := s.conditions(t); takeover.FindCondition(conds, configApplied) != nil {
			return fmt.Errorf("%s still there", configApplied)
		}
		return nil
	})
	ctl.kill(t)
	err = e.c.Get(t.Context(), s.key(s.stsName()+"-podreload"), &rbacv1.Role{})
	require.NoError(t, err, "killed handing back after the Role's deletion (make slow longer)")
	px.setDelay(0)
	s.edit(t, 2)
	restarted = time.Now()
	e.startController(t, kubeconfig, ns)
	s.waitHandedBack(t, 2)
	fig(k.name+", the controller killed handing back: its start → handed back, the reloaders' Role gone", time.Since(restarted))
}

// testOperatorKilled kills prometheus-operator's operator (SIGKILL) in
// the middle of the hand-back of an object of kind k (a Prometheus, an
// Alertmanager) the controller took over from it: after its first write, its requests slowed by a proxy, before
// it reached the StatefulSet. A change is made while it is down; once it
// runs again, the object is its own, the change rendered, nothing of
// the controller's left.
func testOperatorKilled(t testing.TB, e *env, fig figure, k *kind) {
	ns := e.namespace(t, "operator-killed-"+strings.ToLower(k.name))
	createInputs(t, e.c, ns, k)
	s := e.newScene(t, k, ns, "k8s", "")
	px := e.newProxy(t)
	kubeconfig := e.kubeconfig(t, px.URL(), "")
	op := operator.Start(t, kubeconfig, "", "--namespaces="+ns)
	s.waitOperatorWrote(t)
	e.startController(t, e.cp.Kubeconfig, ns)
	s.annotate(t, controllerID)
	s.waitTakenOver(t, 0)

	px.setDelay(slow)
	since := time.Now()
	s.annotate(t, "")
	what := s.waitWrite(t, operator.FieldManager, since)
	require.NoError(t, syscall.Kill(op.PID, syscall.SIGKILL))
	op.Stop()
	who, err := side(&s.statefulSet(t).Spec.Template)
	require.NoError(t, err, "killed after its write of %s", what)
	require.Equal(t, controller.Name, who, "killed after its write of %s: the roll had reached the StatefulSet (make slow longer)", what)
	t.Logf("prometheus-operator killed handing back, after its write of %s", what)
	px.setDelay(0)
	s.edit(t, 1)
	restarted := time.Now()
	operator.Start(t, kubeconfig, "", "--namespaces="+ns)
	s.waitHandedBack(t, 1)
	fig(k.name+", prometheus-operator killed handing back: its start (until ready) → handed back, a change made meanwhile rendered", time.Since(restarted))
}
