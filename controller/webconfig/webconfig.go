// Package webconfig is the web configuration file of a server that
// exporter-toolkit serves (Prometheus, Alertmanager): spec.web's
// tlsConfig and httpConfig rendered and checked (Render), how the
// config-reloader verifies the server's certificate (Reload), and what it
// puts into the pods (PodParts). It knows no kind: a kind says where the
// files go (Dirs).
package webconfig

import (
	"bytes"
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	yaml "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/podreload/podreload/controller/store"
)

const (
	// SecretKey is the key of the web configuration file in its Secret.
	SecretKey = "web-config.yaml"
	// caKey is the key of a CA certificate beside a certificate in a
	// kubernetes.io/tls Secret (cert-manager's convention).
	caKey = "ca.crt"
)

// Dirs are where a kind mounts the web configuration in its pods.
type Dirs struct {
	// Config is where the web config Secret is mounted in the server's
	// container: a directory, so that the kubelet updates the file, which
	// exporter-toolkit reads at each connection.
	Config string
	// TLS holds a directory per file of tlsConfig: cert, key, client_ca,
	// and reload_ca, the CA the config-reloader verifies the server's
	// certificate with.
	TLS string
}

// Reload is how the config-reloader verifies the server's certificate
// when it reloads it over HTTPS; Render decides it from the certificate.
// The zero value verifies the certificate with itself, at
// https://localhost.
type Reload struct {
	// Unverified is set when the certificate is a file of the pod's
	// (certFile), which the controller cannot read: the config-reloader
	// reloads at https://localhost without verifying it, as
	// prometheus-operator's config-reloader does whatever the certificate.
	Unverified bool
	// CA is the Secret or ConfigMap key whose certificates verify
	// the server's certificate; none means the certificate itself.
	CA *monitoringv1.SecretOrConfigMap
	// Host is the host of the reload URL: localhost, or 127.0.0.1 when the
	// certificate names that address and not localhost; empty means
	// localhost.
	Host string
	// ServerName is the name checked in the certificate when it is not
	// Host (--reload-tls-server-name).
	ServerName string
}

// Rendered is what Render makes of a web configuration.
type Rendered struct {
	// File is the web configuration file; nil when there is none.
	File []byte
	// Reload is how the config-reloader verifies the server's certificate.
	Reload Reload
	// Refs are the Secrets and ConfigMaps looked up, found or not.
	Refs []store.Ref
}

// Enabled reports whether web gives the server a web configuration file.
func Enabled(web *monitoringv1.WebConfigFileFields) bool {
	return web != nil && (web.TLSConfig != nil || web.HTTPConfig != nil)
}

// TLS reports whether web makes the server serve HTTPS.
func TLS(web *monitoringv1.WebConfigFileFields) bool {
	return web != nil && web.TLSConfig != nil
}

// Render renders the web configuration file of web, spec.web of the
// server name in namespace ns, with its files where dirs says, reading
// the certificate, its key and the client CA from objs to check them, and
// decides from the certificate how the config-reloader verifies it (the
// server's name stands for a wildcard's *). Its errors name the field at
// fault; the references looked up are returned with them.
func Render(dirs Dirs, ns, name string, web *monitoringv1.WebConfigFileFields, objs store.Objects) (Rendered, error) {
	if !Enabled(web) {
		return Rendered{}, nil
	}
	r := &reader{dirs: dirs, ns: ns, name: name, lookup: store.NewLookup(objs)}
	var (
		out Rendered
		cfg yaml.MapSlice
		err error
	)
	if web.TLSConfig != nil {
		var item yaml.MapItem
		item, out.Reload, err = r.tlsServerConfig(web.TLSConfig)
		cfg = append(cfg, item)
	}
	if err == nil && web.HTTPConfig != nil {
		var item yaml.MapItem
		item, err = httpServerConfig(web.HTTPConfig)
		cfg = append(cfg, item)
	}
	out.Refs = r.lookup.Refs()
	if err != nil {
		return Rendered{Refs: out.Refs}, fmt.Errorf("render web config: %w", err)
	}
	if out.File, err = yaml.Marshal(cfg); err != nil {
		return Rendered{Refs: out.Refs}, fmt.Errorf("render web config: %w", err)
	}
	return out, nil
}

// reader reads the Secrets and ConfigMaps spec.web.tlsConfig references,
// and remembers which.
type reader struct {
	dirs   Dirs
	ns     string
	name   string
	lookup *store.Lookup
}

// read returns the PEM text at ref; path is the field's, for errors.
func (r *reader) read(path string, ref monitoringv1.SecretOrConfigMap) ([]byte, error) {
	switch {
	case ref.Secret != nil && ref.ConfigMap != nil:
		return nil, fmt.Errorf("%s: secret and configMap are mutually exclusive", path)
	case ref.Secret != nil:
		return r.secret(path, *ref.Secret)
	case ref.ConfigMap != nil:
		return r.configMap(path, *ref.ConfigMap)
	}
	return nil, fmt.Errorf("%s: must be set", path)
}

func (r *reader) secret(path string, sel corev1.SecretKeySelector) ([]byte, error) {
	if sel.Name == "" || sel.Key == "" {
		return nil, fmt.Errorf("%s: name and key must be set", path)
	}
	v, err := r.lookup.Secret(r.ns, sel)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

func (r *reader) configMap(path string, sel corev1.ConfigMapKeySelector) ([]byte, error) {
	if sel.Name == "" || sel.Key == "" {
		return nil, fmt.Errorf("%s: name and key must be set", path)
	}
	v, err := r.lookup.ConfigMap(r.ns, sel)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// Client authentication types (exporter-toolkit's client_auth_type).
const (
	noClientCert               = "NoClientCert"
	requestClientCert          = "RequestClientCert"
	requireAnyClientCert       = "RequireAnyClientCert"
	verifyClientCertIfGiven    = "VerifyClientCertIfGiven"
	requireAndVerifyClientCert = "RequireAndVerifyClientCert"
)

// checkClientAuth checks clientAuthType and client_ca together. A type
// that requires a client certificate is refused: the kubelet's HTTPS
// probes present none, so the pods would never be ready (what
// prometheus-operator renders then, its issue 5419). The config-reloader
// could present one, but the API has no field for it (nor does
// prometheus-operator's, whose reloader skips verification and presents
// no certificate): with the types accepted it presents none, which
// Prometheus lets through.
func checkClientAuth(path string, t *monitoringv1.WebTLSConfig) error {
	auth := ptr.Deref(t.ClientAuthType, "")
	switch auth {
	case "", noClientCert, requestClientCert, verifyClientCertIfGiven:
	case requireAnyClientCert, "RequireClientCert", requireAndVerifyClientCert:
		return fmt.Errorf("%s.clientAuthType: %s is not supported: the kubelet's probes and the config-reloader present no client certificate, so the pods would never be ready; use %s to verify the certificates clients present", path, auth, verifyClientCertIfGiven)
	default:
		return fmt.Errorf("%s.clientAuthType: unknown type %q (one of %s, %s, %s, %s, %s)", path, auth,
			noClientCert, requestClientCert, requireAnyClientCert, verifyClientCertIfGiven, requireAndVerifyClientCert)
	}
	hasCA := t.ClientCA != (monitoringv1.SecretOrConfigMap{}) || ptr.Deref(t.ClientCAFile, "") != ""
	if hasCA && (auth == "" || auth == noClientCert) {
		// exporter-toolkit refuses it at each connection: Prometheus
		// would serve nothing.
		field := "client_ca"
		if ptr.Deref(t.ClientCAFile, "") != "" {
			field = "clientCAFile"
		}
		return fmt.Errorf("%s.%s: set without a clientAuthType that asks for client certificates (%s or %s)", path, field, requestClientCert, verifyClientCertIfGiven)
	}
	return nil
}

// tlsServerConfig renders tls_server_config, and decides how the
// config-reloader verifies the certificate.
func (r *reader) tlsServerConfig(t *monitoringv1.WebTLSConfig) (yaml.MapItem, Reload, error) {
	const path = "spec.web.tlsConfig"
	if err := checkSources(path, t); err != nil {
		return yaml.MapItem{}, Reload{}, err
	}
	if err := checkClientAuth(path, t); err != nil {
		return yaml.MapItem{}, Reload{}, err
	}
	reload, err := r.certificate(path, t)
	if err != nil {
		return yaml.MapItem{}, Reload{}, err
	}
	cfg, err := tlsSettings(r.dirs, path, t, reload)
	return yaml.MapItem{Key: "tls_server_config", Value: cfg}, reload, err
}

// checkSources checks that each of the certificate, its key and the
// client CA has one source at most, a file of the pod's or a Secret or
// ConfigMap key, and the certificate and its key one at least, as
// prometheus-operator checks them (WebTLSConfig.Validate).
func checkSources(path string, t *monitoringv1.WebTLSConfig) error {
	certFile, keyFile, caFile := ptr.Deref(t.CertFile, "") != "", ptr.Deref(t.KeyFile, "") != "", ptr.Deref(t.ClientCAFile, "") != ""
	hasCert, hasKey, hasCA := t.Cert != (monitoringv1.SecretOrConfigMap{}), t.KeySecret != (corev1.SecretKeySelector{}), t.ClientCA != (monitoringv1.SecretOrConfigMap{})
	switch {
	case hasCA && caFile:
		return fmt.Errorf("%s: client_ca and clientCAFile are mutually exclusive", path)
	case hasCert && certFile:
		return fmt.Errorf("%s: cert and certFile are mutually exclusive", path)
	case hasKey && keyFile:
		return fmt.Errorf("%s: keySecret and keyFile are mutually exclusive", path)
	case !hasKey && !keyFile:
		return fmt.Errorf("%s: keySecret or keyFile must be set", path)
	case !hasCert && !certFile:
		return fmt.Errorf("%s: cert or certFile must be set", path)
	}
	return nil
}

// certificate reads the certificate, its key and the client CA that
// Secrets and ConfigMaps hold, checks them, and decides how the
// config-reloader verifies the certificate: with a certificate that is a
// file of the pod's (certFile), which the controller cannot read, it
// does not (Reload.Unverified), as prometheus-operator's config-reloader
// never does; with a key that is one (keyFile), the certificate alone is
// checked.
func (r *reader) certificate(path string, t *monitoringv1.WebTLSConfig) (Reload, error) {
	var (
		certPEM, keyPEM []byte
		err             error
	)
	certFile, keyFile := ptr.Deref(t.CertFile, "") != "", ptr.Deref(t.KeyFile, "") != ""
	if !certFile {
		if certPEM, err = r.read(path+".cert", t.Cert); err != nil {
			return Reload{}, err
		}
	}
	if !keyFile {
		if keyPEM, err = r.secret(path+".keySecret", t.KeySecret); err != nil {
			return Reload{}, err
		}
	}
	var pair tls.Certificate
	switch {
	case certFile:
	case keyFile:
		if pair, err = certificateChain(certPEM); err != nil {
			return Reload{}, fmt.Errorf("%s.cert: %w", path, err)
		}
	default:
		if pair, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
			// Its errors tell what is wrong, never the key.
			return Reload{}, fmt.Errorf("%s: cert and keySecret are no certificate and key: %w", path, err)
		}
	}
	var clientCA []byte
	if t.ClientCA != (monitoringv1.SecretOrConfigMap{}) {
		if clientCA, err = r.read(path+".client_ca", t.ClientCA); err != nil {
			return Reload{}, err
		}
		if !x509.NewCertPool().AppendCertsFromPEM(clientCA) {
			return Reload{}, fmt.Errorf("%s.client_ca: holds no PEM certificate", path)
		}
	}
	if certFile {
		return Reload{Unverified: true}, nil
	}
	reload, err := r.reloadVerification(t, pair, clientCA)
	if err != nil {
		return Reload{}, fmt.Errorf("%s.cert: %w", path, err)
	}
	return reload, nil
}

// certificateChain parses the PEM certificates of certPEM, the first the
// server's, without their key.
func certificateChain(certPEM []byte) (tls.Certificate, error) {
	var out tls.Certificate
	for rest := certPEM; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if block.Type == "CERTIFICATE" {
			out.Certificate = append(out.Certificate, block.Bytes)
		}
	}
	if len(out.Certificate) == 0 {
		return tls.Certificate{}, errors.New("holds no PEM certificate")
	}
	leaf, err := x509.ParseCertificate(out.Certificate[0])
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("parse the certificate: %w", err)
	}
	out.Leaf = leaf
	return out, nil
}

// tlsSettings is tls_server_config: the files where the pods mount them
// (those of the pod's, as they are named, as prometheus-operator writes
// them), then the settings, checked as exporter-toolkit reads them.
func tlsSettings(dirs Dirs, path string, t *monitoringv1.WebTLSConfig, reload Reload) (yaml.MapSlice, error) {
	mounted, _ := files(dirs, t, reload)
	paths := map[string]string{}
	for _, f := range mounted {
		paths[f.dir] = f.configPath()
	}
	cfg := yaml.MapSlice{
		{Key: "cert_file", Value: cmp.Or(ptr.Deref(t.CertFile, ""), paths["cert"])},
		{Key: "key_file", Value: cmp.Or(ptr.Deref(t.KeyFile, ""), paths["key"])},
	}
	if t.ClientAuthType != nil && *t.ClientAuthType != "" {
		cfg = append(cfg, yaml.MapItem{Key: "client_auth_type", Value: *t.ClientAuthType})
	}
	if ca := cmp.Or(ptr.Deref(t.ClientCAFile, ""), paths["client_ca"]); ca != "" {
		cfg = append(cfg, yaml.MapItem{Key: "client_ca_file", Value: ca})
	}
	versions := map[string]int{"TLS10": 10, "TLS11": 11, "TLS12": 12, "TLS13": 13}
	for _, v := range []struct {
		field, key string
		v          *string
	}{{"minVersion", "min_version", t.MinVersion}, {"maxVersion", "max_version", t.MaxVersion}} {
		if ptr.Deref(v.v, "") == "" {
			continue
		}
		if _, ok := versions[*v.v]; !ok {
			return nil, fmt.Errorf("%s.%s: unknown TLS version %q (one of TLS10, TLS11, TLS12, TLS13)", path, v.field, *v.v)
		}
		cfg = append(cfg, yaml.MapItem{Key: v.key, Value: *v.v})
	}
	if minV, maxV := ptr.Deref(t.MinVersion, ""), ptr.Deref(t.MaxVersion, ""); minV != "" && maxV != "" && versions[maxV] < versions[minV] {
		return nil, fmt.Errorf("%s: maxVersion %q is lower than minVersion %q", path, maxV, minV)
	}
	if len(t.CipherSuites) > 0 {
		for i, c := range t.CipherSuites {
			if !slices.ContainsFunc(tls.CipherSuites(), func(s *tls.CipherSuite) bool { return s.Name == c }) {
				return nil, fmt.Errorf("%s.cipherSuites[%d]: unknown or insecure cipher suite %q", path, i, c)
			}
		}
		cfg = append(cfg, yaml.MapItem{Key: "cipher_suites", Value: t.CipherSuites})
	}
	if t.PreferServerCipherSuites != nil {
		cfg = append(cfg, yaml.MapItem{Key: "prefer_server_cipher_suites", Value: *t.PreferServerCipherSuites})
	}
	if len(t.CurvePreferences) > 0 {
		for i, c := range t.CurvePreferences {
			if !slices.Contains([]string{"CurveP256", "CurveP384", "CurveP521", "X25519"}, c) {
				return nil, fmt.Errorf("%s.curvePreferences[%d]: unknown curve %q (one of CurveP256, CurveP384, CurveP521, X25519)", path, i, c)
			}
		}
		cfg = append(cfg, yaml.MapItem{Key: "curve_preferences", Value: t.CurvePreferences})
	}
	return cfg, nil
}

// httpServerConfig renders http_server_config, with the header values
// exporter-toolkit accepts (it wants them in lower case).
func httpServerConfig(h *monitoringv1.WebHTTPConfig) (yaml.MapItem, error) {
	cfg := yaml.MapSlice{}
	if h.HTTP2 != nil {
		cfg = append(cfg, yaml.MapItem{Key: "http2", Value: *h.HTTP2})
	}
	if hs := h.Headers; hs != nil {
		headers := yaml.MapSlice{}
		for _, hd := range []struct {
			field, name, value string
			allowed            []string
		}{
			{"contentSecurityPolicy", "Content-Security-Policy", hs.ContentSecurityPolicy, nil},
			{"strictTransportSecurity", "Strict-Transport-Security", hs.StrictTransportSecurity, nil},
			{"xContentTypeOptions", "X-Content-Type-Options", strings.ToLower(hs.XContentTypeOptions), []string{"nosniff"}},
			{"xFrameOptions", "X-Frame-Options", strings.ToLower(hs.XFrameOptions), []string{"deny", "sameorigin"}},
			{"xXSSProtection", "X-XSS-Protection", hs.XXSSProtection, nil},
		} {
			if hd.value == "" {
				continue
			}
			if hd.allowed != nil && !slices.Contains(hd.allowed, hd.value) {
				return yaml.MapItem{}, fmt.Errorf("spec.web.httpConfig.headers.%s: %q is not one of %s", hd.field, hd.value, strings.Join(hd.allowed, ", "))
			}
			headers = append(headers, yaml.MapItem{Key: hd.name, Value: hd.value})
		}
		cfg = append(cfg, yaml.MapItem{Key: "headers", Value: headers})
	}
	return yaml.MapItem{Key: "http_server_config", Value: cfg}, nil
}

// reloadVerification decides how the config-reloader verifies pair's
// certificate at https://localhost: with the first of client_ca, the
// ca.crt key beside the certificate, and the certificate itself that
// verifies it (Go accepts a certificate found among the roots: a
// certificate verifies itself, self-signed or not). A CA is preferred: it
// verifies a renewed certificate even while the kubelet has updated
// Prometheus' volume and not yet the reloader's (which reads its CA file
// at each connection). The name checked is localhost, else
// 127.0.0.1, else the first name of the certificate (a wildcard's * made
// the server's name), else its first IP address.
func (r *reader) reloadVerification(t *monitoringv1.WebTLSConfig, pair tls.Certificate, clientCA []byte) (Reload, error) {
	leaf := pair.Leaf
	var reload Reload
	switch {
	case slices.ContainsFunc(leaf.DNSNames, func(n string) bool { return strings.EqualFold(n, "localhost") }):
	case slices.ContainsFunc(leaf.IPAddresses, func(ip net.IP) bool { return ip.Equal(net.IPv4(127, 0, 0, 1)) }):
		reload.Host = "127.0.0.1"
	case len(leaf.DNSNames) > 0:
		reload.ServerName = leaf.DNSNames[0]
		if i := slices.IndexFunc(leaf.DNSNames, func(n string) bool { return !strings.HasPrefix(n, "*.") }); i >= 0 {
			reload.ServerName = leaf.DNSNames[i]
		} else {
			reload.ServerName = r.name + strings.TrimPrefix(reload.ServerName, "*")
		}
	case len(leaf.IPAddresses) > 0:
		reload.ServerName = leaf.IPAddresses[0].String()
	default:
		return Reload{}, errors.New("the certificate holds no DNS name or IP address (subjectAltName): a client cannot verify it")
	}
	name := cmp.Or(reload.ServerName, reload.Host, "localhost")
	intermediates := x509.NewCertPool()
	for _, der := range pair.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			intermediates.AddCert(c)
		}
	}
	verifies := func(caPEM []byte) error {
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(caPEM) {
			return errors.New("no PEM certificate")
		}
		_, err := leaf.Verify(x509.VerifyOptions{
			DNSName: name, Roots: roots, Intermediates: intermediates,
			// Whether the certificate is valid now is not the question:
			// the same input must render the same objects.
			CurrentTime: leaf.NotBefore.Add(time.Second),
			KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		})
		return err
	}
	if clientCA != nil && verifies(clientCA) == nil {
		reload.CA = &t.ClientCA
		return reload, nil
	}
	if ca, ref := r.caBeside(t.Cert); ca != nil && verifies(ca) == nil {
		reload.CA = ref
		return reload, nil
	}
	if err := verifies(pemCertificates(pair.Certificate[:1])); err != nil {
		return Reload{}, fmt.Errorf("a client cannot verify the certificate, even with itself as CA: %w", err)
	}
	return reload, nil
}

// caBeside returns the ca.crt key of the object that holds the
// certificate at ref, if it has one, and its reference.
func (r *reader) caBeside(ref monitoringv1.SecretOrConfigMap) ([]byte, *monitoringv1.SecretOrConfigMap) {
	switch {
	case ref.Secret != nil && ref.Secret.Key != caKey:
		if s, _ := r.lookup.Peek(store.Ref{Kind: store.Secret, Namespace: r.ns, Name: ref.Secret.Name}).(*corev1.Secret); s != nil && s.Data[caKey] != nil {
			sel := corev1.SecretKeySelector{LocalObjectReference: ref.Secret.LocalObjectReference, Key: caKey}
			return s.Data[caKey], &monitoringv1.SecretOrConfigMap{Secret: &sel}
		}
	case ref.ConfigMap != nil && ref.ConfigMap.Key != caKey:
		if cm, _ := r.lookup.Peek(store.Ref{Kind: store.ConfigMap, Namespace: r.ns, Name: ref.ConfigMap.Name}).(*corev1.ConfigMap); cm != nil && cm.Data[caKey] != "" {
			sel := corev1.ConfigMapKeySelector{LocalObjectReference: ref.ConfigMap.LocalObjectReference, Key: caKey}
			return []byte(cm.Data[caKey]), &monitoringv1.SecretOrConfigMap{ConfigMap: &sel}
		}
	}
	return nil, nil
}

// pemCertificates encodes DER certificates as PEM.
func pemCertificates(ders [][]byte) []byte {
	var b bytes.Buffer
	for _, der := range ders {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: der}) // A bytes.Buffer does not fail.
	}
	return b.Bytes()
}
