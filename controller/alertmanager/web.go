package alertmanager

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/podreload/podreload/controller/store"
	"github.com/podreload/podreload/controller/takeover"
	"github.com/podreload/podreload/controller/webconfig"
)

// The web configuration of Alertmanager (spec.web's tlsConfig and
// httpConfig): package webconfig renders it and its pod parts; here, where
// it goes in the pods.

const (
	// webTLSDir holds a directory per file of spec.web.tlsConfig.
	webTLSDir = "/etc/alertmanager/web_tls"
	// annotationWebConfig, on the pod template, is the hash of the web
	// configuration file: the pods mount it with a sub-path, as
	// prometheus-operator does, which the kubelet never refreshes, so a
	// change must roll them.
	annotationWebConfig = "podreload.dev/web-config-hash"
)

// webDirs are where the pods mount the web configuration.
func webDirs() webconfig.Dirs { return webconfig.Dirs{Config: webConfigDir, TLS: webTLSDir} }

// webFields are spec.web's fields of the web configuration file; nil
// without spec.web.
func webFields(am *monitoringv1.Alertmanager) *monitoringv1.WebConfigFileFields {
	if am.Spec.Web == nil {
		return nil
	}
	return &am.Spec.Web.WebConfigFileFields
}

// renderWeb renders am's web configuration file, reading the Secrets and
// ConfigMaps tlsConfig names from the API server (the certificate, its key
// and the client CA are checked); the references are returned with an
// error too, so that their change renders am again.
func renderWeb(ctx context.Context, reader client.Reader, am *monitoringv1.Alertmanager) (webconfig.Rendered, error) {
	fields := webFields(am)
	if fields != nil && fields.TLSConfig != nil && ptr.Deref(fields.TLSConfig.KeyFile, "") != "" {
		return webconfig.Rendered{}, fmt.Errorf("alertmanager %s/%s: spec.web.tlsConfig.keyFile: %s", am.Namespace, am.Name, takeover.ReasonKeyFile)
	}
	// A first pass names what the second reads.
	first, _ := webconfig.Render(webDirs(), am.Namespace, am.Name, fields, store.Objects{})
	objs, err := store.Read(ctx, reader, first.Refs)
	if err != nil {
		return webconfig.Rendered{Refs: first.Refs}, err
	}
	r, err := webconfig.Render(webDirs(), am.Namespace, am.Name, fields, objs)
	if err != nil {
		return r, fmt.Errorf("alertmanager %s/%s: spec.web: %w", am.Namespace, am.Name, err)
	}
	if r.File == nil {
		// prometheus-operator always writes the file, empty without
		// spec.web, and Alertmanager always reads it (args).
		r.File = []byte{}
	}
	return r, nil
}

// webPod is what spec.web puts into the pods: the web configuration file
// mounted with a sub-path, as prometheus-operator mounts it (each
// generation of pods keeps the file it started with while the other side
// writes the Secret with its own paths, in both directions), the TLS
// files, and how the reloaders verify Alertmanager's certificate; nothing
// before Alertmanager 0.22, which has no web configuration file (the
// Secret is written all the same, as prometheus-operator writes it).
func webPod(am *monitoringv1.Alertmanager, reload webconfig.Reload, version string) webconfig.Pod {
	if !since(version, sinceWebConfig) {
		return webconfig.PodParts(webDirs(), webConfigName(am.Name), nil, reload)
	}
	return webconfig.OperatorPodParts(webDirs(), webConfigName(am.Name), webFields(am), reload)
}

// fileHash is the hash of the web configuration file, for
// annotationWebConfig.
func fileHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
