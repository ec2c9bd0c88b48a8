package webconfig

import (
	"cmp"
	"path"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// file is a file of spec.web.tlsConfig in the pods: a key of a Secret or
// ConfigMap, alone in a volume of its own mounted at Dirs.TLS/<dir>, so
// that each container mounts only the keys it needs (the config-reloader
// never sees the server's private key).
type file struct {
	dirs Dirs
	dir  string
	ref  monitoringv1.SecretOrConfigMap
}

func (f file) key() string {
	if f.ref.Secret != nil {
		return f.ref.Secret.Key
	}
	return f.ref.ConfigMap.Key
}

// path is where the file is in the pods.
func (f file) path() string { return f.dirs.TLS + "/" + f.dir + "/" + f.key() }

// configPath is the file's path relative to the directory of the web
// configuration file, which exporter-toolkit resolves it against: the
// configuration holds wherever the pod's volumes are mounted.
func (f file) configPath() string {
	return "../" + strings.TrimPrefix(f.path(), path.Dir(f.dirs.Config)+"/")
}

func (f file) volumeName() string { return "web-tls-" + strings.ReplaceAll(f.dir, "_", "-") }

func (f file) volume() corev1.Volume {
	items := []corev1.KeyToPath{{Key: f.key(), Path: f.key()}}
	v := corev1.Volume{Name: f.volumeName()}
	if f.ref.Secret != nil {
		v.Secret = &corev1.SecretVolumeSource{SecretName: f.ref.Secret.Name, Items: items}
	} else {
		v.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: f.ref.ConfigMap.LocalObjectReference, Items: items}
	}
	return v
}

func (f file) mount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: f.volumeName(), MountPath: f.dirs.TLS + "/" + f.dir, ReadOnly: true}
}

// files are the files of tlsConfig t the server reads from Secrets and
// ConfigMaps (not those of the pod's, certFile, keyFile and
// clientCAFile), and the CA file the config-reloader verifies the
// server's certificate with (none, its dir empty, when reload is
// Unverified).
func files(dirs Dirs, t *monitoringv1.WebTLSConfig, reload Reload) (server []file, reloader file) {
	if ptr.Deref(t.CertFile, "") == "" {
		server = append(server, file{dirs: dirs, dir: "cert", ref: t.Cert})
	}
	if ptr.Deref(t.KeyFile, "") == "" {
		server = append(server, file{dirs: dirs, dir: "key", ref: monitoringv1.SecretOrConfigMap{Secret: &t.KeySecret}})
	}
	if t.ClientCA != (monitoringv1.SecretOrConfigMap{}) {
		server = append(server, file{dirs: dirs, dir: "client_ca", ref: t.ClientCA})
	}
	if unverified(t, reload) {
		return server, file{}
	}
	reloader = file{dirs: dirs, dir: "reload_ca", ref: t.Cert}
	if reload.CA != nil {
		reloader.ref = *reload.CA
	}
	return server, reloader
}

// unverified reports whether the config-reloader cannot verify the
// certificate of t: it is a file of the pod's (whatever reload says,
// Render's or not).
func unverified(t *monitoringv1.WebTLSConfig, reload Reload) bool {
	return reload.Unverified || ptr.Deref(t.CertFile, "") != ""
}

// Pod is what spec.web puts into the pods.
type Pod struct {
	// Scheme and Host of the server's URL in the pod, for the reloader.
	Scheme, Host string
	// Volumes of the web config Secret and the TLS files.
	Volumes []corev1.Volume
	// ServerMounts are the mounts of the web configuration and of the
	// files it names; ReloaderMounts, of the CA file the config-reloader
	// verifies the server's certificate with.
	ServerMounts, ReloaderMounts []corev1.VolumeMount
	// ReloaderArgs verify the server's certificate.
	ReloaderArgs []string
}

// PodParts renders what web, spec.web, puts into the pods: with
// tlsConfig or httpConfig, the web config Secret secretName mounted in the
// server's container; with tlsConfig, the certificate, its key and the
// client CA that Secrets and ConfigMaps hold mounted there (files of the
// pod's are its own), and the CA that verifies the certificate (reload)
// mounted in the config-reloader's, which reloads over HTTPS, verifying
// the certificate unless reload is Unverified.
func PodParts(dirs Dirs, secretName string, web *monitoringv1.WebConfigFileFields, reload Reload) Pod {
	w := Pod{Scheme: "http", Host: "127.0.0.1"}
	if !Enabled(web) {
		return w
	}
	w.Volumes = []corev1.Volume{{Name: "web-config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secretName}}}}
	w.ServerMounts = []corev1.VolumeMount{{Name: "web-config", MountPath: dirs.Config, ReadOnly: true}}
	if !TLS(web) {
		return w
	}
	files, ca := files(dirs, web.TLSConfig, reload)
	for _, f := range files {
		w.Volumes = append(w.Volumes, f.volume())
		w.ServerMounts = append(w.ServerMounts, f.mount())
	}
	w.Scheme, w.Host = "https", cmp.Or(reload.Host, "localhost")
	if unverified(web.TLSConfig, reload) {
		// The config-reloader verifies no certificate at a loopback
		// host without a CA file.
		return w
	}
	w.Volumes = append(w.Volumes, ca.volume())
	w.ReloaderMounts = []corev1.VolumeMount{ca.mount()}
	w.ReloaderArgs = []string{"--reload-tls-ca-file=" + ca.path()}
	if reload.ServerName != "" {
		w.ReloaderArgs = append(w.ReloaderArgs, "--reload-tls-server-name="+reload.ServerName)
	}
	return w
}

// OperatorPodParts renders what web puts into the pods in
// prometheus-operator's layout (PodParts), where the web config Secret is
// always there, its file empty without spec.web (an empty httpConfig
// mounts the Secret and nothing else), and mounted with a sub-path, as
// prometheus-operator mounts it: each generation of pods keeps the file
// it started with while the other side writes the Secret with its own
// (its paths to the TLS files differ), during a takeover and after a
// hand-back.
func OperatorPodParts(dirs Dirs, secretName string, web *monitoringv1.WebConfigFileFields, reload Reload) Pod {
	if !Enabled(web) {
		web = &monitoringv1.WebConfigFileFields{HTTPConfig: &monitoringv1.WebHTTPConfig{}}
	}
	pod := PodParts(dirs, secretName, web, reload)
	pod.ServerMounts[0].MountPath += "/" + SecretKey
	pod.ServerMounts[0].SubPath = SecretKey
	return pod
}

// Secret is the web config Secret name, in namespace, labelled labels,
// that holds file, the web configuration file, at SecretKey. Owner
// references are not set.
func Secret(namespace, name string, labels map[string]string, file []byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{SecretKey: file},
	}
}
