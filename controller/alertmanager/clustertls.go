package alertmanager

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"reflect"
	"regexp"
	"strings"

	"github.com/cespare/xxhash/v2"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	yaml "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/store"
)

// spec.clusterTLS, mutual TLS between the peers, as prometheus-operator
// renders it (pkg/alertmanager/clustertlsconfig and pkg/webconfig's
// TLSReferences at v0.94.1): a file in the Secret
// alertmanager-<name>-cluster-tls-config, mounted with a sub-path and
// named by --cluster.tls-config (from Alertmanager 0.24), and each
// certificate, key and CA from its Secret or ConfigMap mounted whole,
// so that a renewal reaches the pods.

const (
	// clusterTLSDir holds the file and the certificates' directories.
	clusterTLSDir = "/etc/alertmanager/cluster_tls_config"
	// clusterTLSKey is the file's key in its Secret, and its name.
	clusterTLSKey  = "cluster-tls-config.yaml"
	clusterTLSFile = clusterTLSDir + "/" + clusterTLSKey
	// clusterTLSVolume is the Secret's volume.
	clusterTLSVolume = "cluster-tls-config"
	// annotationClusterTLS, on the pod template, is the hash of the file:
	// mounted with a sub-path, which the kubelet never refreshes, and read
	// by Alertmanager once, a change must roll the pods.
	annotationClusterTLS = "podreload.dev/cluster-tls-config-hash"
)

func clusterTLSName(name string) string { return prefix + name + "-cluster-tls-config" }

// tlsFile is a certificate, key or CA of spec.clusterTLS in the pods.
type tlsFile struct {
	// side is server_tls or client_tls, kind key, cert or ca.
	side, kind string
	ref        monitoringv1.SecretOrConfigMap
}

// dir is where the file's Secret or ConfigMap is mounted.
func (f tlsFile) dir() string {
	if f.ref.Secret != nil {
		return path.Join(clusterTLSDir, f.side, "secret", f.ref.Secret.Name+"-"+f.kind)
	}
	return path.Join(clusterTLSDir, f.side, "configmap", f.ref.ConfigMap.Name+"-"+f.kind)
}

// path is the file's path in the pods.
func (f tlsFile) path() string {
	if f.ref.Secret != nil {
		return f.dir() + "/" + f.ref.Secret.Key
	}
	return f.dir() + "/" + f.ref.ConfigMap.Key
}

// volume is the file's volume, named as prometheus-operator names it
// (cluster-tls-<side>-config-<secret|configmap>-<key|cert|client-ca>-…).
func (f tlsFile) volume() corev1.Volume {
	kind := map[string]string{"key": "key", "cert": "cert", "ca": "client-ca"}[f.kind]
	side := strings.TrimSuffix(f.side, "_tls")
	if s := f.ref.Secret; s != nil {
		return corev1.Volume{
			Name:         uniqueLabel("cluster-tls-"+side+"-config-secret-"+kind, s.Name),
			VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s.Name}},
		}
	}
	c := f.ref.ConfigMap
	return corev1.Volume{
		Name:         uniqueLabel("cluster-tls-"+side+"-config-configmap-"+kind, c.Name),
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: c.LocalObjectReference}},
	}
}

// invalidLabel are the characters a volume name cannot hold.
var invalidLabel = regexp.MustCompile("[^-a-z0-9]+")

// uniqueLabel is prefix-name as a volume name, as prometheus-operator's
// ResourceNamer.UniqueDNS1123Label makes it: lower-cased, other
// characters than [a-z0-9-] replaced by -, at most 54 characters, then -
// and 8 hexadecimal digits of the name's xxhash.
func uniqueLabel(prefix, name string) string {
	l := strings.Trim(invalidLabel.ReplaceAllString(strings.ToLower(prefix+"-"+name), "-"), "-")
	if len(l) > 54 {
		l = l[:54]
	}
	h := fmt.Sprintf("%x", xxhash.Sum64String(name))
	return l + "-" + h[:min(8, len(h))]
}

// clusterTLSFiles are the certificates, keys and CAs of t from Secrets
// and ConfigMaps, in prometheus-operator's order: the server's key,
// certificate and client CA, then the client's.
func clusterTLSFiles(t *monitoringv1.ClusterTLSConfig) []tlsFile {
	var files []tlsFile
	add := func(side, kind string, ref monitoringv1.SecretOrConfigMap) {
		if (ref.Secret != nil && ref.Secret.Name != "") || ref.ConfigMap != nil {
			files = append(files, tlsFile{side: side, kind: kind, ref: ref})
		}
	}
	s, c := t.ServerTLS, t.ClientTLS
	add("server_tls", "key", monitoringv1.SecretOrConfigMap{Secret: &s.KeySecret})
	add("server_tls", "cert", s.Cert)
	add("server_tls", "ca", s.ClientCA)
	if c.KeySecret != nil {
		add("client_tls", "key", monitoringv1.SecretOrConfigMap{Secret: c.KeySecret})
	}
	add("client_tls", "cert", c.Cert)
	add("client_tls", "ca", c.CA)
	return files
}

// readClusterTLS checks that each certificate, key and CA of
// spec.clusterTLS from a Secret or a ConfigMap is there, so that the pods
// do not wait for a volume that cannot be mounted (prometheus-operator
// does not check); it returns what it read, an error too, so that their
// change renders am again.
func readClusterTLS(ctx context.Context, reader client.Reader, am *monitoringv1.Alertmanager) ([]store.Ref, error) {
	if am.Spec.ClusterTLS == nil {
		return nil, nil
	}
	files := clusterTLSFiles(am.Spec.ClusterTLS)
	var refs []store.Ref
	for _, f := range files {
		if f.ref.Secret != nil {
			refs = store.Union(refs, []store.Ref{{Kind: store.Secret, Namespace: am.Namespace, Name: f.ref.Secret.Name}})
		} else {
			refs = store.Union(refs, []store.Ref{{Kind: store.ConfigMap, Namespace: am.Namespace, Name: f.ref.ConfigMap.Name}})
		}
	}
	objs, err := store.Read(ctx, reader, refs)
	if err != nil {
		return refs, err
	}
	lookup := store.NewLookup(objs)
	for _, f := range files {
		if f.ref.Secret != nil {
			_, err = lookup.Secret(am.Namespace, *f.ref.Secret)
		} else {
			_, err = lookup.ConfigMap(am.Namespace, *f.ref.ConfigMap)
		}
		if err != nil {
			return refs, fmt.Errorf("alertmanager %s/%s: spec.clusterTLS: %s %s: %w", am.Namespace, am.Name, strings.TrimSuffix(f.side, "_tls"), f.kind, err)
		}
	}
	return refs, nil
}

// renderClusterTLS is the file of spec.clusterTLS, nil without it; the
// error names what prometheus-operator refuses in it.
func renderClusterTLS(am *monitoringv1.Alertmanager) ([]byte, error) {
	t := am.Spec.ClusterTLS
	if t == nil {
		return nil, nil
	}
	fail := func(err error) ([]byte, error) {
		return nil, fmt.Errorf("alertmanager %s/%s: spec.clusterTLS: %w", am.Namespace, am.Name, err)
	}
	if err := t.ServerTLS.Validate(); err != nil {
		return fail(fmt.Errorf("server: %w", err))
	}
	if err := t.ClientTLS.Validate(); err != nil {
		return fail(fmt.Errorf("client: %w", err))
	}
	if reflect.ValueOf(t.ClientTLS.Cert).IsZero() {
		return fail(errors.New("client: a certificate is required"))
	}
	at := map[string]string{}
	for _, f := range clusterTLSFiles(t) {
		at[f.side+"/"+f.kind] = f.path()
	}
	s, c := t.ServerTLS, t.ClientTLS
	server := yaml.MapSlice{}
	for _, kv := range []struct{ key, file, mounted string }{
		{"key_file", ptr.Deref(s.KeyFile, ""), at["server_tls/key"]},
		{"cert_file", ptr.Deref(s.CertFile, ""), at["server_tls/cert"]},
	} {
		if v := cmp.Or(kv.file, kv.mounted); v != "" {
			server = append(server, yaml.MapItem{Key: kv.key, Value: v})
		}
	}
	if v := ptr.Deref(s.ClientAuthType, ""); v != "" {
		server = append(server, yaml.MapItem{Key: "client_auth_type", Value: v})
	}
	if v := cmp.Or(ptr.Deref(s.ClientCAFile, ""), at["server_tls/ca"]); v != "" {
		server = append(server, yaml.MapItem{Key: "client_ca_file", Value: v})
	}
	for _, kv := range []struct{ key, v string }{{"min_version", ptr.Deref(s.MinVersion, "")}, {"max_version", ptr.Deref(s.MaxVersion, "")}} {
		if kv.v != "" {
			server = append(server, yaml.MapItem{Key: kv.key, Value: kv.v})
		}
	}
	if len(s.CipherSuites) > 0 {
		server = append(server, yaml.MapItem{Key: "cipher_suites", Value: s.CipherSuites})
	}
	if s.PreferServerCipherSuites != nil {
		server = append(server, yaml.MapItem{Key: "prefer_server_cipher_suites", Value: *s.PreferServerCipherSuites})
	}
	if len(s.CurvePreferences) > 0 {
		server = append(server, yaml.MapItem{Key: "curve_preferences", Value: s.CurvePreferences})
	}
	client := yaml.MapSlice{}
	for _, kv := range []struct{ key, file string }{{"key_file", at["client_tls/key"]}, {"cert_file", at["client_tls/cert"]}, {"ca_file", at["client_tls/ca"]}} {
		if kv.file != "" {
			client = append(client, yaml.MapItem{Key: kv.key, Value: kv.file})
		}
	}
	if c.ServerName != nil {
		client = append(client, yaml.MapItem{Key: "server_name", Value: *c.ServerName})
	}
	if c.InsecureSkipVerify != nil {
		client = append(client, yaml.MapItem{Key: "insecure_skip_verify", Value: *c.InsecureSkipVerify})
	}
	b, err := yaml.Marshal(yaml.MapSlice{{Key: "tls_server_config", Value: server}, {Key: "tls_client_config", Value: client}})
	if err != nil {
		return fail(err)
	}
	return b, nil
}

// clusterTLSPod is what spec.clusterTLS puts in the pods of Alertmanager
// version: the file's volume and the certificates', and their mounts in
// Alertmanager; nothing without it or before 0.24.
func clusterTLSPod(am *monitoringv1.Alertmanager, version string) ([]corev1.Volume, []corev1.VolumeMount) {
	if am.Spec.ClusterTLS == nil || !since(version, sinceClusterTLS) {
		return nil, nil
	}
	vols := []corev1.Volume{{Name: clusterTLSVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: clusterTLSName(am.Name)}}}}
	mounts := []corev1.VolumeMount{{Name: clusterTLSVolume, MountPath: clusterTLSFile, SubPath: clusterTLSKey, ReadOnly: true}}
	for _, f := range clusterTLSFiles(am.Spec.ClusterTLS) {
		v := f.volume()
		vols = append(vols, v)
		mounts = append(mounts, corev1.VolumeMount{Name: v.Name, MountPath: f.dir(), ReadOnly: true})
	}
	return vols, mounts
}
