package kube

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestManagerOptionsLeaderElection: the Lease's durations reach
// controller-runtime's manager; a zero one leaves its default (nil).
func TestManagerOptionsLeaderElection(t *testing.T) {
	mo, err := managerOptions(slog.New(slog.DiscardHandler), runtime.NewScheme(), Options{
		Names:                []string{"prometheus"},
		LeaderElection:       true,
		LeaderElectionTiming: LeaderElectionTiming{LeaseDuration: 8 * time.Second, RetryPeriod: time.Second},
	})
	require.NoError(t, err)
	require.True(t, mo.LeaderElection)
	require.Equal(t, Name, mo.LeaderElectionID)
	require.Equal(t, 8*time.Second, *mo.LeaseDuration)
	require.Nil(t, mo.RenewDeadline, "unset: controller-runtime's default")
	require.Equal(t, time.Second, *mo.RetryPeriod)
}
