package alertmanager

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/sidecar"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/toolbin"
)

// TestVolumeSource: with automountServiceAccountToken false the pods
// mount no token, and both config-reloaders read the generated Secret's
// volume and report nothing; unset or true, they read and report through
// the API server.
func TestVolumeSource(t *testing.T) {
	am := testAlertmanager("monitoring", "main", "podreload")
	reloaders := func() (pod corev1.PodSpec) {
		objs, err := render(inputs{am: am, config: []byte("x")})
		require.NoError(t, err)
		return objs.sts.Spec.Template.Spec
	}
	pod := reloaders()
	require.True(t, *pod.AutomountServiceAccountToken)
	require.Contains(t, pod.Containers[1].Args, "--config-secret=monitoring/alertmanager-main-generated")
	require.Contains(t, pod.Containers[1].Args, "--report-pod=$(POD_NAMESPACE)/$(POD_NAME)")

	am.Spec.AutomountServiceAccountToken = ptr.To(false)
	require.Empty(t, fromAlertmanager(am))
	pod = reloaders()
	require.False(t, *pod.AutomountServiceAccountToken)
	for _, c := range []corev1.Container{pod.InitContainers[0], pod.Containers[1]} {
		require.Contains(t, c.Args, "--config-file=/etc/alertmanager/config/alertmanager.yaml.gz", c.Name)
		require.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "config-volume", MountPath: "/etc/alertmanager/config", ReadOnly: true}, c.Name)
		for _, a := range c.Args {
			require.False(t, strings.HasPrefix(a, "--config-secret") || strings.HasPrefix(a, "--report-pod"), "%s: %s", c.Name, a)
		}
	}
}

// TestVolumeSourceRenders runs the real config-reloader with the init
// container's flags of the volume source (its directories under a
// temporary one): it renders the gzipped generated configuration into the
// file Alertmanager reads.
func TestVolumeSourceRenders(t *testing.T) {
	bin, err := toolbin.Path("config-reloader")
	require.NoError(t, err, "`make build` builds bin/config-reloader")
	am := testAlertmanager("monitoring", "main", "podreload")
	am.Spec.AutomountServiceAccountToken = ptr.To(false)
	objs, err := render(inputs{am: am, config: []byte("route: {receiver: x}\n")})
	require.NoError(t, err)
	root := t.TempDir()
	for _, d := range []string{configDir, configOutDir} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, configDir, configKey), objs.generated.Data[configKey], 0o600))
	init := objs.sts.Spec.Template.Spec.InitContainers[0]
	args := slices.Clone(init.Args)
	for i, a := range args {
		args[i] = strings.Replace(a, "=/etc/", "="+root+"/etc/", 1)
	}
	out, err := exec.CommandContext(t.Context(), bin, args...).CombinedOutput()
	require.NoError(t, err, "%s %v: %s", bin, args, out)
	got, err := os.ReadFile(filepath.Join(root, configOutFile))
	require.NoError(t, err)
	require.Equal(t, "route: {receiver: x}\n", string(got))
}

// testVolumeSource: an Alertmanager with automountServiceAccountToken
// false is taken over, its pods mounting no token, and its ConfigApplied
// condition says why it is not known.
func testVolumeSource(t *testing.T, env *controlplane.ControlPlane) {
	c := controlplane.NewClient(t, env.Config, AddToScheme)
	ctx := t.Context()
	ns := "am-volume-source"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alertmanager-main"}, Data: map[string][]byte{baseKey: []byte(baseConfig)}}))
	am := testAlertmanager(ns, "main", "podreload")
	am.Spec.Secrets = nil
	am.Spec.AutomountServiceAccountToken = ptr.To(false)
	require.NoError(t, c.Create(ctx, am))
	start(t, env.Config, ns)
	eventually(t, func(ct *assert.CollectT) {
		var sts appsv1.StatefulSet
		if assert.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alertmanager-main"}, &sts)) {
			assert.False(ct, *sts.Spec.Template.Spec.AutomountServiceAccountToken)
		}
		var live monitoringv1.Alertmanager
		if !assert.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(am), &live)) {
			return
		}
		if applied := takeover.FindCondition(live.Status.Conditions, sidecar.ConditionConfigApplied); assert.NotNil(ct, applied) {
			assert.Equal(ct, monitoringv1.ConditionUnknown, applied.Status)
			assert.Equal(ct, "NotReported", applied.Reason)
		}
		if rec := takeover.FindCondition(live.Status.Conditions, conditionReconciled); assert.NotNil(ct, rec) {
			assert.Equal(ct, monitoringv1.ConditionTrue, rec.Status)
		}
	})
}
