package promserver

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podreload/podreload/api/v1alpha1"
	"github.com/podreload/podreload/controller/promserver/promargs"
	"github.com/podreload/podreload/controller/store"
	"github.com/podreload/podreload/controller/webconfig"
)

// The web configuration of a server: package webconfig renders it; here,
// where its Secret is and what it is named.

const (
	// WebConfigMountPath is where the web config Secret is mounted in the
	// Prometheus container.
	WebConfigMountPath = promargs.WebConfigDir
	// WebConfigSecretKey is the key of the web configuration file in the
	// web config Secret.
	WebConfigSecretKey = webconfig.SecretKey
	// WebTLSMountPath holds a directory per file of spec.web.tlsConfig.
	WebTLSMountPath = "/etc/prometheus/web_tls"
)

// webDirs are where the pods mount the web configuration.
func webDirs() webconfig.Dirs {
	return webconfig.Dirs{Config: WebConfigMountPath, TLS: WebTLSMountPath}
}

// WebConfigSecretName is the name of the Secret holding the web
// configuration file of server, a PrometheusServer object (in podreload's
// layout).
func WebConfigSecretName(server *v1alpha1.PrometheusServer) string {
	return webConfigSecretName(OwnTarget(server))
}

// webConfigSecretName is the name of the Secret holding the web
// configuration file of server, in its layout.
func webConfigSecretName(server Target) string {
	if server.Layout.Operator() {
		return operatorName(server) + "-web-config"
	}
	return server.Name + "-web-config"
}

// webFields are spec.web's fields of the web configuration file; nil
// without spec.web.
func webFields(spec v1alpha1.PrometheusServerSpec) *monitoringv1.WebConfigFileFields {
	if spec.Web == nil {
		return nil
	}
	return &spec.Web.WebConfigFileFields
}

// WebTLS reports whether Prometheus serves HTTPS.
func WebTLS(spec v1alpha1.PrometheusServerSpec) bool { return webconfig.TLS(webFields(spec)) }

// webConfigFile reports whether Prometheus gets a web configuration file.
func webConfigFile(spec v1alpha1.PrometheusServerSpec) bool {
	return webconfig.Enabled(webFields(spec))
}

// webRender is what renderWeb makes of spec.web.
type webRender struct {
	// Secret holds the web configuration file; nil when there is none.
	Secret *corev1.Secret
	// Reload is how the config-reloader verifies Prometheus' certificate.
	Reload webconfig.Reload
	// Refs are the Secrets and ConfigMaps looked up, found or not.
	Refs []store.Ref
}

// RenderWeb renders the web configuration file of in.Server's spec.web
// into its Secret (webconfig.Render).
func RenderWeb(in Inputs) (webRender, error) {
	server := Target{PrometheusServer: in.Server, Layout: in.Layout}
	r, err := webconfig.Render(webDirs(), server.Namespace, server.Name, webFields(server.Spec),
		store.Objects{Secrets: in.Secrets, ConfigMaps: in.ConfigMaps})
	out := webRender{Reload: r.Reload, Refs: r.Refs}
	l := SelectorLabels(server)
	if server.Layout.Operator() && err == nil {
		// prometheus-operator always writes the file, empty without
		// spec.web, and Prometheus always reads it (operatorPrometheusArgs).
		l = operatorObjectLabels(server)
		if r.File == nil {
			r.File = []byte{}
		}
	}
	if err != nil || r.File == nil {
		return out, err
	}
	out.Secret = webconfig.Secret(server.Namespace, webConfigSecretName(server), l, r.File)
	return out, nil
}

// webPod is what spec.web puts into the pods of server; in
// prometheus-operator's layout, as it mounts the file
// (webconfig.OperatorPodParts), a change of which rolls the pods
// (annotationWebConfig).
func webPod(server Target, reload webconfig.Reload) webconfig.Pod {
	if server.Layout.Operator() {
		return webconfig.OperatorPodParts(webDirs(), webConfigSecretName(server), webFields(server.Spec), reload)
	}
	return webconfig.PodParts(webDirs(), webConfigSecretName(server), webFields(server.Spec), reload)
}
