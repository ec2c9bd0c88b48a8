package amconfig

import (
	"context"
	"fmt"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	commoncfg "github.com/prometheus/common/config"
	corev1 "k8s.io/api/core/v1"
)

// refs reads the values an object of one namespace references.
type refs struct {
	ctx       context.Context
	resolver  Resolver
	namespace string
}

// secret returns the value of a key of a Secret; the error names both.
func (r refs) secret(sel corev1.SecretKeySelector) (string, error) {
	if r.resolver == nil {
		return "", fmt.Errorf("secret %s/%s: no resolver", r.namespace, sel.Name)
	}
	b, err := r.resolver.Secret(r.ctx, r.namespace, sel)
	if err != nil {
		return "", fmt.Errorf("key %q of secret %s/%s: %w", sel.Key, r.namespace, sel.Name, err)
	}
	return string(b), nil
}

// optionalSecret is secret for an optional reference: "" when sel is nil.
func (r refs) optionalSecret(sel *corev1.SecretKeySelector) (string, error) {
	if sel == nil {
		return "", nil
	}
	return r.secret(*sel)
}

// configMap returns the value of a key of a ConfigMap; the error names
// both.
func (r refs) configMap(sel corev1.ConfigMapKeySelector) (string, error) {
	if r.resolver == nil {
		return "", fmt.Errorf("configmap %s/%s: no resolver", r.namespace, sel.Name)
	}
	b, err := r.resolver.ConfigMap(r.ctx, r.namespace, sel)
	if err != nil {
		return "", fmt.Errorf("key %q of configmap %s/%s: %w", sel.Key, r.namespace, sel.Name, err)
	}
	return string(b), nil
}

// secretOrConfigMap returns the value s references, "" when it references
// nothing.
func (r refs) secretOrConfigMap(s monitoringv1.SecretOrConfigMap) (string, error) {
	switch {
	case s.Secret != nil:
		return r.secret(*s.Secret)
	case s.ConfigMap != nil:
		return r.configMap(*s.ConfigMap)
	}
	return "", nil
}

// url returns the URL a Secret holds, trimmed, as prometheus-operator
// reads it.
func (r refs) url(sel corev1.SecretKeySelector) (string, error) {
	u, err := r.secret(sel)
	return strings.TrimSpace(u), err
}

// httpConfig is Alertmanager's http_config (prometheus/common's HTTP
// client configuration).
type httpConfig struct {
	Authorization   *authorization `yaml:"authorization,omitempty"`
	BasicAuth       *basicAuth     `yaml:"basic_auth,omitempty"`
	OAuth2          *oauth2        `yaml:"oauth2,omitempty"`
	BearerToken     string         `yaml:"bearer_token,omitempty"`
	TLSConfig       *tlsConfig     `yaml:"tls_config,omitempty"`
	FollowRedirects *bool          `yaml:"follow_redirects,omitempty"`
	EnableHTTP2     *bool          `yaml:"enable_http2,omitempty"`
	proxy           `yaml:",inline"`
}

type authorization struct {
	Type        string `yaml:"type,omitempty"`
	Credentials string `yaml:"credentials,omitempty"`
}

type basicAuth struct {
	Username string `yaml:"username,omitempty"`
	Password string `yaml:"password,omitempty"`
}

type oauth2 struct {
	ClientID       string            `yaml:"client_id"`
	ClientSecret   string            `yaml:"client_secret"`
	Scopes         []string          `yaml:"scopes,omitempty"`
	TokenURL       string            `yaml:"token_url"`
	EndpointParams map[string]string `yaml:"endpoint_params,omitempty"`
	TLSConfig      *tlsConfig        `yaml:"tls_config,omitempty"`
	proxy          `yaml:",inline"`
}

type proxy struct {
	ProxyURL             string              `yaml:"proxy_url,omitempty"`
	NoProxy              string              `yaml:"no_proxy,omitempty"`
	ProxyFromEnvironment bool                `yaml:"proxy_from_environment,omitempty"`
	ProxyConnectHeader   map[string][]string `yaml:"proxy_connect_header,omitempty"`
}

// tlsConfig is prometheus/common's TLS configuration with the contents of
// the CA, certificate and key inline, where prometheus-operator names the
// files of its tls-assets Secret.
type tlsConfig struct {
	CA                 string `yaml:"ca,omitempty"`
	Cert               string `yaml:"cert,omitempty"`
	Key                string `yaml:"key,omitempty"`
	ServerName         string `yaml:"server_name,omitempty"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify,omitempty"`
	MinVersion         string `yaml:"min_version,omitempty"`
	MaxVersion         string `yaml:"max_version,omitempty"`
}

// httpConfig converts an HTTP configuration as prometheus-operator does:
// basic auth and authorization only when their values are not empty,
// proxyURL before proxyUrl.
func (r refs) httpConfig(in *monitoringv1alpha1.HTTPConfig) (*httpConfig, error) {
	if in == nil {
		return nil, nil
	}
	p, err := r.proxy(in.ProxyConfig)
	if err != nil {
		return nil, err
	}
	if in.ProxyURLOriginal != nil && *in.ProxyURLOriginal != "" {
		p.ProxyURL = *in.ProxyURLOriginal
	}
	out := &httpConfig{proxy: p, FollowRedirects: in.FollowRedirects, EnableHTTP2: in.EnableHTTP2}
	if in.BasicAuth != nil {
		user, err := r.secret(in.BasicAuth.Username)
		if err != nil {
			return nil, fmt.Errorf("basic auth username: %w", err)
		}
		password, err := r.secret(in.BasicAuth.Password)
		if err != nil {
			return nil, fmt.Errorf("basic auth password: %w", err)
		}
		if user != "" || password != "" {
			out.BasicAuth = &basicAuth{Username: user, Password: password}
		}
	}
	if in.Authorization != nil && in.Authorization.Credentials != nil {
		credentials, err := r.secret(*in.Authorization.Credentials)
		if err != nil {
			return nil, fmt.Errorf("authorization credentials: %w", err)
		}
		if credentials != "" {
			t := in.Authorization.Type
			if t == "" {
				t = "Bearer"
			}
			out.Authorization = &authorization{Type: t, Credentials: credentials}
		}
	}
	if in.TLSConfig != nil {
		if out.TLSConfig, err = r.tlsConfig(in.TLSConfig); err != nil {
			return nil, err
		}
	}
	// Deprecated, still honoured as prometheus-operator honours it.
	if out.BearerToken, err = r.optionalSecret(in.BearerTokenSecret); err != nil {
		return nil, fmt.Errorf("bearer token: %w", err)
	}
	if in.OAuth2 != nil {
		if out.OAuth2, err = r.oauth2(in.OAuth2); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// oauth2 converts an OAuth2 configuration. Unlike prometheus-operator,
// which drops it, its TLS configuration is written.
func (r refs) oauth2(in *monitoringv1.OAuth2) (*oauth2, error) {
	id, err := r.secretOrConfigMap(in.ClientID)
	if err != nil {
		return nil, fmt.Errorf("oauth2 client id: %w", err)
	}
	secret, err := r.secret(in.ClientSecret)
	if err != nil {
		return nil, fmt.Errorf("oauth2 client secret: %w", err)
	}
	p, err := r.proxy(in.ProxyConfig)
	if err != nil {
		return nil, err
	}
	out := &oauth2{
		ClientID: id, ClientSecret: secret, Scopes: in.Scopes, TokenURL: string(in.TokenURL),
		EndpointParams: in.EndpointParams, proxy: p,
	}
	if in.TLSConfig != nil {
		if out.TLSConfig, err = r.tlsConfig(in.TLSConfig); err != nil {
			return nil, fmt.Errorf("oauth2: %w", err)
		}
	}
	return out, nil
}

// tlsConfig converts a TLS configuration, its CA, certificate and key
// inline.
func (r refs) tlsConfig(in *monitoringv1.SafeTLSConfig) (*tlsConfig, error) {
	out := &tlsConfig{}
	var err error
	if out.CA, err = r.secretOrConfigMap(in.CA); err != nil {
		return nil, fmt.Errorf("tls ca: %w", err)
	}
	if out.Cert, err = r.secretOrConfigMap(in.Cert); err != nil {
		return nil, fmt.Errorf("tls cert: %w", err)
	}
	if out.Key, err = r.optionalSecret(in.KeySecret); err != nil {
		return nil, fmt.Errorf("tls key: %w", err)
	}
	if in.ServerName != nil {
		out.ServerName = *in.ServerName
	}
	if in.InsecureSkipVerify != nil {
		out.InsecureSkipVerify = *in.InsecureSkipVerify
	}
	if in.MinVersion != nil {
		out.MinVersion = string(*in.MinVersion)
	}
	if in.MaxVersion != nil {
		out.MaxVersion = string(*in.MaxVersion)
	}
	// Alertmanager reads the CA, certificate and key when it builds a
	// receiver, after its parser: a reload would fail on them. Read them
	// here, as prometheus-operator does.
	if _, err := commoncfg.NewTLSConfig(&commoncfg.TLSConfig{CA: out.CA, Cert: out.Cert, Key: commoncfg.Secret(out.Key)}); err != nil {
		return nil, fmt.Errorf("tls config: %w", err)
	}
	return out, nil
}

// proxy converts a proxy configuration, the connect headers' values read
// from their Secrets.
func (r refs) proxy(in monitoringv1.ProxyConfig) (proxy, error) {
	out := proxy{}
	if in.ProxyURL != nil {
		out.ProxyURL = *in.ProxyURL
	}
	if in.NoProxy != nil {
		out.NoProxy = *in.NoProxy
	}
	if in.ProxyFromEnvironment != nil {
		out.ProxyFromEnvironment = *in.ProxyFromEnvironment
	}
	if len(in.ProxyConnectHeader) > 0 {
		out.ProxyConnectHeader = make(map[string][]string, len(in.ProxyConnectHeader))
		for k, sels := range in.ProxyConnectHeader {
			values := []string{}
			for _, sel := range sels {
				v, err := r.secret(sel)
				if err != nil {
					return out, fmt.Errorf("proxy connect header %s: %w", k, err)
				}
				values = append(values, v)
			}
			out.ProxyConnectHeader[k] = values
		}
	}
	return out, nil
}
