package remote

import (
	"fmt"

	yaml "go.yaml.in/yaml/v2"

	"github.com/podreload/podreload/api/v1alpha1"
)

// AlertmanagerClient renders the HTTP client settings of the Alertmanager
// endpoint am at path, as prometheus-operator renders them, with the
// Secrets of the server's namespace, each key for the Prometheus versions
// that have it: client goes before the service discovery (timeout,
// enable_http2 from 2.35, tls_config, the proxy), auth after it
// (bearer_token_file, basic_auth and authorization from 2.26, sigv4 from
// 2.48).
func (r *Renderer) AlertmanagerClient(path string, am *v1alpha1.AlertmanagerEndpoint) (client, auth yaml.MapSlice, err error) {
	ns := r.Namespace
	if am.Timeout != nil {
		if _, err := PositiveDuration(string(*am.Timeout)); err != nil {
			return nil, nil, fmt.Errorf("%s.timeout: %w", path, err)
		}
		client = append(client, yaml.MapItem{Key: "timeout", Value: string(*am.Timeout)})
	}
	if am.EnableHttp2 != nil && r.AtLeast(2, 35) {
		client = append(client, yaml.MapItem{Key: "enable_http2", Value: *am.EnableHttp2})
	}
	if am.TLSConfig != nil {
		tls, err := r.Cred.TLSConfig(ns, path+".tlsConfig", am.TLSConfig)
		if err != nil {
			return nil, nil, err
		}
		client = append(client, tls)
	}
	proxy, err := r.Cred.Proxy(ns, path, &am.ProxyConfig)
	if err != nil {
		return nil, nil, err
	}
	client = append(client, proxy...)

	if err := ExclusiveAuth(path, []string{"basicAuth", "authorization", "bearerTokenFile", "sigv4"},
		am.BasicAuth != nil, am.Authorization != nil, am.BearerTokenFile != "", am.Sigv4 != nil); err != nil {
		return nil, nil, err
	}
	if am.BearerTokenFile != "" {
		auth = append(auth, yaml.MapItem{Key: "bearer_token_file", Value: am.BearerTokenFile})
	}
	if am.BasicAuth != nil {
		ba, err := r.Cred.BasicAuth(ns, path+".basicAuth", am.BasicAuth)
		if err != nil {
			return nil, nil, err
		}
		if r.AtLeast(2, 26) {
			auth = append(auth, ba)
		}
	}
	if am.Authorization != nil {
		a, err := r.Cred.Authorization(ns, path+".authorization", am.Authorization, false)
		if err != nil {
			return nil, nil, err
		}
		if r.AtLeast(2, 26) {
			auth = append(auth, a)
		}
	}
	if am.Sigv4 != nil {
		sigv4, err := r.sigv4(path+".sigv4", am.Sigv4)
		if err != nil {
			return nil, nil, err
		}
		if r.AtLeast(2, 48) {
			auth = append(auth, sigv4)
		}
	}
	return client, auth, nil
}
