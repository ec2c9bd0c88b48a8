package handoff

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/controller"
	"github.com/podreload/podreload/internal/testenv/operator"
)

const (
	// flips is how many times the annotation changes, every flipEvery:
	// 10 times in 30 s, a GitOps tool fighting a person.
	flips     = 10
	flipEvery = 3 * time.Second
)

// testFlips flips the annotation of a Prometheus taken over between
// prometheus-operator's id (empty) and the controller's 10 times in
// 30 s, both running, the last flip taking it over again. Every write of
// its StatefulSet is read from the audit log (who made it, the object it
// left): the end state follows the last value; no version of the
// StatefulSet mixes both pod templates, has an owner but the Prometheus
// or other claim templates; once the last flip settled, only the
// controller writes it (a change of replicas then).
func testFlips(t testing.TB, e *env, fig figure) {
	ns := e.namespace(t, "flips")
	createMonitors(t, e.c, ns)
	s := e.newPrometheus(t, ns, "k8s", "")
	operator.Start(t, e.cp.Kubeconfig, "", "--namespaces="+ns)
	s.waitOperatorWrote(t)
	e.startController(t, e.cp.Kubeconfig, ns)
	type flip struct {
		rv int64
		id string
	}
	// The takeover before the flips starts the second epoch of the
	// writes, prometheus-operator's creation the first.
	rv, err := strconv.ParseInt(s.annotate(t, controllerID), 10, 64)
	require.NoError(t, err)
	done := []flip{{rv: rv, id: controllerID}}
	s.waitTakenOver(t, 0)
	tick := time.NewTicker(flipEvery)
	defer tick.Stop()
	for i := 1; i <= flips; i++ {
		id := controllerID
		if i%2 == 1 {
			id = ""
		}
		rv, err = strconv.ParseInt(s.annotate(t, id), 10, 64)
		require.NoError(t, err)
		done = append(done, flip{rv: rv, id: id})
		if i < flips {
			<-tick.C
		}
	}
	require.Len(t, done, flips+1)
	require.Equal(t, controllerID, done[len(done)-1].id, "the last flip takes it over")
	lastFlip := time.Now()
	s.edit(t, 1)
	s.waitTakenOver(t, 1)
	fig("the annotation flipped 10 times in 30 s: last flip → taken over, a change made after it rendered", time.Since(lastFlip))
	writes := e.stsWrites(t, ns, s.stsName())
	require.NotEmpty(t, writes)
	settled := writes[len(writes)-1].rv
	// A change of the StatefulSet once settled: the controller alone
	// writes it.
	s.patch(t, `{"spec":{"replicas":3}}`)
	eventually(t, "3 replicas", func() error {
		if r := s.statefulSet(t).Spec.Replicas; r == nil || *r != 3 {
			return fmt.Errorf("replicas %v", r)
		}
		return s.takenOver(t, 1)
	})

	writes = e.stsWrites(t, ns, s.stsName())
	counts := map[string]int{}
	var seq []string
	// In each epoch, between two flips, the one the object was handed
	// to writes; the other may write once more, late: prometheus-operator
	// syncs an object it queued before the flip (its informers of the
	// Prometheus and of the Secrets are not ordered with each other: a
	// Secret the controller wrote as it took the object over can queue
	// it before the annotation arrived, docs/takeover.md, "The
	// controller id"), and the controller corrects it. Each epoch ends
	// with the owner's StatefulSet: never both writing it for long.
	epoch, owner, late, n := 0, operator.FieldManager, 0, 0
	endEpoch := func(last string) {
		if n == 0 {
			return
		}
		require.Equal(t, owner, last, "epoch %d (flips as | id): %s", epoch, strings.Join(seq, " "))
		require.LessOrEqual(t, late, 1, "late writes of the other in epoch %d: %s", epoch, strings.Join(seq, " "))
	}
	for i, w := range writes {
		for epoch < len(done) && done[epoch].rv < w.rv {
			if i > 0 {
				endEpoch(writes[i-1].who)
			}
			seq = append(seq, fmt.Sprintf("| %q", done[epoch].id))
			owner, late, n = operator.FieldManager, 0, 0
			if done[epoch].id == controllerID {
				owner = controller.Name
			}
			epoch++
		}
		counts[w.who]++
		n++
		seq = append(seq, abbrev(w.who))
		if w.who != owner {
			late++
		}
		who, err := side(&w.sts.Spec.Template)
		require.NoError(t, err, "StatefulSet at resourceVersion %d, written by %s", w.rv, w.who)
		// The controller's first write of a takeover moves
		// prometheus-operator's managed fields to it, nothing else.
		if i == 0 || !equalJSON(writes[i-1].sts.Spec.Template, w.sts.Spec.Template) {
			require.Equal(t, who, w.who, "StatefulSet at resourceVersion %d: %s wrote the other's pod template", w.rv, w.who)
		}
		require.NoError(t, s.kept(t, w.sts), "StatefulSet at resourceVersion %d, written by %s", w.rv, w.who)
		if w.rv > settled {
			require.Equal(t, controller.Name, w.who, "a write after the last flip settled, at resourceVersion %d", w.rv)
		}
	}
	endEpoch(writes[len(writes)-1].who)
	t.Logf("StatefulSet writes by writer %v; in order, flips as | id: %s", counts, strings.Join(seq, " "))
	require.Positive(t, counts[operator.FieldManager], "prometheus-operator took it back at least once")
	require.Greater(t, writes[len(writes)-1].rv, settled, "the controller wrote the change made once settled")
}

// abbrev is the letter of a writer in the log of the writes: O for
// prometheus-operator, P for the controller.
func abbrev(who string) string {
	switch who {
	case operator.FieldManager:
		return "O"
	case controller.Name:
		return "P"
	}
	return who
}
