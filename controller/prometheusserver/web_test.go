package prometheusserver

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/podreload/podreload/controller/promserver"
	"github.com/podreload/podreload/reloader"
)

// flagValue returns the value of --name= among args, and whether it is there.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func container(t *testing.T, pod corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	i := slices.IndexFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == name })
	require.GreaterOrEqual(t, i, 0, "no container %s", name)
	return pod.Containers[i]
}

// webGolden writes what spec.web rendered into a render golden file, as
// comments: the flags of Prometheus and of the config-reloader it sets,
// the volumes of the files it mounts, and the web configuration file.
func webGolden(b *bytes.Buffer, out *promserver.Objects) {
	if out.WebConfigSecret == nil {
		return
	}
	pod := out.StatefulSets[0].Spec.Template.Spec
	for _, c := range pod.Containers {
		var flags []string
		for _, a := range c.Args {
			if strings.HasPrefix(a, "--web.config") || strings.HasPrefix(a, "--web.page") || strings.HasPrefix(a, "--web.max") ||
				strings.HasPrefix(a, "--reload-") || strings.HasPrefix(a, "--runtimeinfo-") {
				flags = append(flags, a)
			}
		}
		fmt.Fprintf(b, "# %s: %s\n", c.Name, strings.Join(flags, " "))
	}
	for _, v := range pod.Volumes {
		if !strings.HasPrefix(v.Name, "web-") {
			continue
		}
		var by []string
		for _, c := range pod.Containers {
			for _, m := range c.VolumeMounts {
				if m.Name == v.Name {
					by = append(by, c.Name+" at "+m.MountPath)
				}
			}
		}
		switch {
		case v.Secret != nil:
			fmt.Fprintf(b, "# volume %s: secret %s %v, in %s\n", v.Name, v.Secret.SecretName, keys(v.Secret.Items), strings.Join(by, ", "))
		case v.ConfigMap != nil:
			fmt.Fprintf(b, "# volume %s: configmap %s %v, in %s\n", v.Name, v.ConfigMap.Name, keys(v.ConfigMap.Items), strings.Join(by, ", "))
		}
	}
	s := out.WebConfigSecret
	fmt.Fprintf(b, "# secret %s/%s, %s:\n", s.Namespace, s.Name, promserver.WebConfigSecretKey)
	for _, l := range strings.SplitAfter(strings.TrimSuffix(string(s.Data[promserver.WebConfigSecretKey]), "\n"), "\n") {
		b.WriteString("#   " + l)
	}
	b.WriteString("\n")
}

func keys(items []corev1.KeyToPath) []string {
	var k []string
	for _, it := range items {
		k = append(k, it.Key)
	}
	return k
}

// checkWeb checks the web configuration render made of in: with the
// files its volumes hold written where the pods mount them (under a
// temporary directory), promtool check web-config accepts it; with TLS, a
// server with the certificate and key answers the config-reloader's
// client, built from its flags, which verifies the certificate.
func checkWeb(t *testing.T, promtool string, in promserver.Inputs, out *promserver.Objects) {
	t.Helper()
	pod := out.StatefulSets[0].Spec.Template.Spec
	prometheus, sidecar := container(t, pod, "prometheus"), container(t, pod, "config-reloader")
	configFile, ok := flagValue(prometheus.Args, "web.config.file")
	if out.WebConfigSecret == nil {
		require.False(t, ok, "--web.config.file without a web config Secret")
		return
	}
	require.Equal(t, promserver.WebConfigMountPath+"/"+promserver.WebConfigSecretKey, configFile)
	require.Contains(t, pod.Volumes, corev1.Volume{Name: "web-config", VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: out.WebConfigSecret.Name},
	}})

	dir := t.TempDir()
	local := func(p string) string { return dir + strings.TrimPrefix(p, "/etc/prometheus") }
	for _, v := range pod.Volumes {
		if !strings.HasPrefix(v.Name, "web-tls-") {
			continue
		}
		var content []byte
		var items []corev1.KeyToPath
		switch {
		case v.Secret != nil:
			items = v.Secret.Items
			content = in.Secrets[in.Server.Namespace+"/"+v.Secret.SecretName].Data[items[0].Key]
		default:
			items = v.ConfigMap.Items
			content = []byte(in.ConfigMaps[in.Server.Namespace+"/"+v.ConfigMap.Name].Data[items[0].Key])
		}
		require.Len(t, items, 1, v.Name)
		require.NotEmpty(t, content, v.Name)
		for _, c := range []corev1.Container{prometheus, sidecar} {
			for _, m := range c.VolumeMounts {
				if m.Name == v.Name {
					require.True(t, m.ReadOnly, "%s mounts %s read-only", c.Name, v.Name)
					require.NoError(t, os.MkdirAll(local(m.MountPath), 0o755))
					require.NoError(t, os.WriteFile(local(m.MountPath+"/"+items[0].Path), content, 0o600))
				}
			}
		}
	}
	for _, m := range sidecar.VolumeMounts {
		require.NotEqual(t, "web-tls-key", m.Name, "the config-reloader never mounts Prometheus' key")
	}
	writeServerSecrets(t, in, pod, prometheus, local)
	// The files it names are relative to its directory, or files of the
	// pod's (certFile, keyFile, clientCAFile), absolute: those are
	// mapped too.
	path := local(configFile)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	file := out.WebConfigSecret.Data[promserver.WebConfigSecretKey]
	file = bytes.ReplaceAll(file, []byte(" /etc/prometheus/"), []byte(" "+local("/etc/prometheus/")))
	require.NoError(t, os.WriteFile(path, file, 0o644))
	got, err := exec.CommandContext(t.Context(), promtool, "check", "web-config", path).CombinedOutput()
	require.NoError(t, err, "promtool check web-config:\n%s", got)

	if !promserver.WebTLS(in.Server.Spec) {
		require.Equal(t, corev1.URISchemeHTTP, prometheus.ReadinessProbe.HTTPGet.Scheme)
		return
	}
	require.Equal(t, corev1.URISchemeHTTPS, prometheus.ReadinessProbe.HTTPGet.Scheme)
	require.Equal(t, corev1.URISchemeHTTPS, prometheus.LivenessProbe.HTTPGet.Scheme)
	var cfg struct {
		TLS struct {
			Cert string `yaml:"cert_file"`
			Key  string `yaml:"key_file"`
		} `yaml:"tls_server_config"`
	}
	require.NoError(t, yaml.Unmarshal(file, &cfg))
	abs := func(f string) string {
		if filepath.IsAbs(f) {
			return f
		}
		return filepath.Join(filepath.Dir(path), f)
	}
	checkReloadVerifies(t, sidecar.Args, local, abs(cfg.TLS.Cert), abs(cfg.TLS.Key))
}

// writeServerSecrets writes the keys of the spec.secrets Secrets of the
// pod where prometheus mounts them (under local), for the files of the
// pod's that the web configuration names.
func writeServerSecrets(t *testing.T, in promserver.Inputs, pod corev1.PodSpec, prometheus corev1.Container, local func(string) string) {
	t.Helper()
	for _, v := range pod.Volumes {
		if v.Secret == nil || !strings.HasPrefix(v.Name, "secret-") {
			continue
		}
		for _, m := range prometheus.VolumeMounts {
			if m.Name != v.Name {
				continue
			}
			s := in.Secrets[in.Server.Namespace+"/"+v.Secret.SecretName]
			require.NotNil(t, s, v.Secret.SecretName)
			require.NoError(t, os.MkdirAll(local(m.MountPath), 0o755))
			for k, data := range s.Data {
				require.NoError(t, os.WriteFile(local(m.MountPath+"/"+k), data, 0o600))
			}
		}
	}
}

// checkReloadVerifies serves HTTPS with the certificate and key under
// dir, and has the client the config-reloader's flags make, whose files
// local maps, reload through it, verifying the certificate.
func checkReloadVerifies(t *testing.T, args []string, local func(string) string, certFile, keyFile string) {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	require.NoError(t, err)
	reloads := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/-/reload" {
			reloads++
		}
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	reloadURL, ok := flagValue(args, "reload-url")
	require.True(t, ok, "--reload-url")
	u, err := url.Parse(reloadURL)
	require.NoError(t, err)
	require.Equal(t, "https", u.Scheme)
	require.Equal(t, "9090", u.Port())
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	u.Host = net.JoinHostPort(u.Hostname(), port)

	ca, ok := flagValue(args, "reload-tls-ca-file")
	name, _ := flagValue(args, "reload-tls-server-name")
	want := "server certificate verified with CA file " + local(ca)
	if !ok {
		// A certificate file of the pod's, which the controller cannot
		// read: not verified, as prometheus-operator's reloader.
		require.Equal(t, "localhost", u.Hostname())
		require.Empty(t, name)
		want = "server certificate not verified: loopback host and no CA file"
	} else {
		ca = local(ca)
	}
	client, mode, err := reloader.TLS{CAFile: ca, ServerName: name}.Client(u)
	require.NoError(t, err)
	require.Equal(t, want, mode)
	resp, err := client.Post(u.String(), "", nil)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, 1, reloads)
}
