// Package credential renders the credentials of a Prometheus
// configuration's HTTP clients from prometheus-operator's types, as its
// generator writes them: basic auth, authorization, OAuth2, TLS and proxy
// settings, with the values of Secrets and ConfigMaps written inline. The
// scrape jobs, the Alertmanager endpoints and the remote writes of package
// promcfg share them. It is pure: it reads Secrets and ConfigMaps through
// the Lookup it is given.
//
// Its functions take the path of their field, and return errors that
// start with it.
package credential

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/podreload/podreload/controller/promyaml"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	yaml "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
)

// Lookup reads the value of a key of a Secret or a ConfigMap; its errors
// name the object and the key.
type Lookup interface {
	// Secret returns the value of the key sel names in the Secret sel
	// names in namespace.
	Secret(namespace string, sel corev1.SecretKeySelector) ([]byte, error)
	// ConfigMap returns the value of the key sel names in the ConfigMap
	// sel names in namespace.
	ConfigMap(namespace string, sel corev1.ConfigMapKeySelector) ([]byte, error)
}

// Reader renders credentials with the values Lookup reads.
type Reader struct {
	// Lookup reads the Secrets and ConfigMaps the credentials reference.
	Lookup Lookup
}

// CheckAuthMethods rejects endpoints that set more than one way to
// authenticate, which Prometheus refuses.
func CheckAuthMethods(h *monitoringv1.HTTPConfigWithoutTLS, bearerTokenFile string) error {
	var set []string
	if h.Authorization != nil {
		set = append(set, "authorization")
	}
	if h.BasicAuth != nil {
		set = append(set, "basicAuth")
	}
	if h.OAuth2 != nil {
		set = append(set, "oauth2")
	}
	if h.BearerTokenSecret != nil {
		set = append(set, "bearerTokenSecret")
	}
	if bearerTokenFile != "" {
		set = append(set, "bearerTokenFile")
	}
	if len(set) > 1 {
		return fmt.Errorf("%s and %s are mutually exclusive", strings.Join(set[:len(set)-1], ", "), set[len(set)-1])
	}
	return nil
}

// Secret returns the value of a key of a Secret in namespace ns, text.
func (r Reader) Secret(ns string, sel corev1.SecretKeySelector) (string, error) {
	if sel.Name == "" {
		return "", errors.New("secret name is empty")
	}
	v, err := r.Lookup.Secret(ns, sel)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(v) {
		return "", fmt.Errorf("secret %q: the value of key %q is not UTF-8 text", ns+"/"+sel.Name, sel.Key)
	}
	return string(v), nil
}

// SecretOrConfigMap returns the value of the key ref names, in a Secret
// or, as prometheus-operator allows for CAs, certificates and OAuth2
// client ids, a ConfigMap (written inline, as Secrets' values are).
func (r Reader) SecretOrConfigMap(ns string, ref monitoringv1.SecretOrConfigMap) (string, error) {
	if ref.Secret != nil {
		return r.Secret(ns, *ref.Secret)
	}
	if ref.ConfigMap.Name == "" {
		return "", errors.New("configmap name is empty")
	}
	v, err := r.Lookup.ConfigMap(ns, *ref.ConfigMap)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(v) {
		return "", fmt.Errorf("configmap %q: the value of key %q is not UTF-8 text", ns+"/"+ref.ConfigMap.Name, ref.ConfigMap.Key)
	}
	return string(v), nil
}

// RefName names the object and key ref names, for messages.
func RefName(ns string, ref monitoringv1.SecretOrConfigMap) string {
	if ref.Secret != nil {
		return fmt.Sprintf("key %q of secret %q", ref.Secret.Key, ns+"/"+ref.Secret.Name)
	}
	return fmt.Sprintf("key %q of configmap %q", ref.ConfigMap.Key, ns+"/"+ref.ConfigMap.Name)
}

// BasicAuth renders basic_auth, the username and the password read from
// their Secrets.
func (r Reader) BasicAuth(ns, path string, ba *monitoringv1.BasicAuth) (yaml.MapItem, error) {
	user, err := r.Secret(ns, ba.Username)
	if err != nil {
		return yaml.MapItem{}, fmt.Errorf("%s: %w", path, err)
	}
	auth := yaml.MapSlice{{Key: "username", Value: user}}
	// Prometheus allows a username without a password.
	if ba.Password != (corev1.SecretKeySelector{}) {
		pass, err := r.Secret(ns, ba.Password)
		if err != nil {
			return yaml.MapItem{}, fmt.Errorf("%s: %w", path, err)
		}
		auth = append(auth, yaml.MapItem{Key: "password", Value: pass})
	}
	return yaml.MapItem{Key: "basic_auth", Value: auth}, nil
}

// Authorization renders an Authorization header; fromFile says that the
// credentials come from a file (remote write only).
func (r Reader) Authorization(ns, path string, a *monitoringv1.SafeAuthorization, fromFile bool) (yaml.MapItem, error) {
	typ := strings.TrimSpace(a.Type)
	if typ == "" {
		typ = "Bearer"
	}
	if strings.EqualFold(typ, "basic") {
		return yaml.MapItem{}, fmt.Errorf("%s.type: %q is not allowed, use basicAuth", path, a.Type)
	}
	auth := yaml.MapSlice{{Key: "type", Value: typ}}
	switch {
	case a.Credentials != nil:
		v, err := r.Secret(ns, *a.Credentials)
		if err != nil {
			return yaml.MapItem{}, fmt.Errorf("%s: %w", path, err)
		}
		auth = append(auth, yaml.MapItem{Key: "credentials", Value: v})
	case !fromFile:
		return yaml.MapItem{}, fmt.Errorf("%s.credentials: must be set", path)
	}
	return yaml.MapItem{Key: "authorization", Value: auth}, nil
}

// OAuth2 renders oauth2, the client id and secret read from their Secret
// or ConfigMap.
func (r Reader) OAuth2(ns, path string, o *monitoringv1.OAuth2) (yaml.MapItem, error) {
	var id string
	switch {
	case o.ClientID.Secret == nil && o.ClientID.ConfigMap == nil:
		return yaml.MapItem{}, fmt.Errorf("%s.clientId: must be set", path)
	default:
		v, err := r.SecretOrConfigMap(ns, o.ClientID)
		if err != nil {
			return yaml.MapItem{}, fmt.Errorf("%s.clientId: %w", path, err)
		}
		id = v
	}
	secret, err := r.Secret(ns, o.ClientSecret)
	if err != nil {
		return yaml.MapItem{}, fmt.Errorf("%s.clientSecret: %w", path, err)
	}
	if o.TokenURL == "" {
		return yaml.MapItem{}, fmt.Errorf("%s.tokenUrl: must be set", path)
	}
	cfg := yaml.MapSlice{
		{Key: "client_id", Value: id},
		{Key: "client_secret", Value: secret},
		{Key: "token_url", Value: string(o.TokenURL)},
	}
	if len(o.Scopes) > 0 {
		cfg = append(cfg, yaml.MapItem{Key: "scopes", Value: o.Scopes})
	}
	if len(o.EndpointParams) > 0 {
		cfg = append(cfg, yaml.MapItem{Key: "endpoint_params", Value: promyaml.SortedMap(o.EndpointParams)})
	}
	proxy, err := r.Proxy(ns, path, &o.ProxyConfig)
	if err != nil {
		return yaml.MapItem{}, err
	}
	cfg = append(cfg, proxy...)
	if o.TLSConfig != nil {
		item, err := r.TLSConfig(ns, path+".tlsConfig", &monitoringv1.TLSConfig{SafeTLSConfig: *o.TLSConfig})
		if err != nil {
			return yaml.MapItem{}, err
		}
		cfg = append(cfg, item)
	}
	return yaml.MapItem{Key: "oauth2", Value: cfg}, nil
}

// TLSConfig renders a tls_config; CAs, certificates and keys from Secrets
// are written inline.
func (r Reader) TLSConfig(ns, path string, t *monitoringv1.TLSConfig) (yaml.MapItem, error) {
	cfg := yaml.MapSlice{}
	if t.InsecureSkipVerify != nil {
		cfg = append(cfg, yaml.MapItem{Key: "insecure_skip_verify", Value: *t.InsecureSkipVerify})
	}
	for _, f := range []struct {
		field, key, fileField, fileKey, file string
		ref                                  monitoringv1.SecretOrConfigMap
	}{
		{"ca", "ca", "caFile", "ca_file", t.CAFile, t.CA},
		{"cert", "cert", "certFile", "cert_file", t.CertFile, t.Cert},
		{"keySecret", "key", "keyFile", "key_file", t.KeyFile, monitoringv1.SecretOrConfigMap{Secret: t.KeySecret}},
	} {
		set := f.ref.Secret != nil || f.ref.ConfigMap != nil
		switch {
		case set && f.file != "":
			return yaml.MapItem{}, fmt.Errorf("%s: %s and %s are mutually exclusive", path, f.field, f.fileField)
		case set:
			v, err := r.SecretOrConfigMap(ns, f.ref)
			if err != nil {
				return yaml.MapItem{}, fmt.Errorf("%s.%s: %w", path, f.field, err)
			}
			// Prometheus refuses the whole configuration when a CA holds
			// no certificate it can use: only this monitor is left out.
			if f.key == "ca" && !x509.NewCertPool().AppendCertsFromPEM([]byte(v)) {
				return yaml.MapItem{}, fmt.Errorf("%s.%s: %s holds no PEM certificate", path, f.field, RefName(ns, f.ref))
			}
			cfg = append(cfg, yaml.MapItem{Key: f.key, Value: v})
		case f.file != "":
			cfg = append(cfg, yaml.MapItem{Key: f.fileKey, Value: f.file})
		}
	}
	hasCert := t.Cert.Secret != nil || t.Cert.ConfigMap != nil || t.CertFile != ""
	hasKey := t.KeySecret != nil || t.KeyFile != ""
	if hasCert != hasKey {
		return yaml.MapItem{}, fmt.Errorf("%s: a client certificate and its key must be set together", path)
	}
	if t.ServerName != nil && *t.ServerName != "" {
		cfg = append(cfg, yaml.MapItem{Key: "server_name", Value: *t.ServerName})
	}
	for _, v := range []struct {
		field, key string
		v          *monitoringv1.TLSVersion
	}{
		{"minVersion", "min_version", t.MinVersion},
		{"maxVersion", "max_version", t.MaxVersion},
	} {
		if v.v == nil {
			continue
		}
		switch *v.v {
		case monitoringv1.TLSVersion10, monitoringv1.TLSVersion11, monitoringv1.TLSVersion12, monitoringv1.TLSVersion13:
		default:
			return yaml.MapItem{}, fmt.Errorf("%s.%s: unknown TLS version %q", path, v.field, *v.v)
		}
		cfg = append(cfg, yaml.MapItem{Key: v.key, Value: string(*v.v)})
	}
	// The names of the versions sort in their order.
	if t.MinVersion != nil && t.MaxVersion != nil && *t.MaxVersion < *t.MinVersion {
		return yaml.MapItem{}, fmt.Errorf("%s: maxVersion %q is lower than minVersion %q", path, *t.MaxVersion, *t.MinVersion)
	}
	return yaml.MapItem{Key: "tls_config", Value: cfg}, nil
}

// Proxy renders the proxy settings of the object at path, with the
// headers of CONNECT requests read from Secrets.
func (r Reader) Proxy(ns, path string, p *monitoringv1.ProxyConfig) (yaml.MapSlice, error) {
	hasURL := p.ProxyURL != nil && *p.ProxyURL != ""
	noProxy := p.NoProxy != nil && *p.NoProxy != ""
	fromEnv := p.ProxyFromEnvironment != nil && *p.ProxyFromEnvironment
	switch {
	case hasURL && fromEnv:
		return nil, AtPath(path, errors.New("proxyUrl and proxyFromEnvironment are mutually exclusive"))
	case noProxy && !hasURL:
		return nil, fmt.Errorf("%s: requires proxyUrl", FieldPath(path, "noProxy"))
	case len(p.ProxyConnectHeader) > 0 && !hasURL && !fromEnv:
		return nil, fmt.Errorf("%s: requires proxyUrl or proxyFromEnvironment", FieldPath(path, "proxyConnectHeader"))
	}
	var cfg yaml.MapSlice
	if hasURL {
		if err := CheckProxyURL(*p.ProxyURL); err != nil {
			return nil, fmt.Errorf("%s: %w", FieldPath(path, "proxyUrl"), err)
		}
		cfg = append(cfg, yaml.MapItem{Key: "proxy_url", Value: *p.ProxyURL})
	}
	if noProxy {
		cfg = append(cfg, yaml.MapItem{Key: "no_proxy", Value: *p.NoProxy})
	}
	if p.ProxyFromEnvironment != nil {
		cfg = append(cfg, yaml.MapItem{Key: "proxy_from_environment", Value: *p.ProxyFromEnvironment})
	}
	if len(p.ProxyConnectHeader) > 0 {
		names := make([]string, 0, len(p.ProxyConnectHeader))
		for k := range p.ProxyConnectHeader {
			names = append(names, k)
		}
		sort.Strings(names)
		headers := make(yaml.MapSlice, 0, len(names))
		for _, k := range names {
			sels := p.ProxyConnectHeader[k]
			if len(sels) == 0 {
				return nil, fmt.Errorf("%s[%s]: no value", FieldPath(path, "proxyConnectHeader"), k)
			}
			vals := make([]string, len(sels))
			for i, sel := range sels {
				v, err := r.Secret(ns, sel)
				if err != nil {
					return nil, fmt.Errorf("%s[%s][%d]: %w", FieldPath(path, "proxyConnectHeader"), k, i, err)
				}
				vals[i] = v
			}
			headers = append(headers, yaml.MapItem{Key: k, Value: vals})
		}
		cfg = append(cfg, yaml.MapItem{Key: "proxy_connect_header", Value: headers})
	}
	return cfg, nil
}

// CheckProxyURL checks that s is a URL Prometheus takes as a proxy.
func CheckProxyURL(s string) error {
	u, err := ParseURL(s)
	if err != nil {
		return err
	}
	switch u.Scheme {
	case "http", "https", "socks5":
		return nil
	}
	return fmt.Errorf("%q is not an http, https or socks5 URL", ShownURL(u))
}

// ParseURL parses s; its error says why without quoting s, which may hold
// a password or a token: errors end up in logs, Events and the status.
func ParseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		return nil, fmt.Errorf("not a URL: %w", ue.Err)
	}
	return u, err
}

// ShownURL is u fit for logs, Events and the status: its password hidden
// and its query and fragment, where tokens go, left out.
func ShownURL(u *url.URL) string {
	c := *u
	c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = "", false, "", ""
	return c.Redacted()
}

// FieldPath is the path of the field name of the object at path, "" for a
// spec's own fields.
func FieldPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// AtPath prefixes err with path, when there is one.
func AtPath(path string, err error) error {
	if path == "" {
		return err
	}
	return fmt.Errorf("%s: %w", path, err)
}
