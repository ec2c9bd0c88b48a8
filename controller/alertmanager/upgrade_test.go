package alertmanager

import (
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/podreload/podreload/controller/sidecar"
)

// TestUpgradeKeepsReloader: a StatefulSet an earlier controller wrote,
// its config-reloaders at that controller's image, is rendered the same
// by a controller with another default image when nothing else changed
// (an upgrade rolls no pod); a change of the pods brings the new image.
func TestUpgradeKeepsReloader(t *testing.T) {
	am := testAlertmanager("monitoring", "main", "podreload")
	in := inputs{am: am, config: []byte("x"), reloaderImage: "podreload:previous"}
	before, err := render(in)
	require.NoError(t, err)
	live := before.sts.DeepCopy()

	in.live, in.reloaderImage = live, "podreload:current"
	objs, err := render(in)
	require.NoError(t, err)
	require.Equal(t, live.Spec.Template, objs.sts.Spec.Template, "the pod template an earlier controller wrote")
	require.Equal(t, []string{"podreload:previous", "podreload:previous"}, reloaderImages(objs.sts))

	am.Spec.LogLevel = "warn"
	objs, err = render(in)
	require.NoError(t, err)
	require.Equal(t, []string{"podreload:current", "podreload:current"}, reloaderImages(objs.sts))
}

// reloaderImages are the images of the config-reloaders of sts.
func reloaderImages(sts *appsv1.StatefulSet) []string {
	var out []string
	for _, c := range append(sts.Spec.Template.Spec.InitContainers, sts.Spec.Template.Spec.Containers...) {
		if c.Name == sidecar.ContainerName || c.Name == sidecar.InitContainerName {
			out = append(out, c.Image)
		}
	}
	return out
}
