package prometheusserver

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/podreload/podreload/controller/promcfg"
	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/controller/store"
)

// The helper of the configuration's tests that the tests of the rendering
// and of the reconciler use too; the fixtures and checks they share with
// packages promcfg and rulefiles are in internal/testenv/promfixture.

// renderConfig renders the configuration of server with the objects it
// selected, sel, reading secrets, and the rule files ruleFiles, as render
// does: promcfg.Server, then Parts.Head.
func renderConfig(server promserver.Target, sel promserver.Selected, secrets map[string]*corev1.Secret, ruleFiles []string) ([]byte, []promcfg.Rejection, error) {
	parts, rejected, err := promcfg.Server(promserver.ConfigInput(server, sel, store.NewLookup(store.Objects{Secrets: secrets}), nil))
	if err != nil {
		return nil, nil, err
	}
	head, err := parts.Head(ruleFiles)
	if err != nil {
		return nil, nil, err
	}
	return slices.Concat(append([][]byte{head}, parts.Body()...)...), rejected, nil
}
