package prometheusserver

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"

	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/internal/testenv/promfixture"
)

// TestRuleCacheEnforcement checks that the rule cache renders a
// PrometheusRule again when the label enforced on it changes, not only
// when the rule does.
func TestRuleCacheEnforcement(t *testing.T) {
	r := prometheusRule("team-a", "alerts", nil, `up == 0`)
	r.UID, r.ResourceVersion = "0b6e1f52-8d61-4c38-9a0e-5d1c4f3b2a10", "7"
	server := testServer()
	cache := new(promserver.RuleCache)
	file := func() string {
		shards, rejected := cache.Render(promserver.OwnTarget(server), []*monitoringv1.PrometheusRule{r})
		require.Empty(t, rejected)
		require.Len(t, shards, 1)
		return promfixture.ShardRules(t, shards[0])["team-a-alerts-0b6e1f52-8d61-4c38-9a0e-5d1c4f3b2a10.yaml"]
	}
	plain := file()
	require.NotContains(t, plain, "tenant")
	server.Spec.EnforcedNamespaceLabel = "tenant"
	enforced := file()
	require.Contains(t, enforced, `up{tenant="team-a"} == 0`)
	require.Contains(t, enforced, "tenant: team-a")
	server.Spec.EnforcedNamespaceLabel = ""
	require.Equal(t, plain, file())
}
