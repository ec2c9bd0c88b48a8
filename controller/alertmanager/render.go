package alertmanager

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/contract"
	"github.com/podreload/podreload/controller/kube"
	"github.com/podreload/podreload/controller/sidecar"
	"github.com/podreload/podreload/controller/webconfig"
)

// prometheus-operator's names, labels and paths for an Alertmanager
// (pkg/alertmanager/statefulset.go and operator.go at v0.94.1, the same
// as at v0.93.1).
const (
	// prefix starts the names of the objects of an Alertmanager
	// (prefixedName).
	prefix = "alertmanager-"
	// governingServiceName is the headless Service of every Alertmanager
	// of a namespace (defaultOperatedServiceName).
	governingServiceName = "alertmanager-operated"
	// configKey is the generated configuration, gzipped, in its Secret
	// (alertmanagerConfigFileCompressed); baseKey, the user's in the
	// configSecret (alertmanagerConfigFile).
	configKey = "alertmanager.yaml.gz"
	baseKey   = "alertmanager.yaml"

	webPort, meshPort = 9093, 9094
	// The directories of the pods.
	configDir     = "/etc/alertmanager/config"
	configOutDir  = "/etc/alertmanager/config_out"
	configOutFile = configOutDir + "/alertmanager.env.yaml"
	storageDir    = "/alertmanager"
	webConfigDir  = "/etc/alertmanager/web_config"
	secretsDir    = "/etc/alertmanager/secrets"
	configMapsDir = "/etc/alertmanager/configmaps"
	// templatesVolume holds spec.alertmanagerConfiguration's templates,
	// mounted at amconfig.TemplatesDir (alertmanagerTemplatesVolumeName).
	templatesVolume = "notification-templates"
	// storageSubPath is the data volume's directory Alertmanager keeps its
	// silences and notification log in (subPathForStorage).
	storageSubPath = "alertmanager-db"

	// defaultVersion and defaultBaseImage make the image of an
	// Alertmanager that sets none (pkg/operator/defaults.go
	// DefaultAlertmanagerVersion, DefaultAlertmanagerBaseImage, at
	// v0.94.1); image keeps a newer version that runs.
	defaultVersion   = "v0.34.0"
	defaultBaseImage = "quay.io/prometheus/alertmanager"
	defaultRetention = "120h"
	defaultPortName  = "web"
	// defaultGracePeriod is the pods' terminationGracePeriodSeconds.
	defaultGracePeriod = 120

	operatorManager   = "prometheus-operator"
	labelManagedBy    = "managed-by"
	labelAppManagedBy = "app.kubernetes.io/managed-by"
	labelInstance     = "app.kubernetes.io/instance"
	labelAlertmanager = "alertmanager"
	labelVersion      = "app.kubernetes.io/version"
	labelOperated     = "operated-alertmanager"

	annotationDefaultContainer = "kubectl.kubernetes.io/default-container"
	kubectlAnnotations         = "kubectl.kubernetes.io/"
)

// names of the objects of the Alertmanager name.
func stsName(name string) string       { return prefix + name }
func generatedName(name string) string { return prefix + name + "-generated" }
func webConfigName(name string) string { return prefix + name + "-web-config" }
func volumeName(name string) string    { return prefix + name + "-db" }

// accessName is the reloaders' Role and RoleBinding: nothing
// prometheus-operator writes has this name.
func accessName(name string) string { return prefix + name + "-podreload" }

// configSecretName is the Secret of the user's configuration.
func configSecretName(am *monitoringv1.Alertmanager) string {
	if am.Spec.ConfigSecret != "" {
		return am.Spec.ConfigSecret
	}
	return stsName(am.Name)
}

// selectorLabels select the pods of the Alertmanager name
// (makeSelectorLabels), without the operator's --labels.
func selectorLabels(name string) map[string]string {
	return map[string]string{
		kube.LabelName:    App,
		labelAppManagedBy: operatorManager,
		labelInstance:     name,
		labelAlertmanager: name,
	}
}

// objectLabels are the labels of the Secrets prometheus-operator writes
// for an Alertmanager (UpdateObject), and kube.LabelName.
func objectLabels() map[string]string {
	return map[string]string{labelManagedBy: operatorManager, labelAppManagedBy: operatorManager, kube.LabelName: App}
}

// inputs are what the objects of an Alertmanager are rendered from.
type inputs struct {
	am *monitoringv1.Alertmanager
	// config is the generated configuration, uncompressed; nil keeps the
	// generated Secret as it is (its last good content).
	config []byte
	// templates are the configSecret's other keys, copied into the
	// generated Secret as prometheus-operator copies them.
	templates map[string][]byte
	// live is the StatefulSet in the cluster, nil when there is none: its
	// selector, claim templates and service name are immutable.
	live *appsv1.StatefulSet
	// reloaderImage is the config-reloader's image.
	reloaderImage string
	// web is spec.web's configuration file, and how the reloaders verify
	// Alertmanager's certificate.
	web webconfig.Rendered
	// clusterTLS is spec.clusterTLS's file (renderClusterTLS), nil
	// without it.
	clusterTLS []byte
}

// objects are what render writes for an Alertmanager.
type objects struct {
	// generated is nil when in.config is; clusterTLS without
	// spec.clusterTLS (prometheus-operator's, empty, stays as it is).
	generated, web, clusterTLS *corev1.Secret
	// service is nil with spec.serviceName.
	service *corev1.Service
	sts     *appsv1.StatefulSet
	role    *rbacv1.Role
	binding *rbacv1.RoleBinding
	// contentHash is what the reloaders report once Alertmanager runs the
	// generated configuration (contract.Sum of the key as stored).
	contentHash string
}

// render renders the objects of in.am, which fromAlertmanager accepted.
func render(in inputs) (*objects, error) {
	am := in.am
	file := in.web.File
	if file == nil {
		file = []byte{}
	}
	objs := &objects{web: secret(am, webConfigName(am.Name), map[string][]byte{webconfig.SecretKey: file})}
	if in.config != nil {
		gz := contract.Gzip(in.config)
		data := maps.Clone(in.templates)
		if data == nil {
			data = map[string][]byte{}
		}
		data[configKey] = gz
		objs.generated = secret(am, generatedName(am.Name), data)
		objs.contentHash = contract.Sum(gz, nil)
	}
	if in.clusterTLS != nil {
		objs.clusterTLS = secret(am, clusterTLSName(am.Name), map[string][]byte{clusterTLSKey: in.clusterTLS})
	}
	if am.Spec.ServiceName == nil {
		objs.service = service(am)
	}
	sts, err := statefulSet(in)
	if err != nil {
		return nil, err
	}
	// An upgrade of the controller rolls no pod for its config-reloader
	// image alone.
	objs.sts = sidecar.KeepRunningImage(in.live, sts, in.reloaderImage, kube.AnnotationInputHash, func(image string) *appsv1.StatefulSet {
		in.reloaderImage = image
		kept, err := statefulSet(in)
		if err != nil {
			return nil
		}
		return kept
	})
	pods := make([]string, replicas(am))
	for i := range pods {
		pods[i] = stsName(am.Name) + "-" + strconv.Itoa(i)
	}
	objs.role, objs.binding = sidecar.Role(sidecar.Access{
		Name: accessName(am.Name), Namespace: am.Namespace,
		// Ours, not prometheus-operator's: no managed-by label.
		Labels:         map[string]string{kube.LabelName: App, labelInstance: am.Name},
		ServiceAccount: am.Spec.ServiceAccountName,
		Secrets:        []string{generatedName(am.Name)},
		Pods:           pods,
	})
	return objs, nil
}

// replicas is spec.replicas: 1 when unset, 0 when negative.
func replicas(am *monitoringv1.Alertmanager) int32 {
	return max(0, ptr.Deref(am.Spec.Replicas, 1))
}

func secret(am *monitoringv1.Alertmanager, name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: am.Namespace, Name: name, Labels: objectLabels()},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}

// serviceName is the governing Service of am's StatefulSet: the shared
// alertmanager-operated, or spec.serviceName, the user's, which the
// controller does not write (getServiceName).
func serviceName(am *monitoringv1.Alertmanager) string {
	if am.Spec.ServiceName != nil {
		return *am.Spec.ServiceName
	}
	return governingServiceName
}

// portName is the name of Alertmanager's web port.
func portName(am *monitoringv1.Alertmanager) string {
	if am.Spec.PortName != "" {
		return am.Spec.PortName
	}
	return defaultPortName
}

// service is alertmanager-operated, shared by every Alertmanager of the
// namespace (makeStatefulSetService): it selects all of their pods.
func service(am *monitoringv1.Alertmanager) *corev1.Service {
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name: governingServiceName, Namespace: am.Namespace,
			Labels: map[string]string{labelOperated: "true", labelManagedBy: operatorManager, labelAppManagedBy: operatorManager},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 map[string]string{kube.LabelName: App},
			Ports: []corev1.ServicePort{
				{Name: portName(am), Port: webPort, TargetPort: intstr.FromString(portName(am)), Protocol: corev1.ProtocolTCP},
				{Name: "tcp-mesh", Port: meshPort, TargetPort: intstr.FromString("mesh-tcp"), Protocol: corev1.ProtocolTCP},
				{Name: "udp-mesh", Port: meshPort, TargetPort: intstr.FromString("mesh-udp"), Protocol: corev1.ProtocolUDP},
			},
		},
	}
}

// statefulSet is alertmanager-<name> (makeStatefulSet): prometheus-operator's
// metadata, and, when it exists, the live StatefulSet's selector (which
// holds the operator's --labels), claim templates, service name and pod
// management policy, which cannot change.
func statefulSet(in inputs) (*appsv1.StatefulSet, error) {
	am := in.am
	selector := &metav1.LabelSelector{MatchLabels: selectorLabels(am.Name)}
	claims := claimTemplates(am)
	serviceName := serviceName(am)
	policy := appsv1.PodManagementPolicyType(ptr.Deref(am.Spec.PodManagementPolicy, monitoringv1.ParallelPodManagement))
	if in.live != nil {
		selector, claims, serviceName, policy = in.live.Spec.Selector, in.live.Spec.VolumeClaimTemplates, in.live.Spec.ServiceName, in.live.Spec.PodManagementPolicy
	}
	template, err := podTemplate(in, selector.MatchLabels)
	if err != nil {
		return nil, err
	}
	l := map[string]string{labelManagedBy: operatorManager, labelAppManagedBy: operatorManager}
	maps.Copy(l, am.Labels)
	maps.Copy(l, selector.MatchLabels)
	var a map[string]string
	for k, v := range am.Annotations {
		if strings.HasPrefix(k, kubectlAnnotations) {
			continue
		}
		if a == nil {
			a = map[string]string{}
		}
		a[k] = v
	}
	sts := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: am.Namespace, Name: stsName(am.Name), Labels: l, Annotations: a},
		Spec: appsv1.StatefulSetSpec{
			Replicas:                             ptr.To(replicas(am)),
			Selector:                             selector,
			ServiceName:                          serviceName,
			PodManagementPolicy:                  policy,
			MinReadySeconds:                      ptr.Deref(am.Spec.MinReadySeconds, 0),
			UpdateStrategy:                       updateStrategy(am.Spec.UpdateStrategy),
			Template:                             template,
			VolumeClaimTemplates:                 claims,
			PersistentVolumeClaimRetentionPolicy: am.Spec.PersistentVolumeClaimRetentionPolicy,
		},
	}
	return sts, nil
}

// updateStrategy is the StatefulSet's update strategy
// (pkg/operator/statefulset.go UpdateStrategyForStatefulSet).
func updateStrategy(s *monitoringv1.StatefulSetUpdateStrategy) appsv1.StatefulSetUpdateStrategy {
	if s == nil {
		return appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}
	}
	out := appsv1.StatefulSetUpdateStrategy{Type: appsv1.StatefulSetUpdateStrategyType(s.Type)}
	if s.RollingUpdate != nil {
		out.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: s.RollingUpdate.MaxUnavailable}
	}
	return out
}

// claimTemplates is the claim template of spec.storage, as
// prometheus-operator writes it: named alertmanager-<name>-db unless the
// template names it, ReadWriteOnce unless it says otherwise.
func claimTemplates(am *monitoringv1.Alertmanager) []corev1.PersistentVolumeClaim {
	st := am.Spec.Storage
	if st == nil || st.EmptyDir != nil || st.Ephemeral != nil {
		return nil
	}
	t := st.VolumeClaimTemplate
	pvc := corev1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Name: t.Name, Labels: t.Labels, Annotations: t.Annotations,
		},
		Spec: t.Spec,
	}
	if pvc.Name == "" {
		pvc.Name = volumeName(am.Name)
	}
	if pvc.Spec.AccessModes == nil {
		pvc.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	return []corev1.PersistentVolumeClaim{pvc}
}

// dataVolume is the name of the data volume.
func dataVolume(am *monitoringv1.Alertmanager) string {
	if st := am.Spec.Storage; st != nil && st.VolumeClaimTemplate.Name != "" {
		return st.VolumeClaimTemplate.Name
	}
	return volumeName(am.Name)
}

// inputHash is the hash of the pod template t, without it.
func inputHash(t corev1.PodTemplateSpec) (string, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}
