package alertmanager

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/controller/alertmanager/amconfig"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/sidecar"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/controller/webconfig"
)

// nobody is the user of the Alertmanager image, which the reloaders run
// as when the pod sets none.
const nobody = 65534

// image is the Alertmanager image prometheus-operator runs for am, and its
// version without the v; ok is false for a version that is not one.
// Without spec.version, the version is prometheus-operator's default or,
// when newer, the one live's alertmanager container runs (nil live: none
// runs): a takeover never downgrades Alertmanager.
func image(am *monitoringv1.Alertmanager, live *appsv1.StatefulSet) (img, version string, ok bool) {
	def := defaultVersion
	if live != nil {
		for _, c := range live.Spec.Template.Spec.Containers {
			if c.Name == "alertmanager" {
				def = takeover.NotOlder(defaultVersion, c.Image)
			}
		}
	}
	return takeover.Image(takeover.ImageSpec{
		Image: am.Spec.Image, BaseImage: am.Spec.BaseImage, DefaultBaseImage: defaultBaseImage,
		Version: am.Spec.Version, DefaultVersion: def, Tag: am.Spec.Tag, SHA: am.Spec.SHA,
	})
}

// volumeSource reports whether am's config-reloaders read the generated
// Secret from its volume, as prometheus-operator's do, rather than through
// the API server: with automountServiceAccountToken false the pods have
// no token to reach it with, so nor do they report what Alertmanager runs.
func volumeSource(am *monitoringv1.Alertmanager) bool {
	return !ptr.Deref(am.Spec.AutomountServiceAccountToken, true)
}

// routePrefix is the prefix of Alertmanager's HTTP paths.
func routePrefix(am *monitoringv1.Alertmanager) string {
	return cmp.Or(am.Spec.RoutePrefix, "/")
}

// volumes are the pod's volumes and Alertmanager's mounts, in
// prometheus-operator's order: the generated Secret (where the
// configSecret's templates are), the reloaders' output,
// spec.alertmanagerConfiguration's templates, spec.secrets and
// spec.configMaps, the web configuration and its TLS files (webPod), the
// cluster's TLS configuration and its files (clusterTLSPod), the data
// volume unless it is a claim, spec.volumes; for Alertmanager
// version.
func volumes(am *monitoringv1.Alertmanager, reload webconfig.Reload, version string) ([]corev1.Volume, []corev1.VolumeMount) {
	vols := []corev1.Volume{
		{Name: "config-volume", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: generatedName(am.Name)}}},
		{Name: "config-out", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
	}
	mounts := []corev1.VolumeMount{
		{Name: "config-volume", MountPath: configDir},
		{Name: "config-out", MountPath: configOutDir, ReadOnly: true},
		{Name: dataVolume(am), MountPath: storageDir, SubPath: subPath(am)},
	}
	if v, ok := templates(am); ok {
		vols = append(vols, v)
		mounts = append(mounts, templatesMount())
	}
	for _, s := range am.Spec.Secrets {
		name := dns1123("secret-" + s)
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s}}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: path.Join(secretsDir, s), ReadOnly: true})
	}
	for _, c := range am.Spec.ConfigMaps {
		name := dns1123("configmap-" + c)
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: c}}}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: path.Join(configMapsDir, c), ReadOnly: true})
	}
	mounts = append(mounts, am.Spec.VolumeMounts...)
	web := webPod(am, reload, version)
	vols = append(vols, web.Volumes...)
	mounts = append(mounts, web.ServerMounts...)
	tlsVols, tlsMounts := clusterTLSPod(am, version)
	vols = append(vols, tlsVols...)
	mounts = append(mounts, tlsMounts...)
	switch st := am.Spec.Storage; {
	case st == nil:
		vols = append(vols, corev1.Volume{Name: dataVolume(am), VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	case st.EmptyDir != nil:
		vols = append(vols, corev1.Volume{Name: dataVolume(am), VolumeSource: corev1.VolumeSource{EmptyDir: st.EmptyDir}})
	case st.Ephemeral != nil:
		vols = append(vols, corev1.Volume{Name: dataVolume(am), VolumeSource: corev1.VolumeSource{Ephemeral: st.Ephemeral}})
	}
	return append(vols, am.Spec.Volumes...), mounts
}

// templates is the volume of spec.alertmanagerConfiguration's templates,
// as prometheus-operator projects them: each key of a ConfigMap or Secret
// as the file of its name (where amconfig's configuration names it), a
// key already projected skipped; ok is false without templates.
func templates(am *monitoringv1.Alertmanager) (v corev1.Volume, ok bool) {
	g := am.Spec.AlertmanagerConfiguration
	if g == nil || len(g.Templates) == 0 {
		return v, false
	}
	var sources []corev1.VolumeProjection
	keys := map[string]bool{}
	for _, t := range g.Templates {
		if c := t.ConfigMap; c != nil && !keys[c.Key] {
			keys[c.Key] = true
			sources = append(sources, corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: c.LocalObjectReference, Items: []corev1.KeyToPath{{Key: c.Key, Path: c.Key}},
			}})
		}
		if s := t.Secret; s != nil && !keys[s.Key] {
			keys[s.Key] = true
			sources = append(sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
				LocalObjectReference: s.LocalObjectReference, Items: []corev1.KeyToPath{{Key: s.Key, Path: s.Key}},
			}})
		}
	}
	return corev1.Volume{Name: templatesVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}}, true
}

// templatesMount mounts the templates' volume in Alertmanager and the
// reloaders.
func templatesMount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: templatesVolume, MountPath: amconfig.TemplatesDir, ReadOnly: true}
}

// subPath is the data volume's sub-path: alertmanager-db whenever
// spec.storage is set, unless it says disableMountSubPath.
func subPath(am *monitoringv1.Alertmanager) string {
	if am.Spec.Storage == nil || am.Spec.Storage.DisableMountSubPath {
		return ""
	}
	return storageSubPath
}

// dns1123 is name as a volume name, as prometheus-operator's
// ResourceNamer makes it: lower-cased, other characters than [a-z0-9-]
// replaced by -, at most 63 characters, no - at either end.
func dns1123(name string) string {
	b := []byte(strings.ToLower(name))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			b[i] = '-'
		}
	}
	if len(b) > 63 {
		b = b[:63]
	}
	return strings.Trim(string(b), "-")
}

// podTemplate is the pod template of in.am, its pods labelled with
// selector.
func podTemplate(in inputs, selector map[string]string) (corev1.PodTemplateSpec, error) {
	am := in.am
	img, version, _ := image(am, in.live)
	labels := map[string]string{labelVersion: version}
	annotations := map[string]string{}
	if md := am.Spec.PodMetadata; md != nil {
		maps.Copy(labels, md.Labels)
		maps.Copy(annotations, md.Annotations)
	}
	maps.Copy(labels, selector)
	annotations[annotationDefaultContainer] = "alertmanager"
	if since(version, sinceWebConfig) {
		annotations[annotationWebConfig] = fileHash(in.web.File)
	}
	if vols, _ := clusterTLSPod(am, version); vols != nil {
		annotations[annotationClusterTLS] = fileHash(in.clusterTLS)
	}

	vols, mounts := volumes(am, in.web.Reload, version)
	web := webPod(am, in.web.Reload, version)
	alertmanager := alertmanagerContainer(am, img, version, mounts, web.Scheme)
	initReloader, reloader := reloaders(in, web)
	containers, err := takeover.MergeContainers([]corev1.Container{alertmanager, reloader}, am.Spec.Containers)
	if err != nil {
		return corev1.PodTemplateSpec{}, fmt.Errorf("alertmanager %s/%s: spec.containers: %w", am.Namespace, am.Name, err)
	}
	initContainers, err := takeover.MergeContainers([]corev1.Container{initReloader}, am.Spec.InitContainers)
	if err != nil {
		return corev1.PodTemplateSpec{}, fmt.Errorf("alertmanager %s/%s: spec.initContainers: %w", am.Namespace, am.Name, err)
	}

	t := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			// Whatever the service account says: the sidecar reports, and
			// reads through the API server; false, with the volume source.
			AutomountServiceAccountToken:  ptr.To(!volumeSource(am)),
			NodeSelector:                  am.Spec.NodeSelector,
			SchedulerName:                 am.Spec.SchedulerName,
			PriorityClassName:             am.Spec.PriorityClassName,
			TerminationGracePeriodSeconds: ptr.To(ptr.Deref(am.Spec.TerminationGracePeriodSeconds, defaultGracePeriod)),
			InitContainers:                initContainers,
			Containers:                    containers,
			Volumes:                       vols,
			ServiceAccountName:            am.Spec.ServiceAccountName,
			SecurityContext:               am.Spec.SecurityContext,
			Tolerations:                   am.Spec.Tolerations,
			Affinity:                      am.Spec.Affinity,
			TopologySpreadConstraints:     am.Spec.TopologySpreadConstraints,
			HostAliases:                   takeover.HostAliases(am.Spec.HostAliases),
			HostNetwork:                   am.Spec.HostNetwork,
			DNSPolicy:                     takeover.DNSPolicy(am.Spec.DNSPolicy, am.Spec.HostNetwork),
			DNSConfig:                     takeover.PodDNSConfig(am.Spec.DNSConfig),
			EnableServiceLinks:            am.Spec.EnableServiceLinks,
			HostUsers:                     am.Spec.HostUsers,
			ImagePullSecrets:              am.Spec.ImagePullSecrets,
		},
	}
	hash, err := inputHash(t)
	if err != nil {
		return t, fmt.Errorf("alertmanager %s/%s: pod template: %w", am.Namespace, am.Name, err)
	}
	t.Annotations[kube.AnnotationInputHash] = hash
	return t, nil
}

// reloaders are the init container and the sidecar of in.am, reloading
// Alertmanager where web says it serves.
func reloaders(in inputs, web webconfig.Pod) (initReloader, reloader corev1.Container) {
	am := in.am
	reloaderSecurity := containerSecurity()
	if am.Spec.SecurityContext == nil {
		reloaderSecurity.RunAsUser, reloaderSecurity.RunAsGroup = ptr.To[int64](nobody), ptr.To[int64](nobody)
	}
	// The API source: the generated Secret through the API server.
	sourceArgs := []string{"--config-secret=" + am.Namespace + "/" + generatedName(am.Name), "--config-secret-key=" + configKey}
	if volumeSource(am) {
		// The volume source: the generated Secret's volume.
		sourceArgs = []string{"--config-file=" + configDir + "/" + configKey}
	}
	sourceArgs = append(sourceArgs,
		"--config-envsubst-file="+configOutFile,
		// The configuration's templates, which the kubelet projects.
		"--watched-dir="+configDir,
	)
	reloaderMounts := []corev1.VolumeMount{{Name: "config-volume", MountPath: configDir, ReadOnly: true}, {Name: "config-out", MountPath: configOutDir}}
	if _, ok := templates(am); ok {
		sourceArgs = append(sourceArgs, "--watched-dir="+amconfig.TemplatesDir)
		reloaderMounts = append(reloaderMounts, templatesMount())
	}
	initReloader, reloader = sidecar.Containers(sidecar.Spec{
		Image:      in.reloaderImage,
		SourceArgs: sourceArgs,
		ReloadArgs: append([]string{"--reload-url=" + web.Scheme + "://" + web.Host + ":" + strconv.Itoa(webPort) + path.Clean(routePrefix(am)+"/-/reload")},
			web.ReloaderArgs...),
		Mounts:          reloaderMounts,
		SidecarMounts:   web.ReloaderMounts,
		SecurityContext: reloaderSecurity,
		LogLevel:        am.Spec.LogLevel,
		LogFormat:       am.Spec.LogFormat,
		NoReport:        volumeSource(am),
	})
	initReloader.ImagePullPolicy, reloader.ImagePullPolicy = am.Spec.ImagePullPolicy, am.Spec.ImagePullPolicy

	return initReloader, reloader
}

// alertmanagerContainer is Alertmanager's container, running img of
// version with mounts, its probes over scheme (http or https).
func alertmanagerContainer(am *monitoringv1.Alertmanager, img, version string, mounts []corev1.VolumeMount, scheme string) corev1.Container {
	resources := *am.Spec.Resources.DeepCopy()
	if resources.Requests == nil {
		resources.Requests = corev1.ResourceList{}
	}
	if _, ok := resources.Requests[corev1.ResourceMemory]; !ok {
		resources.Requests[corev1.ResourceMemory] = resource.MustParse("200Mi")
	}
	ports := []corev1.ContainerPort{
		{Name: "mesh-tcp", ContainerPort: meshPort, Protocol: corev1.ProtocolTCP},
		{Name: "mesh-udp", ContainerPort: meshPort, Protocol: corev1.ProtocolUDP},
	}
	var liveness, readiness *corev1.Probe
	if !am.Spec.ListenLocal {
		ports = append([]corev1.ContainerPort{{Name: portName(am), ContainerPort: webPort, Protocol: corev1.ProtocolTCP}}, ports...)
		get := func(p string) corev1.ProbeHandler {
			return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path.Clean(routePrefix(am) + p), Port: intstr.FromString(portName(am)), Scheme: corev1.URIScheme(strings.ToUpper(scheme))}}
		}
		// prometheus-operator's numbers, with the API server's defaults of
		// the others (periodSeconds 10, successThreshold 1) written out:
		// the StatefulSet holds them, and a difference would apply it again.
		liveness = &corev1.Probe{ProbeHandler: get("/-/healthy"), TimeoutSeconds: 3, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 10}
		readiness = &corev1.Probe{ProbeHandler: get("/-/ready"), InitialDelaySeconds: 3, TimeoutSeconds: 3, PeriodSeconds: 5, SuccessThreshold: 1, FailureThreshold: 10}
	}
	env := []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
	if since(version, sincePeerName) {
		// --cluster.peer-name's.
		env = append(env, corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}})
	}
	return corev1.Container{
		Name:                     "alertmanager",
		Image:                    img,
		ImagePullPolicy:          am.Spec.ImagePullPolicy,
		Args:                     args(am, version),
		Ports:                    ports,
		VolumeMounts:             mounts,
		LivenessProbe:            liveness,
		ReadinessProbe:           readiness,
		Resources:                resources,
		SecurityContext:          containerSecurity(),
		Env:                      env,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}

// containerSecurity is prometheus-operator's securityContext of its
// containers.
func containerSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}
