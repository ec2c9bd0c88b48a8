package credential

import (
	"errors"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	yaml "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
)

// secrets is a Lookup of the Secrets' keys it holds, by namespace/name/key.
type secrets map[string]string

func (s secrets) Secret(ns string, sel corev1.SecretKeySelector) ([]byte, error) {
	v, ok := s[ns+"/"+sel.Name+"/"+sel.Key]
	if !ok {
		return nil, errors.New("no such key")
	}
	return []byte(v), nil
}

func (s secrets) ConfigMap(string, corev1.ConfigMapKeySelector) ([]byte, error) {
	return nil, errors.New("no configmaps")
}

func sel(name, key string) corev1.SecretKeySelector {
	return corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
}

func TestBasicAuth(t *testing.T) {
	r := Reader{Lookup: secrets{"ns/auth/user": "u", "ns/auth/pass": "p", "ns/bin/user": "\xff"}}
	item, err := r.BasicAuth("ns", "spec.basicAuth", &monitoringv1.BasicAuth{Username: sel("auth", "user"), Password: sel("auth", "pass")})
	require.NoError(t, err)
	require.Equal(t, yaml.MapItem{Key: "basic_auth", Value: yaml.MapSlice{{Key: "username", Value: "u"}, {Key: "password", Value: "p"}}}, item)

	_, err = r.BasicAuth("ns", "spec.basicAuth", &monitoringv1.BasicAuth{Username: sel("bin", "user")})
	require.EqualError(t, err, `spec.basicAuth: secret "ns/bin": the value of key "user" is not UTF-8 text`)
	_, err = r.BasicAuth("ns", "spec.basicAuth", &monitoringv1.BasicAuth{Username: sel("gone", "user")})
	require.EqualError(t, err, "spec.basicAuth: no such key")
}

func TestAuthorization(t *testing.T) {
	r := Reader{Lookup: secrets{}}
	_, err := r.Authorization("ns", "spec.authorization", &monitoringv1.SafeAuthorization{Type: "Basic"}, false)
	require.EqualError(t, err, `spec.authorization.type: "Basic" is not allowed, use basicAuth`)
	_, err = r.Authorization("ns", "spec.authorization", &monitoringv1.SafeAuthorization{}, false)
	require.EqualError(t, err, "spec.authorization.credentials: must be set")
	item, err := r.Authorization("ns", "spec.authorization", &monitoringv1.SafeAuthorization{}, true)
	require.NoError(t, err)
	require.Equal(t, yaml.MapItem{Key: "authorization", Value: yaml.MapSlice{{Key: "type", Value: "Bearer"}}}, item)
}

func TestCheckAuthMethods(t *testing.T) {
	h := &monitoringv1.HTTPConfigWithoutTLS{BasicAuth: &monitoringv1.BasicAuth{}, OAuth2: &monitoringv1.OAuth2{}}
	require.EqualError(t, CheckAuthMethods(h, "/token"), "basicAuth, oauth2 and bearerTokenFile are mutually exclusive")
	require.NoError(t, CheckAuthMethods(&monitoringv1.HTTPConfigWithoutTLS{OAuth2: &monitoringv1.OAuth2{}}, ""))
}

// The URLs' errors and shown forms leave out what may be a secret.
func TestURLs(t *testing.T) {
	_, err := ParseURL("http://user:secret@host:port/")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "secret")

	u, err := ParseURL("https://user:secret@host/path?token=t#frag")
	require.NoError(t, err)
	require.Equal(t, "https://user:xxxxx@host/path", ShownURL(u))

	require.EqualError(t, CheckProxyURL("ftp://user:secret@proxy"), `"ftp://user:xxxxx@proxy" is not an http, https or socks5 URL`)
	require.NoError(t, CheckProxyURL("socks5://proxy:1080"))
}

func TestProxy(t *testing.T) {
	r := Reader{Lookup: secrets{}}
	url, fromEnv := "http://proxy:3128", true
	_, err := r.Proxy("ns", "spec", &monitoringv1.ProxyConfig{ProxyURL: &url, ProxyFromEnvironment: &fromEnv})
	require.EqualError(t, err, "spec: proxyUrl and proxyFromEnvironment are mutually exclusive")
	noProxy := "localhost"
	_, err = r.Proxy("", "", &monitoringv1.ProxyConfig{NoProxy: &noProxy})
	require.EqualError(t, err, "noProxy: requires proxyUrl")
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
