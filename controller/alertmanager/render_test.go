package alertmanager

import (
	"flag"
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/internal/testenv/controlplane"
	"github.com/podreload/podreload/internal/testenv/goldenfile"
)

func TestMain(m *testing.M) {
	// Read through flag.Lookup by golden, so that no package variable holds it.
	flag.Bool("update", false, "rewrite the golden files in testdata/ and the matrix in docs/")
	goleak.VerifyTestMain(m, controlplane.InformerLeaks()...)
}

// golden compares got with the file path, or rewrites the file with -update.
func golden(t *testing.T, path string, got []byte) { goldenfile.Check(t, path, got) }

// testAlertmanager is an Alertmanager with 3 replicas, storage, a peer
// besides its replicas and a few flags, handed to id.
func testAlertmanager(ns, name, id string) *monitoringv1.Alertmanager {
	am := &monitoringv1.Alertmanager{
		TypeMeta:   metav1.TypeMeta{APIVersion: monitoringv1.SchemeGroupVersion.String(), Kind: monitoringv1.AlertmanagersKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{takeover.AnnotationControllerID: id}, Labels: map[string]string{"team": "a"}},
	}
	am.Spec.Replicas = ptr.To[int32](3)
	am.Spec.Storage = &monitoringv1.StorageSpec{VolumeClaimTemplate: monitoringv1.EmbeddedPersistentVolumeClaim{
		Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}}
	am.Spec.AdditionalPeers = []string{"other-am.example:9094"}
	am.Spec.ExternalURL = "https://am.example"
	am.Spec.LogLevel = "debug"
	am.Spec.Secrets = []string{"Team_Creds"}
	return am
}

// TestRenderStatefulSet is the StatefulSet of testAlertmanager, created
// (testdata/statefulset.golden), and the facts of prometheus-operator's
// layout it must keep.
func TestRenderStatefulSet(t *testing.T) {
	am := testAlertmanager("monitoring", "main", "podreload")
	objs, err := render(inputs{am: am, config: []byte("route: {receiver: x}\n"), reloaderImage: "podreload/config-reloader:test"})
	require.NoError(t, err)
	b, err := yaml.Marshal(objs.sts)
	require.NoError(t, err)
	golden(t, "testdata/statefulset.golden", b)

	sts := objs.sts
	require.Equal(t, "alertmanager-main", sts.Name)
	require.Equal(t, "alertmanager-operated", sts.Spec.ServiceName)
	require.Equal(t, map[string]string{"alertmanager": "main", "app.kubernetes.io/instance": "main", "app.kubernetes.io/managed-by": "prometheus-operator", "app.kubernetes.io/name": "alertmanager"}, sts.Spec.Selector.MatchLabels)
	require.Equal(t, "alertmanager-main-db", sts.Spec.VolumeClaimTemplates[0].Name)
	am0 := sts.Spec.Template.Spec.Containers[0]
	require.Equal(t, "alertmanager", am0.Name)
	require.Equal(t, "quay.io/prometheus/alertmanager:v0.34.0", am0.Image, "prometheus-operator v0.94.1's default version")
	require.Contains(t, am0.VolumeMounts, corev1.VolumeMount{Name: "alertmanager-main-db", MountPath: "/alertmanager", SubPath: "alertmanager-db"})
	require.Contains(t, am0.VolumeMounts, corev1.VolumeMount{Name: "secret-team-creds", MountPath: "/etc/alertmanager/secrets/Team_Creds", ReadOnly: true})
	for _, want := range []string{
		"--config.file=/etc/alertmanager/config_out/alertmanager.env.yaml",
		"--storage.path=/alertmanager",
		"--data.retention=120h",
		"--cluster.listen-address=[$(POD_IP)]:9094",
		"--cluster.label=monitoring/main",
		"--cluster.peer=alertmanager-main-0.alertmanager-operated:9094",
		"--cluster.peer=alertmanager-main-1.alertmanager-operated:9094",
		"--cluster.peer=alertmanager-main-2.alertmanager-operated:9094",
		"--cluster.peer=other-am.example:9094",
		"--web.external-url=https://am.example",
		"--log.level=debug",
	} {
		require.Contains(t, am0.Args, want)
	}
	reloader := sts.Spec.Template.Spec.Containers[1]
	require.Equal(t, "config-reloader", reloader.Name)
	require.Contains(t, reloader.Args, "--config-secret=monitoring/alertmanager-main-generated")
	require.Contains(t, reloader.Args, "--reload-url=http://127.0.0.1:9093/-/reload")
	require.Equal(t, "init-config-reloader", sts.Spec.Template.Spec.InitContainers[0].Name)
	require.NotEmpty(t, sts.Spec.Template.Annotations[kube.AnnotationInputHash])

	// One replica: no clustering, unless forced.
	am.Spec.Replicas = ptr.To[int32](1)
	am.Spec.AdditionalPeers = nil
	require.Contains(t, args(am, "0.33.1"), "--cluster.listen-address=")
	am.Spec.ForceEnableClusterMode = true
	require.Contains(t, args(am, "0.33.1"), "--cluster.listen-address=[$(POD_IP)]:9094")
}

// TestRenderAdopts: an existing StatefulSet's selector (with the
// operator's --labels), claim templates, service name and pod management
// policy are kept, and its pods are labelled with that selector.
func TestRenderAdopts(t *testing.T) {
	am := testAlertmanager("monitoring", "main", "podreload")
	live := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{
		Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{"alertmanager": "main", "team": "x"}},
		ServiceName:          "alertmanager-operated",
		PodManagementPolicy:  appsv1.OrderedReadyPodManagement,
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "alertmanager-main-db"}}},
	}}
	objs, err := render(inputs{am: am, live: live, config: []byte("x")})
	require.NoError(t, err)
	require.Equal(t, live.Spec.Selector, objs.sts.Spec.Selector)
	require.Equal(t, live.Spec.VolumeClaimTemplates, objs.sts.Spec.VolumeClaimTemplates)
	require.Equal(t, appsv1.OrderedReadyPodManagement, objs.sts.Spec.PodManagementPolicy)
	require.Equal(t, "x", objs.sts.Spec.Template.Labels["team"])
}

// TestFieldsCoverTheSpec fails when a field of the main module's
// AlertmanagerSpec has no row, a row names no field, or a row is
// malformed.
func TestFieldsCoverTheSpec(t *testing.T) {
	require.NoError(t, takeover.CheckTable(reflect.TypeFor[monitoringv1.AlertmanagerSpec](), operatorFields()))
}

// acceptedValues are values of refused fields that are taken over.
func acceptedValues() map[string][]string {
	return map[string][]string{
		"containers": {`[{"name": "proxy", "image": "proxy"}]`, `[{"name": "config-reloader", "resources": {"limits": {"memory": "50Mi"}}}]`,
			`[{"name": "alertmanager", "args": ["--alerts.gc-interval=1m"]}]`},
		"initContainers":                   {`[{"name": "setup", "image": "setup"}]`, `[{"name": "init-config-reloader", "env": [{"name": "A", "value": "1"}]}]`},
		"alertmanagerConfigFileSystemMode": {`"AllowAll"`},
	}
}

// refusedValues are values that refuse a field where the generic filler's
// would be accepted.
func refusedValues() map[string]string {
	return map[string]string{
		"containers":                       `[{"name": "config-reloader", "args": ["--reload-url=http://127.0.0.1:9093/-/reload"]}]`,
		"initContainers":                   `[{"name": "init-config-reloader", "image": "quay.io/prometheus-operator/prometheus-config-reloader:v0.94.1"}]`,
		"alertmanagerConfigFileSystemMode": `"FromAlertmanagerConfigMatcherStrategy"`,
	}
}

// TestRefusedFields: an Alertmanager setting one refused field lists
// exactly its path; one setting it to an accepted value lists nothing;
// so do a version too old or not one, and an additional flag the
// controller renders.
func TestRefusedFields(t *testing.T) {
	require.Empty(t, fromAlertmanager(testAlertmanager("ns", "a", "")))
	for _, f := range operatorFields() {
		if f.Class != takeover.ClassRefused && f.Class != takeover.ClassLimited {
			continue
		}
		t.Run(f.Path, func(t *testing.T) {
			am := testAlertmanager("ns", "a", "")
			require.NoError(t, takeover.SetPath(reflect.ValueOf(&am.Spec), f.Path, refusedValues()[f.Path]))
			require.Equal(t, []string{f.Path}, fromAlertmanager(am))
			ok := acceptedValues()[f.Path]
			require.Equal(t, f.Accepts != nil, len(ok) > 0, "a field with accepted values has an example of each, and only those")
			for _, v := range ok {
				am := testAlertmanager("ns", "a", "")
				require.NoError(t, takeover.SetPath(reflect.ValueOf(&am.Spec), f.Path, v))
				require.Empty(t, fromAlertmanager(am), v)
			}
		})
	}
	am := testAlertmanager("ns", "a", "")
	for _, v := range []string{"v0.14.0", "0.15.0-rc.0", "v1.0.0"} {
		am.Spec.Version = v
		require.Equal(t, []string{`version: unsupported Alertmanager version "` + v + `" (prometheus-operator renders v0.15.0 and later v0 releases)`}, fromAlertmanager(am))
	}
	for _, v := range []string{"v0.15.0", "0.25.0", "v0.28.1", "v0.29.0"} {
		am.Spec.Version = v
		require.Empty(t, fromAlertmanager(am), v)
	}
	am.Spec.Version = "v0.21.0"
	am.Spec.AlertmanagerConfigSelector = &metav1.LabelSelector{}
	require.Equal(t, []string{"version: " + beforeMatchers}, fromAlertmanager(am))
	am.Spec.Version = "v0.22.0"
	require.Empty(t, fromAlertmanager(am))
	am.Spec.AlertmanagerConfigSelector = nil
	am.Spec.Version = "latest"
	require.Equal(t, []string{"version: not a version"}, fromAlertmanager(am))
	am.Spec.Version = ""
	am.Spec.AdditionalArgs = []monitoringv1.Argument{{Name: "cluster.label", Value: "x"}, {Name: "dispatch.start-delay", Value: "1s"}, {Name: "alerts.gc-interval", Value: "1m"}}
	am.Spec.MinReadySeconds = ptr.To[int32](5)
	require.Equal(t, []string{"additionalArgs: cluster.label is rendered by the controller"}, fromAlertmanager(am))
	a := args(am, "0.33.1")
	require.Equal(t, []string{"--cluster.label=x", "--dispatch.start-delay=1s", "--alerts.gc-interval=1m"}, a[len(a)-3:])
	require.False(t, slices.Contains(a, "--dispatch.start-delay=5s"), "additionalArgs sets it")
}

// TestFieldMatrix checks the Alertmanager part of
// docs/prometheus-operator-alertmanager.md is the rendering of the table
// (-update rewrites it).
func TestFieldMatrix(t *testing.T) {
	var b strings.Builder
	b.WriteString(`# prometheus-operator's Alertmanager fields in a takeover

<!-- Generated from controller/alertmanager/fields.go by
     go test ./controller/alertmanager/ -run TestFieldMatrix -update -->

What podreload does with each field of a ` + "`monitoring.coreos.com/v1` `Alertmanager`" + `
(prometheus-operator's types at v0.95.2, go.mod) when it takes the object
over ([takeover.md](takeover.md), [the Prometheus fields](prometheus-operator.md)):

` + takeover.Legend + `
A test walks the Go types and fails when a field has no row.

Besides the fields, an Alertmanager is refused with a ` + "`version`" + ` that is
not one, or one prometheus-operator refuses (before v0.15.0, or from
v1), and with an ` + "`additionalArgs`" + ` flag the controller renders
(prometheus-operator fails on each). Every version it renders is taken
over with its flags, each gated on the version as prometheus-operator
v0.94.1 gates it (controller/alertmanager/flags.go); before 0.22 only
with a configuration of its own (neither ` + "`alertmanagerConfigSelector`" + ` nor
` + "`alertmanagerConfiguration`" + `): the generated one holds matchers, which 0.22
brought.

One deliberate difference: an AlertmanagerConfig that prometheus-operator
v0.93.1 cannot convert once it has passed its checks (a mandatory key,
such as a Telegram receiver's ` + "`botToken`" + `, whose Secret value is empty)
makes it fail the whole configuration, every other AlertmanagerConfig's
change unapplied; podreload leaves that one out, with the reason in its
status binding, and renders the others as prometheus-operator renders
them without it (amconfig's TestOperatorWholeFailures). A tenant's
mistake does not stop every other team's changes, as prometheus-operator
itself treats an AlertmanagerConfig its checks refuse. The two refusals
of its sanitize that could do the same from an AlertmanagerConfig (a
Telegram receiver without a token before Alertmanager 0.31, Pushover's
files dropped before 0.26 leaving no key) are not reached: its checks
reject that AlertmanagerConfig first, and podreload leaves it out too
(TestOperatorConfig's telegram-without-token-v0.30 and
pushover-files-v0.25). A configuration Secret's base that its sanitize
refuses fails the configuration in both.

`)
	b.WriteString(takeover.Matrix(operatorFields()))
	golden(t, "../../docs/prometheus-operator-alertmanager.md", []byte(b.String()))
}

// TestRenderPodFields: the pod settings of the spec, as prometheus-operator
// renders them.
func TestRenderPodFields(t *testing.T) {
	am := testAlertmanager("ns", "a", "")
	am.Spec.ListenLocal = true
	am.Spec.HostNetwork = true
	am.Spec.DNSConfig = &monitoringv1.PodDNSConfig{Nameservers: []string{"10.0.0.10"}, Options: []monitoringv1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}}}
	am.Spec.UpdateStrategy = &monitoringv1.StatefulSetUpdateStrategy{Type: monitoringv1.OnDeleteStatefulSetStrategyType}
	am.Spec.Storage = &monitoringv1.StorageSpec{Ephemeral: &corev1.EphemeralVolumeSource{}}
	am.Spec.HostAliases = []monitoringv1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"smtp"}}}
	am.Spec.Containers = []corev1.Container{{Name: "proxy", Image: "proxy"}}
	am.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "setup"}}
	require.Empty(t, fromAlertmanager(am))
	objs, err := render(inputs{am: am, config: []byte("x")})
	require.NoError(t, err)
	pod := objs.sts.Spec.Template.Spec
	require.Contains(t, pod.Containers[0].Args, "--web.listen-address=127.0.0.1:9093")
	require.Nil(t, pod.Containers[0].LivenessProbe)
	require.Nil(t, pod.Containers[0].ReadinessProbe)
	require.Len(t, pod.Containers[0].Ports, 2, "the mesh ports only")
	require.True(t, pod.HostNetwork)
	require.Equal(t, corev1.DNSClusterFirstWithHostNet, pod.DNSPolicy)
	require.Equal(t, &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.10"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}}}, pod.DNSConfig)
	require.Equal(t, []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"smtp"}}}, pod.HostAliases)
	require.Equal(t, appsv1.OnDeleteStatefulSetStrategyType, objs.sts.Spec.UpdateStrategy.Type)
	require.Equal(t, []string{"alertmanager", "config-reloader", "proxy"}, names(pod.Containers), "the user's containers after the rendered ones")
	require.Equal(t, []string{"init-config-reloader", "setup"}, names(pod.InitContainers))
	require.Empty(t, objs.sts.Spec.VolumeClaimTemplates)
	require.True(t, slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "alertmanager-a-db" && v.Ephemeral != nil }))
	require.Contains(t, pod.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "alertmanager-a-db", MountPath: "/alertmanager", SubPath: "alertmanager-db"})
	am.Spec.Storage = &monitoringv1.StorageSpec{DisableMountSubPath: true}
	am.Spec.ServiceName = ptr.To("my-am")
	objs, err = render(inputs{am: am})
	require.NoError(t, err)
	require.Contains(t, objs.sts.Spec.Template.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "alertmanager-a-db", MountPath: "/alertmanager"})
	require.Equal(t, "my-am", objs.sts.Spec.ServiceName)
	require.Nil(t, objs.service, "the user's governing Service: alertmanager-operated not written")
	require.Contains(t, objs.sts.Spec.Template.Spec.Containers[0].Args, "--cluster.peer=alertmanager-a-0.my-am:9094")
	am.Spec.DNSPolicy = ptr.To(monitoringv1.DNSPolicy("Default"))
	objs, err = render(inputs{am: am})
	require.NoError(t, err)
	require.Equal(t, corev1.DNSDefault, objs.sts.Spec.Template.Spec.DNSPolicy)
	require.Nil(t, objs.generated, "no configuration: the generated Secret is kept as it is")
}

// names are the names of containers.
func names(containers []corev1.Container) []string {
	out := make([]string, len(containers))
	for i, c := range containers {
		out[i] = c.Name
	}
	return out
}
